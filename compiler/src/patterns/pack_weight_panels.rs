//! Packing a convolution's constant filter into panels of output channels
//! (`ir::filter_panels`): the rewrite `tcc-pack-weight-panels` applies.
//!
//! The register-blocked GEMM (CPUs) walks K once per block of C and loads
//! the block's columns of B at every k. Read as stored (HWCF: `K x N`,
//! rows of N), each k step starts a new row N floats on, so a long K walks
//! thousands of rows with a power-of-two stride: the cache sets and the
//! prefetcher suffer. In panels (`[N/P][K][P]`) a block's columns follow
//! each other in k, and the loop reads B in order. The filter is a
//! constant, so the packing is done once, here, at compile time.

use melior::Context;
use melior::ir::attribute::ArrayAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{Attribute, Value, ValueLike};

use crate::ir::constant::ConstTensor;
use crate::ir::element_type::ElementType;
use crate::ir::error::PassError;
use crate::ir::filter_panels::{HWCF_MAP_TEXT, operand_map_text, panel_map_text};
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, erase_op, op_name, use_count};

/// Gives a named `linalg.conv_2d_nhwc_hwcf` with a constant filter the
/// generic form of `tcc-fold-conv-inputs` (loads reading its input as it
/// is), keeping its kernel attributes, so that its filter can take the
/// panel layout. Returns the generic, or `op` itself when it
/// is not such a convolution.
fn as_generic<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<OperationRef<'c, 'c>, PassError<'c>> {
    let Some(plan) = crate::patterns::fold_conv_inputs::plain_conv_plan(op) else {
        return Ok(op);
    };
    let filter_ok = op.operand(1).is_ok_and(|filter| {
        ConstTensor::is_constant(filter)
            && StaticTensor::of(filter.r#type()).is_some_and(|t| t.shape.len() == 4)
    });
    if !filter_ok {
        return Ok(op);
    }
    let error = |message: String| PassError::at(op.location(), message);
    let replacement = crate::patterns::fold_conv_inputs::rewrite(context, &plan)?;
    let generic = defining_op(replacement).ok_or_else(|| error("the rewrite made no op".into()))?;
    let mut generic_mut = unsafe { OperationRefMut::from_raw(generic.to_raw()) };
    // The kernel's name, kind and strategy (tcc-form-dispatches,
    // tcc-configure-kernels); the rewrite set the generic's own.
    for (name, value) in crate::ir::util::discardable_attributes(op, "tcc.") {
        if generic.attribute(&name).is_err() {
            generic_mut.set_discardable_attribute(&name, value);
        }
    }
    let old: Value = op.result(0).map_err(|e| error(e.to_string()))?.into();
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), replacement.to_raw()) };
    erase_op(op);
    Ok(generic)
}

/// Whether `op` is a 2-D convolution generic (`tcc-fold-conv-inputs`)
/// reading a constant f32 HWCF filter through the plain map.
pub fn packable(op: OperationRef, panel: i64) -> bool {
    if op_name(&op) != "linalg.generic"
        || crate::ir::contraction::window_layout(op).0 != "conv_2d_nhwc_hwcf"
        || panel <= 0
    {
        return false;
    }
    let Ok(filter) = op.operand(0) else {
        return false;
    };
    let plain_map = operand_map_text(op, 0).is_some_and(|map| map == HWCF_MAP_TEXT);
    let Some(tensor) = StaticTensor::of(filter.r#type()) else {
        return false;
    };
    plain_map && tensor.rank() == 4 && ConstTensor::is_constant(filter)
}

/// Filters already packed in one pass run, by the old constant and the
/// panel width: convolutions sharing a weight share its packed form.
/// The old constants stay until [`PackedFilters::erase_unused`].
#[derive(Default)]
pub struct PackedFilters<'c> {
    packed: std::collections::HashMap<(usize, i64), Value<'c, 'c>>,
    old: Vec<Value<'c, 'c>>,
}

impl<'c> PackedFilters<'c> {
    /// Erases the old filter constants nothing reads any more.
    pub fn erase_unused(self) {
        for value in self.old {
            if use_count(value) == 0
                && let Some(op) = defining_op(value)
            {
                erase_op(op);
            }
        }
    }
}

/// Packs `op`'s filter into panels of `panel` output channels (see the
/// module comment): a constant `ceil(F/P) x KH x KW x C x P` (channels
/// past F zero) beside the old one, shared by every convolution of the
/// run that reads the same filter in the same panels, read through the
/// panel map. Returns whether it rewrote (`false`: not [`packable`]).
pub fn pack_filter<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    panel: i64,
    done: &mut PackedFilters<'c>,
) -> Result<bool, PassError<'c>> {
    let op = as_generic(context, op)?;
    if !packable(op, panel) {
        return Ok(false);
    }
    let error = |message: String| PassError::at(op.location(), message);
    let filter: Value = op.operand(0).map_err(|e| error(e.to_string()))?;
    let key = (filter.to_raw().ptr as usize, panel);
    if let Some(&constant) = done.packed.get(&key) {
        return read_through_panels(context, op, constant, panel).map(|_| true);
    }
    let Some(weights) = ConstTensor::of_value(filter) else {
        return Ok(false);
    };
    let Some(old_constant) = defining_op(filter) else {
        return Ok(false);
    };
    if weights.element != ElementType::F32 {
        return Ok(false);
    }
    let [kh, kw, c, f] = weights.shape[..] else {
        return Ok(false);
    };
    // Output channels rounded up to whole panels, the extra ones zero: a
    // block reaching past F loads its last panel whole.
    let panels = (f + panel - 1) / panel;
    let padded = if f % panel == 0 {
        weights
    } else {
        let extra = panels * panel - f;
        let zeros = ConstTensor::from_f32s(
            vec![kh, kw, c, extra],
            &vec![0.0; (kh * kw * c * extra) as usize],
        );
        ConstTensor::concat(&[weights, zeros], 3).map_err(error)?
    };
    let packed = padded
        .reshape(&[kh, kw, c, panels, panel])
        .and_then(|t| t.transpose(&[3, 0, 1, 2, 4]))
        .map_err(error)?;
    let element = StaticTensor::of(filter.r#type())
        .ok_or_else(|| error("expected a static filter tensor".into()))?
        .element;
    let ty = StaticTensor {
        shape: packed.shape.clone(),
        element,
    }
    .to_type();
    let attribute = packed.to_attribute(ty).map_err(error)?;
    // Beside the old constant, which dominates every reader of it.
    let builder = TosaBuilder::before(context, old_constant)?;
    let constant = builder.insert("arith.constant", &[], ty, &[("value", attribute)])?;
    done.packed.insert(key, constant);
    done.old.push(filter);
    read_through_panels(context, op, constant, panel).map(|_| true)
}

/// Makes `op` read `constant` (a filter in panels of `panel`) through
/// the panel map.
fn read_through_panels<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    constant: Value<'c, 'c>,
    panel: i64,
) -> Result<(), PassError<'c>> {
    let error = |message: String| PassError::at(op.location(), message);
    let maps = ArrayAttribute::try_from(
        op.attribute("indexing_maps")
            .map_err(|e| error(e.to_string()))?,
    )
    .map_err(|e| error(e.to_string()))?;
    let panel_map = Attribute::parse(context, &panel_map_text(panel))
        .ok_or_else(|| error("cannot build the panel map".into()))?;
    let mut new_maps = vec![panel_map];
    for index in 1..maps.len() {
        new_maps.push(maps.element(index).map_err(|e| error(e.to_string()))?);
    }
    let mut op_mut = unsafe { OperationRefMut::from_raw(op.to_raw()) };
    op_mut.set_operand(0, constant);
    op_mut.set_attribute(
        "indexing_maps",
        ArrayAttribute::new(context, &new_maps).into(),
    );
    Ok(())
}
