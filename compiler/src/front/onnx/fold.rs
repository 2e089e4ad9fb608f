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

/// Arithmetic on constants with more elements than this is left to tcc's
/// own constant folding.
pub const FOLD_LIMIT: i64 = 1 << 20;

pub fn strides(shape: &[i64]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as usize;
    }
    strides
}

/// The elements of `c` at flat `indices`, as a tensor of `shape`.
pub fn pick(c: &Const, shape: Vec<i64>, indices: impl Iterator<Item = usize>) -> Const {
    if c.splat {
        return Const {
            dtype: c.dtype,
            shape,
            bytes: c.bytes.clone(),
            splat: true,
        };
    }
    let size = c.dtype.size();
    let mut bytes = Vec::new();
    for i in indices {
        bytes.extend_from_slice(&c.bytes[i * size..(i + 1) * size]);
    }
    Const {
        dtype: c.dtype,
        shape,
        bytes,
        splat: false,
    }
}

/// For each element of `out_shape`, the flat index of the element of a
/// tensor of `in_shape` that numpy broadcasting maps onto it.
fn broadcast_indices(in_shape: &[i64], out_shape: &[i64]) -> Vec<usize> {
    let count = out_shape.iter().product::<i64>() as usize;
    let in_strides = strides(in_shape);
    let offset = out_shape.len() - in_shape.len();
    let mut out = Vec::with_capacity(count);
    let mut index = vec![0i64; out_shape.len()];
    for _ in 0..count {
        let mut flat = 0;
        for (j, &d) in in_shape.iter().enumerate() {
            if d != 1 {
                flat += index[j + offset] as usize * in_strides[j];
            }
        }
        out.push(flat);
        for axis in (0..out_shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < out_shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

pub fn broadcast(c: &Const, shape: &[i64]) -> Const {
    if c.splat {
        return c.reshaped(shape.to_vec());
    }
    pick(
        c,
        shape.to_vec(),
        broadcast_indices(&c.shape, shape).into_iter(),
    )
}

pub fn transpose(c: &Const, perm: &[usize]) -> Const {
    let shape: Vec<i64> = perm.iter().map(|&p| c.shape[p]).collect();
    if c.splat {
        return c.reshaped(shape);
    }
    let in_strides = strides(&c.shape);
    let count = c.numel();
    let mut index = vec![0i64; shape.len()];
    let mut indices = Vec::with_capacity(count);
    for _ in 0..count {
        indices.push(
            perm.iter()
                .enumerate()
                .map(|(j, &p)| index[j] as usize * in_strides[p])
                .sum(),
        );
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    pick(c, shape, indices.into_iter())
}

/// Elements `starts[a] + k * steps[a]` for `k < sizes[a]` along every axis.
pub fn strided_slice(c: &Const, starts: &[i64], steps: &[i64], sizes: &[i64]) -> Const {
    if c.splat {
        return c.reshaped(sizes.to_vec());
    }
    let in_strides = strides(&c.shape);
    let count = sizes.iter().product::<i64>() as usize;
    let mut index = vec![0i64; sizes.len()];
    let mut indices = Vec::with_capacity(count);
    for _ in 0..count {
        indices.push(
            (0..sizes.len())
                .map(|a| (starts[a] + index[a] * steps[a]) as usize * in_strides[a])
                .sum(),
        );
        for axis in (0..sizes.len()).rev() {
            index[axis] += 1;
            if index[axis] < sizes[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    pick(c, sizes.to_vec(), indices.into_iter())
}

pub fn concat(parts: &[&Const], axis: usize) -> Const {
    let mut shape = parts[0].shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    let outer: i64 = shape[..axis].iter().product();
    let size = parts[0].dtype.size();
    let mut bytes = Vec::new();
    for o in 0..outer as usize {
        for part in parts {
            let block = (part.shape[axis..].iter().product::<i64>()) as usize;
            let full = part.full_bytes();
            bytes.extend_from_slice(&full[o * block * size..(o + 1) * block * size]);
        }
    }
    Const {
        dtype: parts[0].dtype,
        shape,
        bytes,
        splat: false,
    }
}

/// ONNX Gather along `axis` with already normalized (non-negative) indices.
pub fn gather(c: &Const, axis: usize, indices: &[i64], indices_shape: &[i64]) -> Const {
    let mut shape = c.shape[..axis].to_vec();
    shape.extend_from_slice(indices_shape);
    shape.extend_from_slice(&c.shape[axis + 1..]);
    if c.splat {
        return c.reshaped(shape);
    }
    let outer: i64 = c.shape[..axis].iter().product();
    let inner: i64 = c.shape[axis + 1..].iter().product();
    let k = c.shape[axis];
    let mut out = Vec::new();
    for o in 0..outer {
        for &i in indices {
            for n in 0..inner {
                out.push(((o * k + i) * inner + n) as usize);
            }
        }
    }
    pick(c, shape, out.into_iter())
}

fn binary_float(op: &str, a: f64, b: f64) -> Option<f64> {
    Some(match op {
        "Add" | "Sum" => a + b,
        "Sub" => a - b,
        "Mul" => a * b,
        "Div" => a / b,
        "Pow" => a.powf(b),
        "Max" => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        "Min" => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        "Mod" => a - b * (a / b).floor(),
        _ => return None,
    })
}

fn binary_int(op: &str, a: i64, b: i64) -> Result<Option<i64>> {
    Ok(Some(match op {
        "Add" | "Sum" => a.wrapping_add(b),
        "Sub" => a.wrapping_sub(b),
        "Mul" => a.wrapping_mul(b),
        "Div" => {
            if b == 0 {
                bail!("integer division by zero in a constant");
            }
            a.wrapping_div(b)
        }
        "Mod" => {
            if b == 0 {
                bail!("integer modulo by zero in a constant");
            }
            a.wrapping_rem(b)
        }
        "Max" => a.max(b),
        "Min" => a.min(b),
        "And" => ((a != 0) && (b != 0)) as i64,
        "Or" => ((a != 0) || (b != 0)) as i64,
        "Xor" => ((a != 0) ^ (b != 0)) as i64,
        "Pow" => {
            if !(0..64).contains(&b) {
                return Ok(None);
            }
            a.wrapping_pow(b as u32)
        }
        _ => return Ok(None),
    }))
}

fn compare(op: &str, ordering: Option<std::cmp::Ordering>) -> Option<bool> {
    use std::cmp::Ordering::*;
    Some(match op {
        "Equal" => ordering == Some(Equal),
        "Less" => ordering == Some(Less),
        "Greater" => ordering == Some(Greater),
        "LessOrEqual" => matches!(ordering, Some(Less | Equal)),
        "GreaterOrEqual" => matches!(ordering, Some(Greater | Equal)),
        _ => return None,
    })
}

/// An elementwise binary op on constants (numpy broadcasting).
pub fn binary(op: &str, a: &Const, b: &Const) -> Result<Option<Const>> {
    let Some(shape) = broadcast_shapes(&a.shape, &b.shape) else {
        bail!("shapes {:?} and {:?} do not broadcast", a.shape, b.shape);
    };
    if checked_numel(&shape).is_none_or(|n| n > FOLD_LIMIT) {
        return Ok(None);
    }
    let ia = broadcast_indices(&a.shape, &shape);
    let ib = broadcast_indices(&b.shape, &shape);
    let is_compare = compare(op, None).is_some();
    if a.dtype.is_float() || b.dtype.is_float() {
        let (va, vb) = (a.f64s(), b.f64s());
        if is_compare {
            let out: Vec<i64> = ia
                .iter()
                .zip(&ib)
                .map(|(&i, &j)| compare(op, va[i].partial_cmp(&vb[j])).unwrap() as i64)
                .collect();
            return Ok(Some(Const::from_i64(DType::Bool, shape, &out)));
        }
        let mut out = Vec::with_capacity(ia.len());
        for (&i, &j) in ia.iter().zip(&ib) {
            let Some(v) = binary_float(op, va[i], vb[j]) else {
                return Ok(None);
            };
            out.push(v);
        }
        Ok(Some(Const::from_f64(a.dtype, shape, &out)))
    } else {
        let (va, vb) = (a.i64s(), b.i64s());
        if is_compare {
            let out: Vec<i64> = ia
                .iter()
                .zip(&ib)
                .map(|(&i, &j)| compare(op, Some(va[i].cmp(&vb[j]))).unwrap() as i64)
                .collect();
            return Ok(Some(Const::from_i64(DType::Bool, shape, &out)));
        }
        let mut out = Vec::with_capacity(ia.len());
        for (&i, &j) in ia.iter().zip(&ib) {
            let Some(v) = binary_int(op, va[i], vb[j])? else {
                return Ok(None);
            };
            out.push(v);
        }
        Ok(Some(Const::from_i64(a.dtype, shape, &out)))
    }
}

fn unary(op: &str, c: &Const) -> Option<Const> {
    if c.dtype.is_float() {
        let f: fn(f64) -> f64 = match op {
            "Neg" => |x| -x,
            "Abs" => f64::abs,
            "Sqrt" => f64::sqrt,
            "Exp" => f64::exp,
            "Log" => f64::ln,
            "Reciprocal" => |x| 1.0 / x,
            "Floor" => f64::floor,
            "Ceil" => f64::ceil,
            "Round" => f64::round_ties_even,
            "Relu" => |x| if x < 0.0 { 0.0 } else { x },
            "Sign" => |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            },
            _ => return None,
        };
        let values: Vec<f64> = c.f64s().into_iter().map(f).collect();
        Some(Const::from_f64(c.dtype, c.shape.clone(), &values))
    } else {
        let f: fn(i64) -> i64 = match op {
            "Neg" => i64::wrapping_neg,
            "Abs" => i64::wrapping_abs,
            "Not" => |x| (x == 0) as i64,
            "Relu" => |x| x.max(0),
            "Sign" => i64::signum,
            "Floor" | "Ceil" | "Round" => |x| x,
            _ => return None,
        };
        let values: Vec<i64> = c.i64s().into_iter().map(f).collect();
        Some(Const::from_i64(c.dtype, c.shape.clone(), &values))
    }
}

/// Reduces `axes` of `c` (numeric reductions of shape computations).
fn reduce(op: &str, c: &Const, axes: &[usize], keepdims: bool) -> Option<Const> {
    let rank = c.shape.len();
    let mut out_shape: Vec<i64> = c.shape.clone();
    for &a in axes {
        out_shape[a] = 1;
    }
    let out_count = out_shape.iter().product::<i64>() as usize;
    let out_strides = strides(&out_shape);
    let float = c.dtype.is_float();
    let (init, f): (f64, fn(f64, f64) -> f64) = match op {
        "ReduceSum" => (0.0, |a, b| a + b),
        "ReduceProd" => (1.0, |a, b| a * b),
        "ReduceMax" => (f64::NEG_INFINITY, f64::max),
        "ReduceMin" => (f64::INFINITY, f64::min),
        _ => return None,
    };
    let mut acc = vec![init; out_count];
    let values = c.f64s();
    let mut index = vec![0i64; rank];
    for v in values {
        let flat: usize = (0..rank)
            .map(|a| {
                if axes.contains(&a) {
                    0
                } else {
                    index[a] as usize * out_strides[a]
                }
            })
            .sum();
        acc[flat] = f(acc[flat], v);
        for axis in (0..rank).rev() {
            index[axis] += 1;
            if index[axis] < c.shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    let shape = if keepdims {
        out_shape
    } else {
        c.shape
            .iter()
            .enumerate()
            .filter(|(a, _)| !axes.contains(a))
            .map(|(_, &d)| d)
            .collect()
    };
    Some(if float {
        Const::from_f64(c.dtype, shape, &acc)
    } else {
        Const::from_i64(
            c.dtype,
            shape,
            &acc.iter().map(|&v| v as i64).collect::<Vec<_>>(),
        )
    })
}

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
            if op == "Mod" && a.dtype.is_float() && node.int("fmod", 0)? == 1 {
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
                bytes,
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
        let f = Const::from_f64(DType::F32, vec![2, 2], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            reduce("ReduceSum", &f, &[1], false).unwrap().f64s(),
            vec![3.0, 7.0]
        );
        assert_eq!(
            reduce("ReduceProd", &f, &[0, 1], true).unwrap().shape,
            vec![1, 1]
        );
    }
}
