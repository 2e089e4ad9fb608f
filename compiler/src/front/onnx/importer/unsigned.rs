//! Unsigned integer graphs (uint8, uint16, uint32, uint64) and their
//! signedness. MLIR's tensors are signless, so an unsigned ONNX tensor is
//! an `i8`/`i16`/`i32`/`i64` tensor whose ops must read it as unsigned: a
//! node that computes on uint8/16/32 tensors gets them zero-extended to
//! int64 (exact), computes there with the signed ops every op importer
//! already emits (comparisons, division, max/min, clamps, reductions agree
//! with unsigned ones on values below 2^63), and its int64 results
//! truncated back to the unsigned type (addition, subtraction and
//! multiplication wrap as they should). After fusion the extension and the
//! truncation are parts of the kernel's loads and stores.
//!
//! uint64 cannot be widened: its ops that agree bit for bit with the
//! signed ones (add, sub, mul, bitwise logic, equality, data movement) run
//! as they are, and so do the ops that read uint64 themselves (Div and Mod
//! divide unsigned, BitShift shifts logically, Pow's exponent converts
//! unsigned); the ops that only order values (comparisons, Max, Min,
//! TopK, ArgMax/ArgMin, ReduceMax/ReduceMin, Clip) get their uint64
//! operands with the sign bit flipped, which maps unsigned order onto
//! signed order, and their uint64 results flipped back. Other ops are
//! refused rather than computed wrong for values of 2^63 and above.
//!
//! Quantized ops read uint8 themselves (uint8 carried as `i8` bits, see
//! `ops/quant.rs`) and are not wrapped; neither are data movement and
//! selections, which move bits unchanged. `Cast` converts from and to the
//! unsigned types itself (`ops/elementwise.rs`).

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::{Node, Value, tensor_value};
use super::super::tensor::Const;
use super::Importer;
use super::half::MOVES_ELEMENTS;

/// Ops that take unsigned (uint8) tensors as they are.
const READS_UNSIGNED: &[&str] = &[
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "QLinearConv",
    "QLinearMatMul",
    "MatMulInteger",
    "ConvInteger",
];

/// uint64 ops whose signed form is the same bits, or that read uint64
/// themselves.
const SAME_BITS_U64: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "BitwiseNot",
    "Equal",
    "Div",
    "Mod",
    "BitShift",
    "Pow",
];

/// uint64 ops that only compare values: they run on the operands with
/// the sign bit flipped (unsigned order as signed order).
const ORDERS_U64: &[&str] = &[
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "Max",
    "Min",
    "TopK",
    "ArgMax",
    "ArgMin",
    "ReduceMax",
    "ReduceMin",
    "Clip",
];

/// Ops whose integer results are int64 whatever their input type.
const INT64_RESULTS: &[&str] = &["ArgMax", "ArgMin", "NonZero", "Shape", "Size"];

/// The unsigned type a node computes on, if it must be widened; an error
/// for uint64 ops that would be wrong on large values.
pub(super) fn unsigned_compute_type(node: &Node) -> Result<Option<DType>> {
    if MOVES_ELEMENTS.contains(&node.op()) || READS_UNSIGNED.contains(&node.op()) {
        return Ok(None);
    }
    let Some(unsigned) = node
        .inputs
        .iter()
        .flatten()
        .map(Value::dtype)
        .find(|d| d.is_unsigned())
    else {
        return Ok(None);
    };
    if unsigned == DType::U64 {
        if SAME_BITS_U64.contains(&node.op()) {
            return Ok(None);
        }
        if ORDERS_U64.contains(&node.op()) {
            return Ok(Some(DType::U64));
        }
        bail!(
            "{} on uint64 tensors is not supported (tcc computes unsigned integers in int64, \
             which holds uint64 values only below 2^63; add, sub, mul and bitwise logic are)",
            node.op()
        );
    }
    Ok(Some(unsigned))
}

/// `value` as int64 with its sign bit flipped: unsigned order becomes
/// signed order (the flip is its own inverse).
fn flip_sign(imp: &mut Importer, value: &Value, to: DType) -> Value {
    match value {
        Value::Const(c) => {
            let flipped: Vec<i64> = c.i64s().into_iter().map(|v| v ^ i64::MIN).collect();
            Value::constant(Const::from_i64(to, c.shape.clone(), &flipped))
        }
        Value::Tensor(v) => tensor_value(imp.e.map(&[v], v.ty.with_dtype(to), &|b, a| {
            let sign = b.int(i64::MIN, DType::I64);
            b.op("arith.xori", &[a[0], sign])
        })),
    }
}

/// `value` zero-extended to int64 when it is uint8/16/32; uint64 with its
/// sign bit flipped (for the ops that only compare).
pub(super) fn widen(imp: &mut Importer, value: &Value) -> Result<Value> {
    let dtype = value.dtype();
    if dtype == DType::U64 {
        return Ok(flip_sign(imp, value, DType::I64));
    }
    if !matches!(dtype, DType::U8 | DType::U16 | DType::U32) {
        return Ok(value.clone());
    }
    Ok(match value {
        Value::Const(c) => Value::constant(c.cast(DType::I64)),
        Value::Tensor(v) => {
            let ty = v.ty.with_dtype(DType::I64);
            tensor_value(
                imp.e
                    .map(&[v], ty, &|b, a| b.cast("arith.extui", a[0], DType::I64)),
            )
        }
    })
}

/// Output `index` of `op` back in `unsigned` where it is an int64 result
/// of the widened computation (truncated: the arithmetic wraps).
pub(super) fn narrow(
    imp: &mut Importer,
    op: &str,
    index: usize,
    value: Value,
    unsigned: DType,
) -> Result<Value> {
    let int64_result = INT64_RESULTS.contains(&op) || (op == "TopK" && index == 1);
    if value.dtype() != DType::I64 || int64_result {
        return Ok(value);
    }
    if unsigned == DType::U64 {
        return Ok(flip_sign(imp, &value, DType::U64));
    }
    Ok(match &value {
        Value::Const(c) => Value::constant(c.cast(unsigned)),
        Value::Tensor(v) => tensor_value(imp.e.cast(v, unsigned)),
    })
}
