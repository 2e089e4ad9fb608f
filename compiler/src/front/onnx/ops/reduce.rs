//! Reductions (TOSA reduces one axis at a time and keeps it) and
//! ArgMax/ArgMin.

use super::super::dtype::DType;
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::one;

fn squeeze_axes(imp: &mut Importer, y: &Val, axes: &[usize], keepdims: bool) -> Val {
    if keepdims {
        return y.clone();
    }
    let shape: Vec<i64> = y
        .shape()
        .iter()
        .enumerate()
        .filter(|(a, _)| !axes.contains(a))
        .map(|(_, &d)| d)
        .collect();
    imp.e.reshape(y, &shape)
}

pub fn reduce(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let op = node.op();
    let input = node.input(0)?;
    let rank = input.rank();
    let axes_from_input = if op == "ReduceSum" {
        node.opset >= 13
    } else {
        node.opset >= 18
    };
    let axes = if axes_from_input {
        node.const_ints(1, "the axes")?
    } else {
        node.ints("axes")?
    };
    let keepdims = node.int("keepdims", 1)? != 0;
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => node.axes(&a, rank, "axis")?,
        _ if node.int("noop_with_empty_axes", 0)? != 0 => return one(input.clone()),
        _ => (0..rank).collect(),
    };
    let shape = input.shape();
    if axes.iter().any(|&a| shape[a] == 0) {
        return one(Value::constant(empty_reduction(
            op,
            input.dtype(),
            &shape,
            &axes,
            keepdims,
        )?));
    }
    let x = imp.val(input)?;
    let d = x.dtype();
    if d == DType::Bool && matches!(op, "ReduceMax" | "ReduceMin") {
        // Any and all: the maximum and minimum of the values as integers.
        let wide = imp.e.cast(&x, DType::I32);
        let tosa = if op == "ReduceMax" {
            "tosa.reduce_max"
        } else {
            "tosa.reduce_min"
        };
        let y = imp.e.reduce_axes(tosa, &wide, &axes);
        let y = imp.e.cast(&y, DType::Bool);
        return one(Value::Tensor(squeeze_axes(imp, &y, &axes, keepdims)));
    }
    if d == DType::Bool
        || (!d.is_float() && !matches!(op, "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd"))
    {
        bail!("{op} of {d} tensors is not supported");
    }
    let count: i64 = axes.iter().map(|&a| x.shape()[a]).product();
    let reduce_sum = |imp: &mut Importer, v: &Val| imp.e.reduce_axes("tosa.reduce_sum", v, &axes);
    let y = match op {
        "ReduceSum" => reduce_sum(imp, &x),
        "ReduceMean" => {
            let s = reduce_sum(imp, &x);
            imp.e.scale(&s, 1.0 / count as f64)?
        }
        "ReduceMax" => imp.e.reduce_axes("tosa.reduce_max", &x, &axes),
        "ReduceMin" => imp.e.reduce_axes("tosa.reduce_min", &x, &axes),
        "ReduceProd" => imp.e.reduce_axes("tosa.reduce_product", &x, &axes),
        "ReduceL1" => {
            let a = imp.e.unary("tosa.abs", &x);
            reduce_sum(imp, &a)
        }
        "ReduceL2" | "ReduceSumSquare" => {
            let sq = imp.e.mul(&x, &x)?;
            let s = reduce_sum(imp, &sq);
            if op == "ReduceL2" {
                imp.e
                    .map(&[&s], s.ty.clone(), &|b, a| b.op("math.sqrt", &[a[0]]))
            } else {
                s
            }
        }
        "ReduceLogSum" => {
            let s = reduce_sum(imp, &x);
            imp.e.unary("tosa.log", &s)
        }
        "ReduceLogSumExp" => {
            let m = imp.e.reduce_axes("tosa.reduce_max", &x, &axes);
            let shifted = imp.e.sub(&x, &m)?;
            let e = imp.e.unary("tosa.exp", &shifted);
            let s = reduce_sum(imp, &e);
            let l = imp.e.unary("tosa.log", &s);
            imp.e.add(&l, &m)?
        }
        other => bail!("no reduction {other}"),
    };
    one(Value::Tensor(squeeze_axes(imp, &y, &axes, keepdims)))
}

/// A reduction over an empty set (an axis of extent 0): every element is
/// the reduction's identity, as ONNX defines it (0 for the sums, 1 for the
/// product, -inf and inf for max and min (an integer type's extremes),
/// log 0 = -inf for the log-sums, 0/0 for the mean).
fn empty_reduction(
    op: &str,
    dtype: DType,
    shape: &[i64],
    axes: &[usize],
    keepdims: bool,
) -> Result<super::super::tensor::Const> {
    let out: Vec<i64> = shape
        .iter()
        .enumerate()
        .filter_map(|(a, &d)| match axes.contains(&a) {
            true if keepdims => Some(1),
            true => None,
            false => Some(d),
        })
        .collect();
    use super::super::tensor::Const;
    Ok(match (op, dtype.int_bounds()) {
        ("ReduceSum" | "ReduceL1" | "ReduceL2" | "ReduceSumSquare", Some(_)) => {
            Const::splat_i64(dtype, out, 0)
        }
        ("ReduceProd", Some(_)) => Const::splat_i64(dtype, out, 1),
        // The extremes as their bits (u64's largest is all ones, -1).
        ("ReduceMax", Some((lo, _))) => Const::splat_i64(dtype, out, lo as i64),
        ("ReduceMin", Some((_, hi))) => Const::splat_i64(dtype, out, hi as i64),
        ("ReduceSum" | "ReduceL1" | "ReduceL2" | "ReduceSumSquare", None) => {
            Const::splat_f64(dtype, out, 0.0)
        }
        ("ReduceProd", None) => Const::splat_f64(dtype, out, 1.0),
        ("ReduceMax" | "ReduceLogSum" | "ReduceLogSumExp", None) => {
            Const::splat_f64(dtype, out, f64::NEG_INFINITY)
        }
        ("ReduceMin", None) => Const::splat_f64(dtype, out, f64::INFINITY),
        ("ReduceMean", None) => Const::splat_f64(dtype, out, f64::NAN),
        _ => bail!("{op} of {dtype} tensors over an empty set is not supported"),
    })
}

pub fn arg(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let rank = input.rank();
    if rank == 0 {
        bail!("{} of a scalar", node.op());
    }
    let axis = node.axis(node.int("axis", 0)?, rank, "axis")?;
    let keepdims = node.int("keepdims", 1)? != 0;
    let x = imp.val(input)?;
    if x.dtype() == DType::Bool {
        bail!("{} of bool tensors", node.op());
    }
    if node.opset >= 12 && node.int("select_last_index", 0)? != 0 {
        let i = super::index::arg_last(imp, node, &x, axis)?;
        let mut shape = x.shape().to_vec();
        if !keepdims {
            shape.remove(axis);
        } else {
            shape[axis] = 1;
        }
        return one(Value::Tensor(imp.e.reshape(&i, &shape)));
    }
    let x = if node.op() == "ArgMin" {
        imp.e.negate(&x)
    } else {
        x
    };
    let mut shape = x.shape().to_vec();
    shape.remove(axis);
    let ty = x.ty.with_shape(shape.clone()).with_dtype(DType::I32);
    let i = imp
        .e
        .op("tosa.argmax", &[&x], &[("axis", Attr::i32(axis))], ty);
    let i = imp.e.cast(&i, DType::I64);
    if keepdims {
        shape.insert(axis, 1);
    }
    one(Value::Tensor(imp.e.reshape(&i, &shape)))
}
