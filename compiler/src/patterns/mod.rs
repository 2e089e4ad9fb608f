//! Rewrite patterns, kept apart from the passes that apply them.

pub mod batch_norm;
pub mod concat;
pub mod constant_fold;
pub mod conv_inputs;
pub mod copy;
pub mod decompose_composites;
pub mod kernel_naming;
pub mod layer_norm_to_rows;
pub mod output_copy;
pub mod pad_slices;
pub mod raise_composites;
pub mod softmax_to_linalg;
pub mod transpose;

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{TypeLike, ValueLike};

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
