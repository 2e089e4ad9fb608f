//! Rewrite patterns, kept apart from the passes that apply them.

pub mod attention;
pub mod concat_in_place;
pub mod convert_layer_norm_to_rows;
pub mod convert_softmax_to_linalg;
pub mod copy;
pub mod decompose_composites;
pub mod elide_output_copies;
pub mod fold_batch_norm;
pub mod fold_constants;
pub mod fold_conv_inputs;
pub mod fold_pad_slices;
pub mod form_dispatches;
pub mod pack_weight_panels;
pub mod propagate_layout;
pub mod raise_composites;

use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::{BlockLike, TypeLike, Value, ValueLike};

use crate::ir::error::PassError;

/// Whether `op` (a `tcc.softmax` or `tcc.layer_norm`) works along the last
/// axis of an f32 tensor: the case the one-kernel row templates take.
pub fn is_last_axis_f32(op: OperationRef) -> bool {
    let Some(input) = op
        .operand(0)
        .ok()
        .and_then(|v| crate::ir::types::StaticTensor::of(v.r#type()))
    else {
        return false;
    };
    let Some(axis) = op
        .attribute("axis")
        .ok()
        .and_then(crate::ir::util::integer_value)
    else {
        return false;
    };
    input.element.is_f32()
        && crate::ir::types::normalize_axis(axis, input.rank()) == Some(input.rank() - 1)
}

/// Builds `builder` (named `what` in errors) in front of `op` and returns
/// its first result.
pub fn insert_before<'c>(
    op: OperationRef<'c, 'c>,
    builder: OperationBuilder<'c>,
    what: &str,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = op.location();
    let block = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let built = builder
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build {what}: {e}")))?;
    let built = block.insert_operation_before(op, built);
    Ok(built
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into())
}

/// A `tensor.empty` of `like`'s type in front of `op`: the destination of
/// a destination-style op replacing `op`.
pub fn empty_like<'c>(
    op: OperationRef<'c, 'c>,
    like: Value<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    insert_before(
        op,
        OperationBuilder::new("tensor.empty", op.location()).add_results(&[like.r#type()]),
        "tensor.empty",
    )
}
