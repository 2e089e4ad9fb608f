//! Evaluation of ops on constants at import time: the shape computations
//! exported graphs are full of (`Shape → Gather → Unsqueeze → Concat →
//! Reshape`), constant weight transforms, and any other op whose inputs
//! are all known, for the ops listed in [`try_fold`].
//!
//! Data movement works on raw element bytes (any element type); arithmetic
//! on f64 (floats) or i64 (integers, booleans).

use super::dtype::{DType, checked_numel};
use super::emit::broadcast_shapes;
use super::error::{ImportError, Result, bail};
use super::importer::Importer;
use super::node::{Node, Value};
use super::tensor::Const;

mod arith;
mod movement;

pub use arith::binary;
use arith::{reduce, unary};
use movement::broadcast_indices;
pub use movement::{broadcast, concat, gather, pick, strided_slice, strides, transpose};

/// Arithmetic on constants with more elements than this is left to tcc's
/// own constant folding.
pub const FOLD_LIMIT: i64 = 1 << 20;

fn all_const<'n>(node: &'n Node) -> Option<Vec<Option<&'n Const>>> {
    let mut out = Vec::new();
    for input in &node.inputs {
        match input {
            None => out.push(None),
            Some(Value::Const(c)) => out.push(Some(&**c)),
            Some(Value::Tensor(_)) => return None,
        }
    }
    Some(out)
}

/// Folds `node` when all its inputs are constants and the op is one of
/// the elementwise/reduction ops evaluated here (data-movement ops fold
/// in their own importers, which handle constants directly).
pub fn try_fold(imp: &Importer, node: &Node) -> Result<Option<Vec<Value>>> {
    let Some(inputs) = all_const(node) else {
        return Ok(None);
    };
    if inputs.is_empty()
        || inputs
            .iter()
            .any(|c| c.is_some_and(|c| c.numel() as i64 > FOLD_LIMIT))
    {
        return Ok(None);
    }
    let op = node.op();
    let folded = match op {
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Equal" | "Less" | "Greater" | "LessOrEqual"
        | "GreaterOrEqual" | "And" | "Or" | "Xor" | "Mod"
            if node.opset >= 7 && inputs.len() == 2 =>
        {
            let (Some(a), Some(b)) = (inputs[0], inputs[1]) else {
                return Ok(None);
            };
            // fmod = 1 (C's remainder) runs as the lowering in ops/numeric.rs.
            if op == "Mod" && node.int("fmod", 0)? == 1 {
                return Ok(None);
            }
            let b = if op == "Pow" && b.dtype != a.dtype {
                b.cast(a.dtype)
            } else {
                b.clone()
            };
            if a.dtype != b.dtype {
                bail!("{op} of {} and {}: element types differ", a.dtype, b.dtype);
            }
            match binary(op, a, &b)? {
                Some(c) if (c.numel() as i64) <= FOLD_LIMIT => c,
                _ => return Ok(None),
            }
        }
        "Max" | "Min" | "Sum" if inputs.iter().all(|c| c.is_some()) && node.opset >= 8 => {
            let mut acc = inputs[0].unwrap().clone();
            for c in &inputs[1..] {
                match binary(op, &acc, c.unwrap())? {
                    Some(c) => acc = c,
                    None => return Ok(None),
                }
            }
            acc
        }
        "Neg" | "Abs" | "Sqrt" | "Exp" | "Log" | "Reciprocal" | "Floor" | "Ceil" | "Round"
        | "Not" | "Relu" | "Sign" => {
            let Some(Some(c)) = inputs.first() else {
                return Ok(None);
            };
            match unary(op, c) {
                Some(c) => c,
                None => return Ok(None),
            }
        }
        "Cast" => {
            let Some(Some(c)) = inputs.first() else {
                return Ok(None);
            };
            let to = node
                .int_opt("to")?
                .ok_or_else(|| ImportError::new("Cast needs 'to'"))?;
            let Some(dtype) = DType::from_onnx(to as i32) else {
                bail!(
                    "Cast to {} is not supported",
                    DType::onnx_code_name(to as i32)
                );
            };
            c.cast(imp.graph_dtype(dtype))
        }
        "Where" => {
            let (Some(Some(cond)), Some(Some(a)), Some(Some(b))) =
                (inputs.first(), inputs.get(1), inputs.get(2))
            else {
                return Ok(None);
            };
            let Some(ab) = broadcast_shapes(&a.shape, &b.shape) else {
                bail!(
                    "Where: shapes {:?} and {:?} do not broadcast",
                    a.shape,
                    b.shape
                )
            };
            let Some(shape) = broadcast_shapes(&cond.shape, &ab)
                .filter(|s| checked_numel(s).is_some_and(|n| n <= FOLD_LIMIT))
            else {
                if broadcast_shapes(&cond.shape, &ab).is_some() {
                    return Ok(None);
                }
                bail!("Where: condition shape {:?} does not broadcast", cond.shape)
            };
            if a.dtype != b.dtype {
                bail!("Where: element types {} and {} differ", a.dtype, b.dtype);
            }
            let (ic, ia, ib) = (
                broadcast_indices(&cond.shape, &shape),
                broadcast_indices(&a.shape, &shape),
                broadcast_indices(&b.shape, &shape),
            );
            let size = a.dtype.size();
            let mut bytes = Vec::new();
            for k in 0..ic.len() {
                let (src, i) = if cond.i64_at(ic[k]) != 0 {
                    (a, ia[k])
                } else {
                    (b, ib[k])
                };
                let at = if src.splat { 0 } else { i * size };
                bytes.extend_from_slice(&src.bytes[at..at + size]);
            }
            Const {
                dtype: a.dtype,
                shape,
                bytes: bytes.into(),
                splat: false,
            }
        }
        "Range" => {
            let (Some(Some(start)), Some(Some(limit)), Some(Some(delta))) =
                (inputs.first(), inputs.get(1), inputs.get(2))
            else {
                return Ok(None);
            };
            let dtype = start.dtype;
            if dtype.is_float() {
                let (s, l, d) = (start.f64_at(0), limit.f64_at(0), delta.f64_at(0));
                if d == 0.0 || !d.is_finite() {
                    bail!("Range with delta {d}");
                }
                let count = ((l - s) / d).ceil().max(0.0);
                if count > FOLD_LIMIT as f64 {
                    bail!("Range of {count} elements is too large");
                }
                let values: Vec<f64> = (0..count as i64).map(|i| s + i as f64 * d).collect();
                Const::from_f64(dtype, vec![values.len() as i64], &values)
            } else {
                let (s, l, d) = (start.i64_at(0), limit.i64_at(0), delta.i64_at(0));
                if d == 0 {
                    bail!("Range with delta 0");
                }
                let count = (((l as i128 - s as i128) as f64) / d as f64)
                    .ceil()
                    .max(0.0) as i64;
                if count > FOLD_LIMIT {
                    bail!("Range of {count} elements is too large");
                }
                let values: Vec<i64> = (0..count).map(|i| s + i * d).collect();
                Const::from_i64(dtype, vec![values.len() as i64], &values)
            }
        }
        "ReduceSum" | "ReduceProd" | "ReduceMax" | "ReduceMin" => {
            let Some(Some(c)) = inputs.first() else {
                return Ok(None);
            };
            let rank = c.shape.len();
            let axes = if (op == "ReduceSum" && node.opset >= 13) || node.opset >= 18 {
                inputs.get(1).copied().flatten().map(|a| a.i64s())
            } else {
                node.ints("axes")?
            };
            let keepdims = node.int("keepdims", 1)? != 0;
            let axes = match axes {
                Some(a) if !a.is_empty() => node.axes(&a, rank, "axis")?,
                _ if node.int("noop_with_empty_axes", 0)? != 0 => {
                    return Ok(Some(vec![Value::constant((*c).clone())]));
                }
                _ => (0..rank).collect(),
            };
            match reduce(op, c, &axes, keepdims) {
                Some(c) => c,
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    if checked_numel(&folded.shape).is_none() {
        bail!("folded constant has an invalid shape {:?}", folded.shape);
    }
    Ok(Some(vec![Value::constant(folded)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_movement_on_constants() {
        let c = Const::from_i64(DType::I64, vec![2, 3], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(transpose(&c, &[1, 0]).i64s(), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(
            strided_slice(&c, &[0, 2], &[1, -1], &[2, 2]).i64s(),
            vec![2, 1, 5, 4]
        );
        assert_eq!(
            concat(&[&c, &c], 1).i64s(),
            vec![0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]
        );
        assert_eq!(gather(&c, 1, &[2, 0], &[2]).i64s(), vec![2, 0, 5, 3]);
        let row = Const::from_i64(DType::I64, vec![3], &[7, 8, 9]);
        assert_eq!(broadcast(&row, &[2, 3]).i64s(), vec![7, 8, 9, 7, 8, 9]);
    }

    #[test]
    fn arithmetic_on_constants() {
        let a = Const::from_i64(DType::I64, vec![2], &[7, -7]);
        let b = Const::from_i64(DType::I64, vec![1], &[2]);
        assert_eq!(binary("Div", &a, &b).unwrap().unwrap().i64s(), vec![3, -3]);
        assert_eq!(binary("Less", &a, &b).unwrap().unwrap().i64s(), vec![0, 1]);
        assert!(binary("Div", &a, &Const::from_i64(DType::I64, vec![1], &[0])).is_err());
        // Mod with fmod = 0 (the only form folded): the divisor's sign.
        assert_eq!(binary("Mod", &a, &b).unwrap().unwrap().i64s(), vec![1, 1]);
        let minus_two = Const::from_i64(DType::I64, vec![1], &[-2]);
        assert_eq!(
            binary("Mod", &a, &minus_two).unwrap().unwrap().i64s(),
            vec![-1, -1]
        );
        let f = Const::from_f64(DType::F32, vec![2, 2], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            reduce("ReduceSum", &f, &[1], false).unwrap().f64s(),
            vec![3.0, 7.0]
        );
        assert_eq!(
            reduce("ReduceProd", &f, &[0, 1], true).unwrap().shape,
            vec![1, 1]
        );
        // Over an empty set: an integer type's (or bool's) extreme values,
        // as their bits.
        let empty_bool = Const::from_i64(DType::Bool, vec![2, 0], &[]);
        let max = reduce("ReduceMax", &empty_bool, &[1], false).unwrap();
        assert_eq!(max.i64s(), vec![0, 0]);
        let min = reduce("ReduceMin", &empty_bool, &[1], false).unwrap();
        assert_eq!(min.i64s(), vec![1, 1]);
        let empty_u64 = Const::from_i64(DType::U64, vec![0], &[]);
        let min = reduce("ReduceMin", &empty_u64, &[0], false).unwrap();
        assert_eq!(min.full_bytes(), vec![0xff; 8]);
        let empty_i32 = Const::from_i64(DType::I32, vec![0], &[]);
        let max = reduce("ReduceMax", &empty_i32, &[0], false).unwrap();
        assert_eq!(max.i64s(), vec![i64::from(i32::MIN)]);
    }
}
