//! Constants and shapes: Constant/ConstantOfShape, Shape/Size, Identity,
//! reshapes (Reshape, Flatten, Squeeze, Unsqueeze) and Transpose, plus the
//! value helpers other ops share. Each works on constants at import time (so
//! shape computations fold) and on tensors with TOSA.

use std::path::Path;

use super::super::dtype::{DType, checked_numel};
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::{self, Const};
use super::one;

pub fn reshape_value(imp: &mut Importer, v: &Value, shape: &[i64]) -> Result<Value> {
    if checked_numel(shape) != Some(v.ty().numel()) {
        bail!("cannot reshape {} to {shape:?}", v.ty());
    }
    Ok(match v {
        Value::Const(c) => Value::constant(c.reshaped(shape.to_vec())),
        Value::Tensor(t) => Value::Tensor(imp.e.reshape(t, shape)),
    })
}

pub fn transpose_value(imp: &mut Importer, v: &Value, perm: &[usize]) -> Result<Value> {
    Ok(match v {
        Value::Const(c) => Value::constant(fold::transpose(c, perm)),
        Value::Tensor(t) => Value::Tensor(imp.e.transpose(t, perm)),
    })
}

/// `starts[a] + k * steps[a]` for `k < sizes[a]` on every axis (indices
/// already clamped and in range).
pub fn strided_slice_value(
    imp: &mut Importer,
    v: &Value,
    starts: &[i64],
    steps: &[i64],
    sizes: &[i64],
) -> Result<Value> {
    if let Value::Const(c) = v {
        return Ok(Value::constant(fold::strided_slice(
            c, starts, steps, sizes,
        )));
    }
    if sizes.contains(&0) {
        // No elements to read: the (empty) constant.
        return Ok(Value::constant(Const {
            dtype: v.dtype(),
            shape: sizes.to_vec(),
            bytes: Default::default(),
            splat: false,
        }));
    }
    let t = imp.val(v)?;
    // Unit steps as one tosa.slice (a negative step's range is reversed
    // and gathered below).
    let rank = t.rank();
    let mut box_start = vec![0; rank];
    let mut box_size = t.shape().to_vec();
    for a in 0..rank {
        if steps[a] == 1 {
            box_start[a] = starts[a];
            box_size[a] = sizes[a];
        }
    }
    let mut y = imp.e.slice(&t, &box_start, &box_size);
    for a in 0..rank {
        if steps[a] != 1 {
            let indices: Vec<i64> = (0..sizes[a]).map(|k| starts[a] + k * steps[a]).collect();
            let indices = Value::constant(Const::from_i64(DType::I64, vec![sizes[a]], &indices));
            y = gather_tensor(imp, &y, a, &indices)?;
        }
    }
    Ok(Value::Tensor(y))
}

/// ONNX Gather of a tensor along `axis` as a `tosa.gather` on [1, K, rest];
/// constant indices that are one ascending run `s, s + 1, ...` (a
/// `qkv[0]`, `qkv[1]`, `qkv[2]` split, `x[:, -1]`) as a `tosa.slice` and a
/// reshape instead, which later phases see through as views (a gather
/// is a kernel of its own and hides the layout from the transposes
/// around it).
pub(super) fn gather_tensor(
    imp: &mut Importer,
    data: &Val,
    axis: usize,
    indices: &Value,
) -> Result<Val> {
    let k = data.shape()[axis];
    let index_shape = indices.shape();
    let count: i64 = index_shape.iter().product();
    if count == 0 {
        bail!("Gather with no indices produces an empty tensor, which tcc does not support");
    }
    if let Value::Const(c) = indices
        && c.numel() as i64 <= fold::FOLD_LIMIT
        && let Some(start) = ascending_run(&c.i64s(), k)
    {
        let sliced = imp.e.slice_axis(data, axis, start, start + count);
        let mut shape = data.shape()[..axis].to_vec();
        shape.extend(&index_shape);
        shape.extend(&data.shape()[axis + 1..]);
        return Ok(imp.e.reshape(&sliced, &shape));
    }
    let idx = match indices {
        Value::Const(c) if c.numel() as i64 <= fold::FOLD_LIMIT => {
            let mut values = c.i64s();
            for v in values.iter_mut() {
                if *v < -k || *v >= k {
                    bail!("Gather index {v} is out of range for a dimension of {k}");
                }
                if *v < 0 {
                    *v += k;
                }
            }
            imp.e.constant(
                &Const::from_i64(DType::I32, vec![1, count], &values),
                "indices",
            )?
        }
        Value::Const(_) => bail!("Gather with {count} constant indices is too large"),
        Value::Tensor(t) => {
            if !t.dtype().is_int() {
                bail!("Gather indices must be integers, not {}", t.dtype());
            }
            // Negative indices count from the end.
            let zero = imp.e.scalar(t.dtype(), t.rank(), 0.0);
            let negative = imp.e.binary_to("tosa.greater", &zero, t, DType::Bool)?;
            let kk = imp.e.scalar(t.dtype(), t.rank(), k as f64);
            let wrapped = imp.e.add(t, &kk)?;
            let fixed = imp.e.select(&negative, &wrapped, t)?;
            let i32s = imp.e.cast(&fixed, DType::I32);
            imp.e.reshape(&i32s, &[1, count])
        }
    };
    let rank = data.rank();
    let mut perm = vec![axis];
    perm.extend((0..rank).filter(|&a| a != axis));
    let moved = imp.e.transpose(data, &perm);
    let rest: i64 = data
        .shape()
        .iter()
        .enumerate()
        .filter(|&(a, _)| a != axis)
        .map(|(_, d)| d)
        .product();
    let values = imp.e.reshape(&moved, &[1, k, rest]);
    let gathered = imp.e.op(
        "tosa.gather",
        &[&values, &idx],
        &[],
        values.ty.with_shape(vec![1, count, rest]),
    );
    // [indices..., others...] then back to [pre..., indices..., post...].
    let mut shape = index_shape.clone();
    shape.extend(
        data.shape()
            .iter()
            .enumerate()
            .filter(|&(a, _)| a != axis)
            .map(|(_, &d)| d),
    );
    let y = imp.e.reshape(&gathered, &shape);
    let q = index_shape.len();
    let mut back: Vec<usize> = (q..q + axis).collect();
    back.extend(0..q);
    back.extend(q + axis..shape.len());
    Ok(imp.e.transpose(&y, &back))
}

/// The first index of `indices` (negative ones counting from the end of
/// a dimension of `k`) when they are one ascending run of consecutive
/// indices inside the dimension, in order.
fn ascending_run(indices: &[i64], k: i64) -> Option<i64> {
    let first = *indices.first()?;
    let start = if first < 0 { first + k } else { first };
    let end = start.checked_add(indices.len() as i64)?;
    (start >= 0
        && end <= k
        && indices
            .iter()
            .zip(start..)
            .all(|(&i, expected)| i == expected || i + k == expected))
    .then_some(start)
}

pub fn constant(imp: &mut Importer, node: &Node, base_dir: Option<&Path>) -> Result<Vec<Value>> {
    if let Some(t) = node.tensor("value")? {
        return one(Value::constant(imp.adopt(tensor::decode(
            t,
            base_dir,
            "Constant's value",
        )?)));
    }
    if let Some(v) = node.float_opt("value_float")? {
        return one(Value::constant(Const::from_f64(
            DType::F32,
            vec![],
            &[v as f64],
        )));
    }
    if let Some(v) = node.floats("value_floats")? {
        let values: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        return one(Value::constant(Const::from_f64(
            DType::F32,
            vec![values.len() as i64],
            &values,
        )));
    }
    if let Some(v) = node.int_opt("value_int")? {
        return one(Value::constant(Const::from_i64(DType::I64, vec![], &[v])));
    }
    if let Some(v) = node.ints("value_ints")? {
        return one(Value::constant(Const::i64_vector(&v)));
    }
    if node.has("sparse_value") {
        bail!("sparse constants are not supported");
    }
    if node.has("value_string") || node.has("value_strings") {
        bail!("string constants are not supported");
    }
    bail!("Constant without a value")
}

pub fn constant_of_shape(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let shape = node
        .const_ints(0, "the shape")?
        .ok_or_else(|| ImportError::new("ConstantOfShape needs a shape"))?;
    if checked_numel(&shape).is_none() {
        bail!("ConstantOfShape with the invalid shape {shape:?}");
    }
    let value = match node.tensor("value")? {
        Some(t) => imp.adopt(tensor::decode(t, None, "ConstantOfShape's value")?),
        None => Const::splat_f64(DType::F32, vec![1], 0.0),
    };
    if value.numel() != 1 {
        bail!("ConstantOfShape's value must have one element");
    }
    let mut c = Const {
        dtype: value.dtype,
        shape,
        bytes: value.bytes.slice(..value.dtype.size()),
        splat: true,
    };
    if value.splat {
        c.bytes = value.bytes.clone();
    }
    one(Value::constant(c))
}

pub fn shape_of(node: &Node) -> Result<Vec<Value>> {
    let shape = node.input(0)?.shape();
    let rank = shape.len() as i64;
    let clamp = |v: i64| {
        if v < 0 {
            (v + rank).max(0)
        } else {
            v.min(rank)
        }
    };
    let start = clamp(node.int("start", 0)?);
    let end = clamp(node.int("end", rank)?);
    let part = if start < end {
        shape[start as usize..end as usize].to_vec()
    } else {
        Vec::new()
    };
    one(Value::constant(Const::i64_vector(&part)))
}

pub fn size_of(node: &Node) -> Result<Vec<Value>> {
    let count = node.input(0)?.ty().numel();
    one(Value::constant(Const::from_i64(
        DType::I64,
        vec![],
        &[count],
    )))
}

pub fn identity(node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    if node.op() == "Dropout" {
        if node.opset >= 12 && node.opt(2).is_some() {
            let training = match node.opt(2) {
                Some(Value::Tensor(_)) => None,
                _ => node.const_input(2, "training_mode")?,
            };
            match training {
                Some(t) if t.numel() == 1 && t.i64_at(0) == 0 => {}
                Some(_) => bail!(
                    "Dropout with training_mode = true is a training op: tcc compiles inference graphs"
                ),
                None => bail!(
                    "Dropout's training_mode is computed at run time; in training mode Dropout is a training op, and tcc compiles inference graphs (training_mode absent or a constant false)"
                ),
            }
        }
        if node.opset < 7 && node.int("is_test", 0)? == 0 && node.proto.output.len() > 1 {
            bail!(
                "Dropout with is_test = 0 (training mode) is a training op: tcc compiles inference graphs"
            );
        }
        let mask = Const::splat_i64(DType::Bool, x.shape(), 1);
        return Ok(vec![x, Value::constant(mask)]);
    }
    one(x)
}

/// ONNX Reshape's target: 0 copies a dimension (unless `allowzero`), -1
/// is inferred.
pub fn resolve_shape(input: &[i64], target: &[i64], allowzero: bool) -> Result<Vec<i64>> {
    let numel: i64 = input.iter().product();
    let mut shape = Vec::with_capacity(target.len());
    let mut inferred = None;
    for (i, &d) in target.iter().enumerate() {
        match d {
            0 if !allowzero => match input.get(i) {
                Some(&v) => shape.push(v),
                None => {
                    bail!("Reshape target {target:?} copies dimension {i}, which {input:?} lacks")
                }
            },
            -1 => {
                if inferred.replace(i).is_some() {
                    bail!("Reshape target {target:?} has two -1 dimensions");
                }
                shape.push(1);
            }
            d if d < 0 => bail!("Reshape target {target:?} has the negative dimension {d}"),
            d => shape.push(d),
        }
    }
    let known = checked_numel(&shape)
        .ok_or_else(|| ImportError::new(format!("Reshape target {target:?} is too large")))?;
    if let Some(i) = inferred {
        if known == 0 || numel % known != 0 {
            bail!("cannot reshape {input:?} ({numel} elements) to {target:?}");
        }
        shape[i] = numel / known;
    } else if known != numel {
        bail!("cannot reshape {input:?} ({numel} elements) to {target:?} ({known} elements)");
    }
    Ok(shape)
}

pub fn reshape_op(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let target = match node.const_ints(1, "the target shape")? {
        Some(t) => t,
        None => node
            .ints("shape")?
            .ok_or_else(|| ImportError::new("Reshape needs a shape"))?,
    };
    let allowzero = node.int("allowzero", 0)? != 0;
    let target = imp.rebatched(x, target);
    let shape = resolve_shape(&x.shape(), &target, allowzero)?;
    one(reshape_value(imp, x, &shape)?)
}

pub fn flatten(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    let rank = shape.len() as i64;
    let mut axis = node.int("axis", 1)?;
    if axis < 0 {
        axis += rank;
    }
    if axis < 0 || axis > rank {
        bail!("Flatten axis {axis} is out of range for rank {rank}");
    }
    let outer: i64 = shape[..axis as usize].iter().product();
    let inner: i64 = shape[axis as usize..].iter().product();
    one(reshape_value(imp, x, &[outer, inner])?)
}

fn axes_of(node: &Node, since: i64) -> Result<Option<Vec<i64>>> {
    if node.opset >= since {
        node.const_ints(1, "the axes")
    } else {
        node.ints("axes")
    }
}

pub fn squeeze(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    let axes = match axes_of(node, 13)? {
        Some(axes) => node.axes(&axes, shape.len(), "Squeeze axis")?,
        None => (0..shape.len()).filter(|&a| shape[a] == 1).collect(),
    };
    for &a in &axes {
        if shape[a] != 1 {
            bail!("Squeeze axis {a} has size {}, not 1", shape[a]);
        }
    }
    let out: Vec<i64> = shape
        .iter()
        .enumerate()
        .filter(|(a, _)| !axes.contains(a))
        .map(|(_, &d)| d)
        .collect();
    one(reshape_value(imp, x, &out)?)
}

pub fn unsqueeze(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    let axes = axes_of(node, 13)?.ok_or_else(|| ImportError::new("Unsqueeze needs axes"))?;
    let rank = shape.len() + axes.len();
    let axes = node.axes(&axes, rank, "Unsqueeze axis")?;
    let mut out = Vec::with_capacity(rank);
    let mut rest = shape.iter();
    for a in 0..rank {
        if axes.contains(&a) {
            out.push(1);
        } else {
            out.push(
                *rest
                    .next()
                    .ok_or_else(|| ImportError::new("Unsqueeze axes out of range"))?,
            );
        }
    }
    one(reshape_value(imp, x, &out)?)
}

pub fn transpose_op(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let rank = x.rank();
    let perm: Vec<usize> = match node.ints("perm")? {
        Some(p) => {
            let mut seen = vec![false; rank];
            let mut out = Vec::new();
            for v in p {
                if v < 0 || v as usize >= rank || seen[v as usize] {
                    bail!("Transpose perm is not a permutation of 0..{rank}");
                }
                seen[v as usize] = true;
                out.push(v as usize);
            }
            if out.len() != rank {
                bail!("Transpose perm has {} entries for rank {rank}", out.len());
            }
            out
        }
        None => (0..rank).rev().collect(),
    };
    one(transpose_value(imp, x, &perm)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_constant_indices_are_a_slice() {
        // qkv[0], qkv[1], qkv[2]; a run; negative indices from the end.
        assert_eq!(ascending_run(&[0], 3), Some(0));
        assert_eq!(ascending_run(&[2], 3), Some(2));
        assert_eq!(ascending_run(&[1, 2, 3], 6), Some(1));
        assert_eq!(ascending_run(&[-1], 4), Some(3));
        assert_eq!(ascending_run(&[-2, -1], 4), Some(2));
        assert_eq!(ascending_run(&[2, -1], 4), Some(2));
        // Not a run, out of range or empty: the gather.
        assert_eq!(ascending_run(&[0, 2], 4), None);
        assert_eq!(ascending_run(&[1, 0], 4), None);
        assert_eq!(ascending_run(&[3, 4], 4), None);
        assert_eq!(ascending_run(&[-5], 4), None);
        assert_eq!(ascending_run(&[4], 4), None);
        assert_eq!(ascending_run(&[], 4), None);
    }

    #[test]
    fn reshape_targets_resolve() {
        assert_eq!(
            resolve_shape(&[2, 3, 4], &[0, -1], false).unwrap(),
            vec![2, 12]
        );
        assert_eq!(resolve_shape(&[2, 3, 4], &[-1], false).unwrap(), vec![24]);
        assert!(resolve_shape(&[2, 3, 4], &[5, -1], false).is_err());
        assert!(resolve_shape(&[2, 3, 4], &[-1, -1], false).is_err());
        assert_eq!(resolve_shape(&[0, 3], &[0, 3], true).unwrap(), vec![0, 3]);
    }
}
