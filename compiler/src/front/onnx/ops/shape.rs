//! Shapes and data movement: constants, Shape/Size, reshapes, transposes,
//! concatenation, slicing, gathers, padding. Each works on constants at
//! import time (so shape computations fold) and on tensors with TOSA.

use std::path::Path;

use super::super::dtype::{DType, MAX_ELEMENTS, checked_numel};
use super::super::emit::{Val, broadcast_shapes};
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
    let t = imp.val(v)?;
    if sizes.contains(&0) {
        bail!(
            "slicing {} produces an empty tensor, which tcc does not support",
            t.ty
        );
    }
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

/// ONNX Gather of a tensor along `axis` as a `tosa.gather` on [1, K, rest].
fn gather_tensor(imp: &mut Importer, data: &Val, axis: usize, indices: &Value) -> Result<Val> {
    let k = data.shape()[axis];
    let index_shape = indices.shape();
    let count: i64 = index_shape.iter().product();
    if count == 0 {
        bail!("Gather with no indices produces an empty tensor, which tcc does not support");
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
        "",
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
        bytes: value.bytes[..value.dtype.size()].to_vec(),
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
        if node.opset >= 12
            && let Some(training) = node.const_input(2, "training_mode")?
            && training.numel() == 1
            && training.i64_at(0) != 0
        {
            bail!("Dropout in training mode is not supported");
        }
        if node.opset < 7 && node.int("is_test", 0)? == 0 && node.proto.output.len() > 1 {
            bail!("Dropout in training mode (is_test = 0) is not supported");
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

pub fn concat_values(imp: &mut Importer, parts: &[&Value], axis: usize) -> Result<Value> {
    let first = parts[0].ty();
    for p in parts {
        let t = p.ty();
        if t.dtype != first.dtype
            || t.rank() != first.rank()
            || (0..t.rank()).any(|a| a != axis && t.shape[a] != first.shape[a])
        {
            bail!("Concat of {first} and {t} along axis {axis}");
        }
    }
    let total: i64 = parts.iter().map(|p| p.ty().numel()).sum();
    if parts.iter().all(|p| p.as_const().is_some()) && total <= fold::FOLD_LIMIT {
        let consts: Vec<&Const> = parts.iter().map(|p| p.as_const().unwrap()).collect();
        return Ok(Value::constant(fold::concat(&consts, axis)));
    }
    let mut vals = Vec::new();
    for p in parts {
        if p.shape()[axis] != 0 {
            vals.push(imp.val(p)?);
        }
    }
    Ok(Value::Tensor(imp.e.concat(&vals, axis)))
}

pub fn concat_op(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let parts: Vec<&Value> = node.inputs.iter().flatten().collect();
    if parts.is_empty() {
        bail!("Concat needs inputs");
    }
    let axis = node
        .int_opt("axis")?
        .ok_or_else(|| ImportError::new("Concat needs an axis"))?;
    let axis = node.axis(axis, parts[0].rank(), "Concat axis")?;
    one(concat_values(imp, &parts, axis)?)
}

pub fn split(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    let axis = node.axis(node.int("axis", 0)?, shape.len(), "Split axis")?;
    let outputs = node.proto.output.len();
    let dim = shape[axis];
    let sizes = match if node.opset >= 13 {
        node.const_ints(1, "the split sizes")?
    } else {
        node.ints("split")?
    } {
        Some(s) if !s.is_empty() => s,
        _ => {
            let n = node.int_opt("num_outputs")?.unwrap_or(outputs as i64);
            if n <= 0 {
                bail!("Split into {n} outputs");
            }
            let chunk = (dim + n - 1) / n;
            (0..n).map(|i| chunk.min(dim - i * chunk).max(0)).collect()
        }
    };
    if sizes.len() != outputs
        || sizes.iter().any(|&s| s < 0)
        || sizes.iter().try_fold(0i64, |a, &b| a.checked_add(b)) != Some(dim)
    {
        bail!("Split sizes {sizes:?} do not divide dimension {dim} into {outputs} outputs");
    }
    let mut out = Vec::new();
    let mut start = 0;
    let rank = shape.len();
    for size in sizes {
        let mut starts = vec![0; rank];
        let mut sizes_ = shape.clone();
        starts[axis] = start;
        sizes_[axis] = size;
        out.push(strided_slice_value(
            imp,
            x,
            &starts,
            &vec![1; rank],
            &sizes_,
        )?);
        start += size;
    }
    Ok(out)
}

pub fn slice_op(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    let rank = shape.len();
    let (starts, ends, axes, steps) = if node.opset < 10 {
        let starts = node
            .ints("starts")?
            .ok_or_else(|| ImportError::new("Slice needs starts"))?;
        let ends = node
            .ints("ends")?
            .ok_or_else(|| ImportError::new("Slice needs ends"))?;
        (starts, ends, node.ints("axes")?, None)
    } else {
        let starts = node
            .const_ints(1, "starts")?
            .ok_or_else(|| ImportError::new("Slice needs starts"))?;
        let ends = node
            .const_ints(2, "ends")?
            .ok_or_else(|| ImportError::new("Slice needs ends"))?;
        (
            starts,
            ends,
            node.const_ints(3, "axes")?,
            node.const_ints(4, "steps")?,
        )
    };
    let axes: Vec<i64> = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps: Vec<i64> = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        bail!("Slice starts, ends, axes and steps differ in length");
    }
    let mut out_start = vec![0; rank];
    let mut out_step = vec![1; rank];
    let mut out_size = shape.clone();
    let mut seen = vec![false; rank];
    for i in 0..starts.len() {
        let a = node.axis(axes[i], rank, "Slice axis")?;
        if std::mem::replace(&mut seen[a], true) {
            bail!("Slice axis {a} appears twice");
        }
        let d = shape[a];
        let step = steps[i];
        if step == 0 {
            bail!("Slice step 0");
        }
        let fix = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (start, end) = if step > 0 {
            (fix(starts[i]).clamp(0, d), fix(ends[i]).clamp(0, d))
        } else {
            (
                fix(starts[i]).clamp(0, (d - 1).max(0)),
                fix(ends[i]).clamp(-1, d - 1),
            )
        };
        let span = end as i128 - start as i128;
        let size = if (span > 0) == (step > 0) && span != 0 {
            ((span.abs() + step.unsigned_abs() as i128 - 1) / step.unsigned_abs() as i128) as i64
        } else {
            0
        };
        out_start[a] = start;
        out_step[a] = step;
        out_size[a] = size;
    }
    one(strided_slice_value(
        imp, x, &out_start, &out_step, &out_size,
    )?)
}

pub fn gather_op(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let data = node.input(0)?;
    let indices = node.input(1)?;
    if !indices.dtype().is_int() {
        bail!("Gather indices must be integers, not {}", indices.dtype());
    }
    let rank = data.rank();
    if rank == 0 {
        bail!("Gather of a scalar");
    }
    let axis = node.axis(node.int("axis", 0)?, rank, "Gather axis")?;
    let k = data.shape()[axis];
    if let (Value::Const(c), Value::Const(i)) = (data, indices)
        && (i.numel() as i64) <= fold::FOLD_LIMIT
        && checked_numel(&c.shape)
            .is_some_and(|n| n / c.shape[axis].max(1) * i.numel() as i64 <= fold::FOLD_LIMIT)
    {
        let mut values = i.i64s();
        for v in values.iter_mut() {
            if *v < -k || *v >= k {
                bail!("Gather index {v} is out of range for a dimension of {k}");
            }
            if *v < 0 {
                *v += k;
            }
        }
        return one(Value::constant(fold::gather(c, axis, &values, &i.shape)));
    }
    let d = imp.val(data)?;
    one(Value::Tensor(gather_tensor(imp, &d, axis, indices)?))
}

pub fn expand(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let target = node
        .const_ints(1, "the shape")?
        .ok_or_else(|| ImportError::new("Expand needs a shape"))?;
    let Some(shape) = broadcast_shapes(&x.shape(), &target) else {
        bail!(
            "Expand of {:?} to {target:?}: shapes do not broadcast",
            x.shape()
        );
    };
    if checked_numel(&shape).is_none() {
        bail!("Expand to the invalid shape {shape:?}");
    }
    if let Value::Const(c) = x
        && (c.uniform() || checked_numel(&shape).unwrap() <= fold::FOLD_LIMIT)
    {
        let folded = if c.uniform() && c.numel() > 0 {
            Const {
                dtype: c.dtype,
                shape,
                bytes: c.bytes[..c.dtype.size()].to_vec(),
                splat: true,
            }
        } else {
            fold::broadcast(c, &shape)
        };
        return one(Value::constant(folded));
    }
    let t = imp.val(x)?;
    one(Value::Tensor(imp.e.broadcast_to(&t, &shape)?))
}

pub fn tile_op(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let repeats = node
        .const_ints(1, "the repeats")?
        .ok_or_else(|| ImportError::new("Tile needs repeats"))?;
    if repeats.len() != x.rank() || repeats.iter().any(|&r| r < 0) {
        bail!("Tile repeats {repeats:?} for rank {}", x.rank());
    }
    let shape: Vec<i64> = x
        .shape()
        .iter()
        .zip(&repeats)
        .map(|(d, r)| d.saturating_mul(*r))
        .collect();
    if checked_numel(&shape).is_none_or(|n| n == 0) {
        bail!("Tile to the shape {shape:?} is not supported");
    }
    let t = imp.val(x)?;
    one(Value::Tensor(imp.e.tile(&t, &repeats)))
}

pub fn pad(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let rank = x.rank();
    let (pads, value, axes) = if node.opset < 11 {
        let pads = match node.ints("pads")? {
            Some(p) => p,
            None => node
                .ints("paddings")?
                .ok_or_else(|| ImportError::new("Pad needs pads"))?,
        };
        (pads, node.float("value", 0.0)? as f64, None)
    } else {
        let pads = node
            .const_ints(1, "the pads")?
            .ok_or_else(|| ImportError::new("Pad needs pads"))?;
        let value = match node.const_input(2, "the constant value")? {
            Some(c) if c.numel() == 1 => c.f64_at(0),
            Some(_) => bail!("Pad's constant value must have one element"),
            None => 0.0,
        };
        (
            pads,
            value,
            if node.opset >= 18 {
                node.const_ints(3, "the axes")?
            } else {
                None
            },
        )
    };
    let axes: Vec<usize> = match axes {
        Some(a) => {
            let mut out = Vec::new();
            for v in a {
                out.push(node.axis(v, rank, "Pad axis")?);
            }
            out
        }
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        bail!("Pad has {} pads for {} axes", pads.len(), axes.len());
    }
    if pads.iter().any(|p| p.unsigned_abs() > MAX_ELEMENTS as u64) {
        bail!("Pad with pads {pads:?} out of range");
    }
    let mut per_axis = vec![(0i64, 0i64); rank];
    for (i, &a) in axes.iter().enumerate() {
        per_axis[a] = (pads[i], pads[i + axes.len()]);
    }
    let mode = node.string("mode", "constant")?;
    let mut t = imp.val(x)?;
    // Negative pads crop.
    let shape = t.shape().to_vec();
    let start: Vec<i64> = per_axis.iter().map(|&(b, _)| (-b).max(0)).collect();
    let mut size = shape.clone();
    for a in 0..rank {
        size[a] = shape[a] - start[a] - (-per_axis[a].1).max(0);
        if size[a] <= 0 {
            bail!("Pad crops dimension {a} of {shape:?} away");
        }
    }
    t = imp.e.slice(&t, &start, &size);
    let positive: Vec<(i64, i64)> = per_axis
        .iter()
        .map(|&(b, e)| (b.max(0), e.max(0)))
        .collect();
    if checked_numel(
        &t.shape()
            .iter()
            .zip(&positive)
            .map(|(d, (b, e))| d.saturating_add(*b).saturating_add(*e))
            .collect::<Vec<_>>(),
    )
    .is_none()
    {
        bail!("Pad to a too large shape");
    }
    let y = match mode.as_str() {
        "constant" => imp.e.pad(&t, &positive, value),
        "reflect" | "edge" | "wrap" => {
            let mut y = t;
            for (a, &(b, e)) in positive.iter().enumerate() {
                if b == 0 && e == 0 {
                    continue;
                }
                let n = y.shape()[a];
                let mut parts = Vec::new();
                match mode.as_str() {
                    "reflect" => {
                        if b >= n || e >= n {
                            bail!(
                                "reflect padding of {b}, {e} needs a dimension larger than {}, not {n}",
                                b.max(e)
                            );
                        }
                        for i in (1..=b).rev() {
                            parts.push(imp.e.slice_axis(&y, a, i, i + 1));
                        }
                        parts.push(y.clone());
                        for i in 1..=e {
                            parts.push(imp.e.slice_axis(&y, a, n - 1 - i, n - i));
                        }
                    }
                    "edge" => {
                        let mut multiples = vec![1; y.rank()];
                        if b > 0 {
                            let first = imp.e.slice_axis(&y, a, 0, 1);
                            multiples[a] = b;
                            parts.push(imp.e.tile(&first, &multiples));
                        }
                        parts.push(y.clone());
                        if e > 0 {
                            let last = imp.e.slice_axis(&y, a, n - 1, n);
                            multiples[a] = e;
                            parts.push(imp.e.tile(&last, &multiples));
                        }
                    }
                    _ => {
                        if b > n || e > n {
                            bail!("wrap padding larger than the dimension");
                        }
                        if b > 0 {
                            parts.push(imp.e.slice_axis(&y, a, n - b, n));
                        }
                        parts.push(y.clone());
                        if e > 0 {
                            parts.push(imp.e.slice_axis(&y, a, 0, e));
                        }
                    }
                }
                y = imp.e.concat(&parts, a);
            }
            y
        }
        other => bail!("Pad mode '{other}' is not supported"),
    };
    one(Value::Tensor(y))
}

pub fn depth_space(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    if shape.len() != 4 {
        bail!("{} needs a 4-D input", node.op());
    }
    let b = node
        .int_opt("blocksize")?
        .ok_or_else(|| ImportError::new("blocksize is required"))?;
    if b <= 0 {
        bail!("blocksize {b}");
    }
    let (n, c, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let y = if node.op() == "DepthToSpace" {
        if b.checked_mul(b).is_none_or(|bb| c % bb != 0) {
            bail!("DepthToSpace: {c} channels are not a multiple of {b} x {b}");
        }
        let cc = c / (b * b);
        let (split, perm): (Vec<i64>, [usize; 6]) = if node.string("mode", "DCR")? == "CRD" {
            (vec![n, cc, b, b, h, w], [0, 1, 4, 2, 5, 3])
        } else {
            (vec![n, b, b, cc, h, w], [0, 3, 4, 1, 5, 2])
        };
        let r = reshape_value(imp, x, &split)?;
        let t = transpose_value(imp, &r, &perm)?;
        reshape_value(imp, &t, &[n, cc, h * b, w * b])?
    } else {
        if h % b != 0 || w % b != 0 {
            bail!("SpaceToDepth: {h}x{w} is not a multiple of {b}");
        }
        let r = reshape_value(imp, x, &[n, c, h / b, b, w / b, b])?;
        let t = transpose_value(imp, &r, &[0, 3, 5, 1, 2, 4])?;
        reshape_value(imp, &t, &[n, c * b * b, h / b, w / b])?
    };
    one(y)
}

#[cfg(test)]
mod tests {
    use super::*;

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
