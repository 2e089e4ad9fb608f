//! Data movement along axes: Concat, Split, Slice, Gather, Expand and Tile,
//! folded on constants at import time and emitted with TOSA on tensors.

use super::super::dtype::checked_numel;
use super::super::emit::broadcast_shapes;
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::one;
use super::shape::{gather_tensor, strided_slice_value};

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
    // Concat-1 took the axis as optional (default 1); opset 4 requires it.
    let axis = match node.int_opt("axis")? {
        Some(axis) => axis,
        None if node.opset < 4 => 1,
        None => bail!("Concat needs an axis"),
    };
    let axis = node.axis(axis, parts[0].rank(), "Concat axis")?;
    one(concat_values(imp, &parts, axis)?)
}

pub fn split(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    let axis = node.axis(node.int("axis", 0)?, shape.len(), "Split axis")?;
    let outputs = node.proto.output.len();
    let dim = shape[axis];
    // Split-1 took the sizes as an attribute or a second input; Split-2
    // to -11 as an attribute, Split-13 as an input.
    let sizes_input = node.opset >= 13 || (node.opset < 2 && node.opt(1).is_some());
    let sizes = match if sizes_input {
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
        // An empty axis stays empty (with a negative step the clamps
        // above would otherwise give it one element).
        let size = if d > 0 && (span > 0) == (step > 0) && span != 0 {
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
                bytes: c.bytes.slice(..c.dtype.size()),
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
    let repeats = if node.opset < 6 {
        // Tile-1: `tiles` copies along the one axis `axis` (both scalar
        // inputs).
        let one_of = |index: usize, what: &str| -> Result<i64> {
            match node.const_ints(index, what)?.as_deref() {
                Some([value]) => Ok(*value),
                Some(other) => bail!("Tile-1's {what} must be one integer, not {other:?}"),
                None => bail!("Tile-1 needs {what}"),
            }
        };
        let (tiles, axis) = (one_of(1, "tiles")?, one_of(2, "axis")?);
        let axis = node.axis(axis, x.rank(), "Tile axis")?;
        let mut repeats = vec![1; x.rank()];
        repeats[axis] = tiles;
        repeats
    } else {
        node.const_ints(1, "the repeats")?
            .ok_or_else(|| ImportError::new("Tile needs repeats"))?
    };
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
