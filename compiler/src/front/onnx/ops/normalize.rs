//! The normalizations beyond BatchNorm/InstanceNorm/LayerNorm's main
//! output: LayerNormalization's Mean and InvStdDev outputs,
//! RMSNormalization (opset 23), GroupNormalization (18, 21),
//! MeanVarianceNormalization and LpNormalization, as TOSA reductions and
//! elementwise ops (`tcc.layer_norm` stays the lowering of
//! LayerNormalization's Y, see norm.rs).

use super::super::dtype::DType;
use super::super::emit::{Val, broadcast_shapes};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::shape::reshape_value;

/// Mean over `axes` (kept as size-1 dimensions).
fn mean_axes(imp: &mut Importer, x: &Val, axes: &[usize]) -> Result<Val> {
    let count: i64 = axes.iter().map(|&a| x.shape()[a]).product();
    let s = imp.e.reduce_axes("tosa.reduce_sum", x, axes);
    imp.e.scale(&s, 1.0 / count.max(1) as f64)
}

/// `x - mean` and `1 / sqrt(var + epsilon)` over `axes`, with the mean.
fn moments(imp: &mut Importer, x: &Val, axes: &[usize], epsilon: f64) -> Result<(Val, Val, Val)> {
    let mean = mean_axes(imp, x, axes)?;
    let d = imp.e.sub(x, &mean)?;
    let d2 = imp.e.mul(&d, &d)?;
    let var = mean_axes(imp, &d2, axes)?;
    let ve = imp.e.offset(&var, epsilon)?;
    let inv = imp.e.unary("tosa.rsqrt", &ve);
    Ok((d, mean, inv))
}

/// A parameter broadcast to `shape` (scale, bias).
fn param_to(imp: &mut Importer, v: &Value, shape: &[i64], dtype: DType, what: &str) -> Result<Val> {
    if v.dtype() != dtype {
        bail!("{what} is {}, the input {dtype}", v.dtype());
    }
    if broadcast_shapes(&v.shape(), shape).as_deref() != Some(shape) {
        bail!("{what} {:?} does not broadcast to {shape:?}", v.shape());
    }
    match v {
        Value::Const(c) if c.shape != shape && (c.numel() as i64) <= fold::FOLD_LIMIT => {
            imp.e.constant(&fold::broadcast(c, shape), what)
        }
        _ => imp.val(v),
    }
}

/// LayerNormalization's Mean and InvStdDev (outputs 1 and 2): the moments
/// of the normalized axes, kept as size-1 dimensions.
pub fn layer_norm_stats(
    imp: &mut Importer,
    node: &Node,
    x: &Val,
    axis: usize,
    epsilon: f64,
) -> Result<(Val, Val)> {
    let axes: Vec<usize> = (axis..x.rank()).collect();
    let (_, mean, inv) = moments(imp, x, &axes, epsilon)?;
    let stash = node.int("stash_type", 1)?;
    if stash != 1 {
        bail!("LayerNormalization stash_type {stash}: tcc computes the statistics in float32 (1)");
    }
    Ok((mean, inv))
}

pub fn rms_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "RMSNormalization's input")?;
    let x = imp.val(input)?;
    let rank = x.rank();
    let axis = node.axis(node.int("axis", -1)?, rank, "RMSNormalization axis")?;
    let epsilon = node.float("epsilon", 1e-5)? as f64;
    if epsilon.is_nan() || epsilon < 0.0 || !epsilon.is_finite() {
        bail!("RMSNormalization epsilon {epsilon}");
    }
    let stash = node.int("stash_type", 1)?;
    if stash != 1 {
        bail!("RMSNormalization stash_type {stash}: tcc computes in float32 (1)");
    }
    let axes: Vec<usize> = (axis..rank).collect();
    let sq = imp.e.mul(&x, &x)?;
    let ms = mean_axes(imp, &sq, &axes)?;
    let me = imp.e.offset(&ms, epsilon)?;
    let inv = imp.e.unary("tosa.rsqrt", &me);
    let normalized = imp.e.mul(&x, &inv)?;
    let shape = x.shape().to_vec();
    let scale = param_to(
        imp,
        node.input(1)?,
        &shape,
        x.dtype(),
        "RMSNormalization scale",
    )?;
    let y = imp.e.mul(&normalized, &scale)?;
    super::tensor(y)
}

pub fn group_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "GroupNormalization's input")?;
    let x = imp.val(input)?;
    if x.rank() < 3 {
        bail!("GroupNormalization needs an N x C x spatial input");
    }
    let groups = node
        .int_opt("num_groups")?
        .ok_or_else(|| ImportError::new("GroupNormalization needs num_groups"))?;
    let epsilon = node.float("epsilon", 1e-5)? as f64;
    let s = x.shape().to_vec();
    let (n, c) = (s[0], s[1]);
    if groups <= 0 || c % groups != 0 {
        bail!("GroupNormalization: {c} channels do not divide into {groups} groups");
    }
    if node.opset >= 21 && node.int("stash_type", 1)? != 1 {
        bail!("GroupNormalization stash_type: tcc computes in float32 (1)");
    }
    let spatial: i64 = s[2..].iter().product();
    let grouped = imp.e.reshape(&x, &[n, groups, (c / groups) * spatial]);
    let (d, _, inv) = moments(imp, &grouped, &[2], epsilon)?;
    let normalized = imp.e.mul(&d, &inv)?;
    // Opset 18: scale and bias per group; 21: per channel.
    let per_group = node.opset < 21 && node.input(1)?.shape() == [groups] && groups != c;
    let (y, shape) = if per_group {
        let scale = reshape_value(imp, node.input(1)?, &[1, groups, 1])?;
        let bias = reshape_value(imp, node.input(2)?, &[1, groups, 1])?;
        let scale = param_to(
            imp,
            &scale,
            &[1, groups, 1],
            x.dtype(),
            "GroupNormalization scale",
        )?;
        let bias = param_to(
            imp,
            &bias,
            &[1, groups, 1],
            x.dtype(),
            "GroupNormalization bias",
        )?;
        let scaled = imp.e.mul(&normalized, &scale)?;
        (imp.e.add(&scaled, &bias)?, s.clone())
    } else {
        for (i, what) in [(1, "scale"), (2, "bias")] {
            if node.input(i)?.shape() != [c] {
                bail!(
                    "GroupNormalization {what} has shape {:?}, expected [{c}]",
                    node.input(i)?.shape()
                );
            }
        }
        let flat = imp.e.reshape(&normalized, &[n, c, spatial]);
        let scale = reshape_value(imp, node.input(1)?, &[1, c, 1])?;
        let bias = reshape_value(imp, node.input(2)?, &[1, c, 1])?;
        let scale = param_to(
            imp,
            &scale,
            &[1, c, 1],
            x.dtype(),
            "GroupNormalization scale",
        )?;
        let bias = param_to(imp, &bias, &[1, c, 1], x.dtype(), "GroupNormalization bias")?;
        let scaled = imp.e.mul(&flat, &scale)?;
        (imp.e.add(&scaled, &bias)?, s.clone())
    };
    super::tensor(imp.e.reshape(&y, &shape))
}

pub fn mean_variance_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "MeanVarianceNormalization's input")?;
    let x = imp.val(input)?;
    let axes = node.ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let axes = node.axes(&axes, x.rank(), "MeanVarianceNormalization axis")?;
    // onnx's definition: (x - mean) / (sqrt(mean(x^2) - mean(x)^2) + 1e-9).
    let mean = mean_axes(imp, &x, &axes)?;
    let sq = imp.e.mul(&x, &x)?;
    let mean_sq = mean_axes(imp, &sq, &axes)?;
    let m2 = imp.e.mul(&mean, &mean)?;
    let var = imp.e.sub(&mean_sq, &m2)?;
    let std = imp
        .e
        .map(&[&var], var.ty.clone(), &|b, a| b.op("math.sqrt", &[a[0]]));
    let denominator = imp.e.offset(&std, 1e-9)?;
    let d = imp.e.sub(&x, &mean)?;
    super::tensor(imp.e.div(&d, &denominator)?)
}

pub fn lp_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "LpNormalization's input")?;
    let x = imp.val(input)?;
    let axis = node.axis(node.int("axis", -1)?, x.rank(), "LpNormalization axis")?;
    let p = node.int("p", 2)?;
    let norm = match p {
        1 => {
            let a = imp.e.unary("tosa.abs", &x);
            imp.e.reduce("tosa.reduce_sum", &a, axis)
        }
        2 => {
            let sq = imp.e.mul(&x, &x)?;
            let s = imp.e.reduce("tosa.reduce_sum", &sq, axis);
            imp.e
                .map(&[&s], s.ty.clone(), &|b, a| b.op("math.sqrt", &[a[0]]))
        }
        other => bail!("LpNormalization p = {other} (1 or 2)"),
    };
    // x / norm, with a zero norm giving 0 (not NaN) as onnxruntime does.
    let zero = imp.e.scalar(x.dtype(), x.rank(), 0.0);
    let one = imp.e.scalar(x.dtype(), x.rank(), 1.0);
    let is_zero = imp.e.binary_to("tosa.equal", &norm, &zero, DType::Bool)?;
    let safe = imp.e.select(&is_zero, &one, &norm)?;
    super::tensor(imp.e.div(&x, &safe)?)
}
