//! Attention keys and values read as they are stored, used by
//! `tcc-fold-attention-casts`.
//!
//! A graph exported in half precision and compiled at its own precision
//! computes in f32 with 16-bit storage, so a half input feeding the
//! attention (a decoder's key/value cache, `past_key_values`) arrives
//! through a widening cast: after bufferization, a kernel that copies the
//! whole cache into an f32-typed buffer (stored in 16 bits again) before
//! every attention. The flash-attention kernel widens every element it
//! loads anyway, so it can read the half buffer itself: GPT-2 small's
//! one-token decode step copied its 256-position cache twice a layer
//! (24 kernels of 4-8 us a step on an H200). The key or value operand
//! becomes the cast's source, and the copy and its buffer go away.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::r#type::{MemRefType, ShapedTypeLike, TypeLike};
use melior::ir::{BlockLike, RegionLike, Value, ValueLike};

use super::fold_attention_transposes::{
    between, droppable, erase_allocation, last_access_before, lone_op, operand_uses, root_of,
    set_operand, touches, unit,
};
use crate::ir::affine::{IteratorType, indexing_maps, iterator_types};
use crate::ir::error::PassError;
use crate::ir::util::{erase_op, op_name};

/// The element types a key or value may be widened from.
fn half_type(element: melior::ir::Type) -> bool {
    element.is_f16() || element.is_bf16()
}

/// The widening cast `unit` (an op of the function body) runs as a kernel
/// by itself, if it does: an elementwise `linalg.generic` of identity maps
/// reading one 16-bit buffer and writing an f32 one through a lone
/// `arith.extf`. Returns the generic.
fn lone_widening_cast<'c>(unit: OperationRef<'c, 'c>) -> Option<OperationRef<'c, 'c>> {
    let cast = lone_op(unit)?;
    if op_name(&cast) != "linalg.generic" || cast.operand_count() != 2 {
        return None;
    }
    let maps = indexing_maps(cast)?;
    let parallel = iterator_types(cast)?
        .iter()
        .all(|t| *t == IteratorType::Parallel);
    if !parallel || maps.len() != 2 || !maps.iter().all(|m| m.is_identity()) {
        return None;
    }
    let (source, destination) = (cast.operand(0).ok()?, cast.operand(1).ok()?);
    let element_is = |v: Value<'c, 'c>, wanted: fn(melior::ir::Type<'c>) -> bool| {
        MemRefType::try_from(v.r#type()).is_ok_and(|t| wanted(t.element()))
    };
    if !element_is(source, half_type) || !element_is(destination, |e| e.is_f32()) {
        return None;
    }
    // The body: %w = arith.extf %in; linalg.yield %w.
    let block = cast.region(0).ok()?.first_block()?;
    let extf = block.first_operation()?;
    let yield_op = extf.next_in_block()?;
    let input: Value = block.argument(0).ok()?.into();
    let widened: Value = extf.result(0).ok()?.into();
    (op_name(&extf) == "arith.extf"
        && extf.operand(0).ok() == Some(input)
        && op_name(&yield_op) == "linalg.yield"
        && yield_op.operand(0).ok() == Some(widened)
        && yield_op.next_in_block().is_none())
    .then_some(cast)
}

/// Folds the widening casts feeding `attention`'s key and value where that
/// is safe. Returns how many it folded.
pub fn fold_attention_casts<'c>(attention: OperationRef<'c, 'c>) -> Result<usize, PassError<'c>> {
    if op_name(&attention) != "tcc.flash_attention" || attention.result_count() != 0 {
        return Ok(0);
    }
    let mut folded = 0;
    for index in [1, 2] {
        if fold_input(attention, index) {
            folded += 1;
        }
    }
    Ok(folded)
}

/// Key or value `index`: `extf(%source) -> %copy` then `attention(%copy)`
/// becomes `attention(%source)`.
fn fold_input<'c>(attention: OperationRef<'c, 'c>, index: usize) -> bool {
    let Ok(copy) = attention.operand(index) else {
        return false;
    };
    let attention_unit = unit(attention);
    // The last op before the attention touching the buffer: the copy.
    let Some(cast_unit) = last_access_before(attention_unit, root_of(copy)) else {
        return false;
    };
    let Some(cast) = lone_widening_cast(cast_unit) else {
        return false;
    };
    if cast.operand(1).ok() != Some(copy)
        || !droppable(copy, cast_unit, attention_unit)
        || operand_uses(attention, copy) != 1
    {
        return false;
    }
    let Ok(source) = cast.operand(0) else {
        return false;
    };
    // Nothing between the copy and the attention may write the source.
    let root = root_of(source);
    let Some(ops) = between(cast_unit, attention_unit) else {
        return false;
    };
    if ops.iter().any(|op| touches(*op, root, true)) {
        return false;
    }
    set_operand(attention, index, source);
    erase_op(cast_unit);
    erase_allocation(copy);
    true
}
