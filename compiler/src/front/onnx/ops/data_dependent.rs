//! Ops whose output shape depends on their input values: Compress,
//! NonZero and Unique. tcc compiles static shapes, so they are evaluated
//! at import time when their inputs are constants; on a value computed at
//! run time they are an error that says so.

use std::cmp::Ordering;

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::node::{Node, Value};
use super::super::tensor::Const;

/// Input `index` as a constant, or the error for a run-time value.
fn known<'a>(node: &'a Node, index: usize, what: &str) -> Result<&'a Const> {
    match node.input(index)? {
        Value::Const(c) if c.numel() as i64 <= fold::FOLD_LIMIT => Ok(c),
        Value::Const(c) => bail!(
            "{} of a constant {what} of {} elements is too large to evaluate at import time",
            node.op(),
            c.numel()
        ),
        Value::Tensor(_) => bail!(
            "{}'s output shape depends on the values of its {what} (input #{index} '{}'), which are computed at run time; tcc needs static shapes (dynamic shapes are not supported yet)",
            node.op(),
            node.proto
                .input
                .get(index)
                .map(String::as_str)
                .unwrap_or("")
        ),
    }
}

pub fn non_zero(node: &Node) -> Result<Vec<Value>> {
    let x = known(node, 0, "input")?;
    let rank = x.shape.len();
    let strides = fold::strides(&x.shape);
    let hits: Vec<usize> = (0..x.numel()).filter(|&i| x.f64_at(i) != 0.0).collect();
    let mut out = vec![0i64; rank.max(1) * hits.len()];
    if rank == 0 {
        // A scalar: one row of zeros per nonzero (as numpy's nonzero of a
        // 0-d array promoted to 1-d).
        let shape = vec![1, hits.len() as i64];
        return Ok(vec![Value::constant(Const::from_i64(
            DType::I64,
            shape,
            &out,
        ))]);
    }
    for (column, &flat) in hits.iter().enumerate() {
        for axis in 0..rank {
            out[axis * hits.len() + column] =
                ((flat / strides[axis]) % x.shape[axis] as usize) as i64;
        }
    }
    Ok(vec![Value::constant(Const::from_i64(
        DType::I64,
        vec![rank as i64, hits.len() as i64],
        &out,
    ))])
}

pub fn compress(node: &Node) -> Result<Vec<Value>> {
    let x = known(node, 0, "input")?;
    let condition = known(node, 1, "condition")?;
    if condition.shape.len() != 1 {
        bail!(
            "Compress's condition must be 1-D, not {:?}",
            condition.shape
        );
    }
    let (data, axis) = match node.int_opt("axis")? {
        Some(a) => {
            let axis = node.axis(a, x.shape.len(), "Compress axis")?;
            (x.clone(), axis)
        }
        None => (x.reshaped(vec![x.numel() as i64]), 0),
    };
    let length = data.shape[axis] as usize;
    if condition.numel() > length {
        bail!(
            "Compress's condition has {} elements for an axis of {length}",
            condition.numel()
        );
    }
    let picked: Vec<i64> = (0..condition.numel())
        .filter(|&i| condition.f64_at(i) != 0.0)
        .map(|i| i as i64)
        .collect();
    Ok(vec![Value::constant(fold::gather(
        &data,
        axis,
        &picked,
        &[picked.len() as i64],
    ))])
}

/// Total order of elements for sorting (numpy's: NaN last).
fn compare(a: &[f64], b: &[f64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

pub fn unique(node: &Node) -> Result<Vec<Value>> {
    let x = known(node, 0, "input")?;
    let sorted = node.int("sorted", 1)? != 0;
    let (data, axis) = match node.int_opt("axis")? {
        Some(a) => {
            let axis = node.axis(a, x.shape.len(), "Unique axis")?;
            (x.clone(), axis)
        }
        None => (x.reshaped(vec![x.numel() as i64]), 0),
    };
    let length = data.shape[axis] as usize;
    // Each slice along the axis as its elements (integers exactly as f64
    // where they fit; larger ones compared by their i64 value).
    let slices: Vec<Vec<i64>> = (0..length)
        .map(|i| {
            let s = fold::gather(&data, axis, &[i as i64], &[1]);
            if data.dtype.is_float() {
                s.f64s().iter().map(|v| v.to_bits() as i64).collect()
            } else {
                s.i64s()
            }
        })
        .collect();
    let values = |i: usize| -> Vec<f64> {
        if data.dtype.is_float() {
            slices[i]
                .iter()
                .map(|&b| f64::from_bits(b as u64))
                .collect()
        } else {
            slices[i].iter().map(|&v| v as f64).collect()
        }
    };
    // Equal slices have equal keys: floats by their bits with -0 as +0
    // and every NaN as one NaN (numpy's unique counts NaNs as equal).
    let key = |i: usize| -> Vec<i64> {
        if data.dtype.is_float() {
            values(i)
                .iter()
                .map(|&v| {
                    let v = if v == 0.0 {
                        0.0
                    } else if v.is_nan() {
                        f64::NAN
                    } else {
                        v
                    };
                    v.to_bits() as i64
                })
                .collect()
        } else {
            slices[i].clone()
        }
    };
    // First occurrences in input order, then (sorted) in value order.
    let mut firsts: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashMap<Vec<i64>, usize> = std::collections::HashMap::new();
    let inverse_first: Vec<usize> = (0..length)
        .map(|i| {
            *seen.entry(key(i)).or_insert_with(|| {
                firsts.push(i);
                firsts.len() - 1
            })
        })
        .collect();
    let mut order: Vec<usize> = (0..firsts.len()).collect();
    if sorted {
        order.sort_by(|&a, &b| {
            let (i, j) = (firsts[a], firsts[b]);
            if data.dtype.is_float() {
                compare(&values(i), &values(j))
            } else {
                slices[i].cmp(&slices[j])
            }
        });
    }
    let mut rank_of = vec![0usize; firsts.len()];
    for (r, &o) in order.iter().enumerate() {
        rank_of[o] = r;
    }
    let indices: Vec<i64> = order.iter().map(|&o| firsts[o] as i64).collect();
    let inverse: Vec<i64> = inverse_first.iter().map(|&p| rank_of[p] as i64).collect();
    let mut counts = vec![0i64; firsts.len()];
    for &p in &inverse {
        counts[p as usize] += 1;
    }
    let n = indices.len() as i64;
    let y = fold::gather(&data, axis, &indices, &[n]);
    let vector = |v: &[i64]| Const::from_i64(DType::I64, vec![v.len() as i64], v);
    let outputs = [y, vector(&indices), vector(&inverse), vector(&counts)];
    if node.proto.output.len() > outputs.len() {
        return Err(ImportError::new("Unique has at most four outputs"));
    }
    Ok(outputs
        .into_iter()
        .take(node.proto.output.len().max(1))
        .map(Value::constant)
        .collect())
}
