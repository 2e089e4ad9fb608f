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
//! With half storage of the graph's own type (`--precision=fp16|bf16`,
//! [`crate::front::onnx::ImportOptions::round_half_at_storage`]) the
//! results stay f32 instead: `tcc-narrow-storage` then rounds what the
//! kernels store, as for an f32 graph compiled at that precision, and
//! data movement that meets both takes one type ([`moved_inputs`]).

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

/// Ops that move elements without computing on them when they do not
/// reduce (`reduction = none`, the default): under
/// `round_half_at_storage` they keep half tensors half like
/// [`MOVES_ELEMENTS`] (a key/value cache scattered into).
const SCATTERS_AND_GATHERS: &[&str] =
    &["ScatterElements", "ScatterND", "GatherElements", "GatherND"];

/// Under `round_half_at_storage`, the inputs of a node that moves
/// elements (`None` for any other node, and for `Cast` and `CastLike`,
/// which convert to what they name): computed tensors are f32 there while
/// graph inputs and half constants are not, so a node that meets both
/// takes one type. Where a half input is a tensor (a graph input: a
/// key/value cache the step's keys are scattered or concatenated into),
/// the f32 inputs are rounded to it and the result stays half, as the
/// graph declares; where only constants are half, they are widened
/// (exactly). A node without f32 inputs keeps its half ones as they are.
pub(super) fn moved_inputs(imp: &mut Importer, node: &Node) -> Result<Option<Vec<Option<Value>>>> {
    let moves = MOVES_ELEMENTS.contains(&node.op())
        || (SCATTERS_AND_GATHERS.contains(&node.op())
            && node
                .proto
                .attribute
                .iter()
                .all(|a| a.name != "reduction" || a.s.as_slice() == b"none"));
    if !moves || matches!(node.op(), "Cast" | "CastLike") {
        return Ok(None);
    }
    let half = |v: &Value| matches!(v.dtype(), DType::F16 | DType::BF16);
    let inputs = || node.inputs.iter().flatten();
    if !inputs().any(|v| v.dtype() == DType::F32) {
        return Ok(Some(node.inputs.clone()));
    }
    let tensor_half = inputs()
        .find(|v| half(v) && matches!(v, Value::Tensor(_)))
        .map(Value::dtype);
    node.inputs
        .iter()
        .map(|input| {
            input
                .as_ref()
                .map(|v| match tensor_half {
                    Some(half_type) => narrow(imp, v.clone(), half_type),
                    None => widen(imp, v),
                })
                .transpose()
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// Whether `node` is a `Cast` (or `CastLike`) of a computed f32 tensor to
/// the graph's own half type `half`, which `round_half_at_storage` imports
/// as the f32 value itself: the rounding it asks for happens where a
/// kernel stores the tensor, as for every other op's result. (A half
/// model's exports cast back to its type after a step computed in f32,
/// `softmax(x, dtype=float32).to(x.dtype)`: kept, the round trip would
/// stand between the ops of an attention and a GEMM's operands.)
pub(super) fn defers_rounding(node: &Node, half: DType) -> bool {
    let Some(Some(input @ Value::Tensor(_))) = node.inputs.first() else {
        return false;
    };
    if input.dtype() != DType::F32 {
        return false;
    }
    let target = match node.op() {
        "CastLike" => node
            .inputs
            .get(1)
            .and_then(Option::as_ref)
            .map(Value::dtype),
        "Cast" if node.opset >= 6 => node
            .int_opt("to")
            .ok()
            .flatten()
            .and_then(|to| DType::from_onnx(to as i32)),
        _ => None,
    };
    target == Some(half)
}
