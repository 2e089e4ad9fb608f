//! Half-precision graphs (float16, bfloat16) computed in f32: a node that
//! computes on f16/bf16 tensors gets its half inputs cast up to f32 and its
//! float results cast back to the half type, so every op's importer sees
//! the f32 it was written for, and tensors in memory (graph inputs and
//! outputs, intermediates between kernels) stay 16-bit. After fusion the
//! casts are the loads and stores of the kernels around the op: a kernel
//! reads a half tensor converting it up, computes in f32 registers and
//! rounds to nearest even when it stores. Reductions, softmax and layer
//! normalization therefore keep f32 statistics, and GEMMs and convolutions
//! accumulate in f32.
//!
//! Data movement, casts and selections are not wrapped: they move half
//! values unchanged (exact either way) and keep their constants 16-bit.
//!
//! This is also the shape of a later `--precision=fp16|bf16` for f32
//! models: the stored tensors' type changes, with these casts at the edges.

use super::super::dtype::DType;
use super::super::error::Result;
use super::super::node::{Node, Value, tensor_value};
use super::Importer;

/// Ops that only move, select or convert elements: they run on half
/// tensors as they are.
pub(super) const MOVES_ELEMENTS: &[&str] = &[
    "Cast",
    "CastLike",
    "Identity",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "Expand",
    "Tile",
    "DepthToSpace",
    "SpaceToDepth",
    "Shape",
    "Size",
    "Dropout",
    "Where",
    "Constant",
    "ConstantOfShape",
    "BitCast",
    "ReverseSequence",
    "TensorScatter",
];

/// The half type a node computes in, if it must be widened: the first
/// f16/bf16 input of an op that computes.
pub(super) fn half_compute_type(node: &Node) -> Option<DType> {
    if MOVES_ELEMENTS.contains(&node.op()) {
        return None;
    }
    node.inputs
        .iter()
        .flatten()
        .map(Value::dtype)
        .find(|d| matches!(d, DType::F16 | DType::BF16))
}

/// `value` as f32 when it is f16 or bf16: a constant converted here
/// (exactly), a tensor through a cast op.
pub(super) fn widen(imp: &mut Importer, value: &Value) -> Result<Value> {
    if !matches!(value.dtype(), DType::F16 | DType::BF16) {
        return Ok(value.clone());
    }
    Ok(match value {
        Value::Const(c) => Value::constant(c.cast(DType::F32)),
        Value::Tensor(v) => tensor_value(imp.e.cast(v, DType::F32)),
    })
}

/// A node's f32 result rounded back to `half` (to nearest even); other
/// results as they are.
pub(super) fn narrow(imp: &mut Importer, value: Value, half: DType) -> Result<Value> {
    if value.dtype() != DType::F32 {
        return Ok(value);
    }
    Ok(match &value {
        Value::Const(c) => Value::constant(c.cast(half)),
        Value::Tensor(v) => tensor_value(imp.e.cast(v, half)),
    })
}
