//! Normalizations (BatchNormalization, InstanceNormalization,
//! LayerNormalization, LRN) and Softmax/LogSoftmax.

use super::super::dtype::DType;
use super::super::emit::{Attr, Val, broadcast_shapes};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::reshape_value;
use super::tensor;

/// A per-channel [C] parameter as [1, C, 1, ...] for a rank-`rank` input.
fn channel_param(imp: &mut Importer, v: &Value, c: i64, rank: usize, what: &str) -> Result<Val> {
    if v.shape() != [c] {
        bail!("{what} has shape {:?}, expected [{c}]", v.shape());
    }
    let mut shape = vec![1; rank];
    shape[1] = c;
    let r = reshape_value(imp, v, &shape)?;
    imp.val(&r)
}

pub fn batch_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "BatchNormalization's input")?;
    let x = imp.val(input)?;
    if x.rank() < 2 {
        bail!("BatchNormalization needs an N x C x ... input");
    }
    if node.int("training_mode", 0)? != 0 {
        bail!(
            "BatchNormalization with training_mode = 1 is a training op (it updates the running statistics): tcc compiles inference graphs"
        );
    }
    if node.opset < 9 && node.int("spatial", 1)? == 0 {
        bail!("BatchNormalization with spatial = 0 is not supported");
    }
    let epsilon = node.float("epsilon", 1e-5)? as f64;
    let c = x.shape()[1];
    let rank = x.rank();
    let params: Vec<&Value> = (1..5).map(|i| node.input(i)).collect::<Result<_>>()?;
    let y = if let [Some(scale), Some(bias), Some(mean), Some(var)] = [
        params[0].as_const(),
        params[1].as_const(),
        params[2].as_const(),
        params[3].as_const(),
    ] && c <= fold::FOLD_LIMIT
    {
        // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
        for (p, name) in [(scale, "scale"), (bias, "B"), (mean, "mean"), (var, "var")] {
            if p.shape != [c] {
                bail!(
                    "BatchNormalization {name} has shape {:?}, expected [{c}]",
                    p.shape
                );
            }
        }
        let (s, b, m, v) = (scale.f64s(), bias.f64s(), mean.f64s(), var.f64s());
        let a: Vec<f64> = (0..c as usize)
            .map(|i| s[i] / (v[i] + epsilon).sqrt())
            .collect();
        let shift: Vec<f64> = (0..c as usize).map(|i| b[i] - m[i] * a[i]).collect();
        let mut shape = vec![1; rank];
        shape[1] = c;
        let a = imp
            .e
            .constant(&Const::from_f64(x.dtype(), shape.clone(), &a), "bn_scale")?;
        let shift = imp
            .e
            .constant(&Const::from_f64(x.dtype(), shape, &shift), "bn_shift")?;
        let xa = imp.e.mul(&x, &a)?;
        imp.e.add(&xa, &shift)?
    } else {
        let scale = channel_param(imp, params[0], c, rank, "scale")?;
        let bias = channel_param(imp, params[1], c, rank, "B")?;
        let mean = channel_param(imp, params[2], c, rank, "mean")?;
        let var = channel_param(imp, params[3], c, rank, "var")?;
        let ve = imp.e.offset(&var, epsilon)?;
        let inv = imp.e.unary("tosa.rsqrt", &ve);
        let a = imp.e.mul(&scale, &inv)?;
        let d = imp.e.sub(&x, &mean)?;
        let da = imp.e.mul(&d, &a)?;
        imp.e.add(&da, &bias)?
    };
    tensor(y)
}

pub fn instance_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "InstanceNormalization's input")?;
    let x = imp.val(input)?;
    if x.rank() < 3 {
        bail!("InstanceNormalization needs an N x C x spatial input");
    }
    let epsilon = node.float("epsilon", 1e-5)? as f64;
    let s = x.shape().to_vec();
    let (n, c) = (s[0], s[1]);
    let spatial: i64 = s[2..].iter().product();
    let flat = imp.e.reshape(&x, &[n, c, spatial]);
    let sum = imp.e.reduce("tosa.reduce_sum", &flat, 2);
    let mean = imp.e.scale(&sum, 1.0 / spatial as f64)?;
    let d = imp.e.sub(&flat, &mean)?;
    let d2 = imp.e.mul(&d, &d)?;
    let var_sum = imp.e.reduce("tosa.reduce_sum", &d2, 2);
    let var = imp.e.scale(&var_sum, 1.0 / spatial as f64)?;
    let ve = imp.e.offset(&var, epsilon)?;
    let inv = imp.e.unary("tosa.rsqrt", &ve);
    let normalized = imp.e.mul(&d, &inv)?;
    let scale = channel_param(imp, node.input(1)?, c, 3, "scale")?;
    let bias = channel_param(imp, node.input(2)?, c, 3, "B")?;
    let scaled = imp.e.mul(&normalized, &scale)?;
    let y = imp.e.add(&scaled, &bias)?;
    tensor(imp.e.reshape(&y, &s))
}

pub fn layer_norm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "LayerNormalization's input")?;
    let x = imp.val(input)?;
    let rank = x.rank();
    let axis = node.axis(node.int("axis", -1)?, rank, "LayerNormalization axis")?;
    let epsilon = node.float("epsilon", 1e-5)?;
    if epsilon <= 0.0 || !epsilon.is_finite() {
        bail!("LayerNormalization epsilon {epsilon} must be positive");
    }
    let normalized = x.shape()[axis..].to_vec();
    let param = |imp: &mut Importer, v: &Value, what: &str| -> Result<Val> {
        if v.dtype() != x.dtype() {
            bail!(
                "LayerNormalization {what} is {}, the input {}",
                v.dtype(),
                x.dtype()
            );
        }
        if v.shape() == normalized {
            return imp.val(v);
        }
        if broadcast_shapes(&v.shape(), &normalized).as_deref() != Some(&normalized[..]) {
            bail!(
                "LayerNormalization {what} {:?} does not broadcast to {normalized:?}",
                v.shape()
            );
        }
        match v {
            Value::Const(c) => imp.e.constant(&fold::broadcast(c, &normalized), what),
            Value::Tensor(t) => imp.e.broadcast_to(t, &normalized),
        }
    };
    let scale = param(imp, node.input(1)?, "scale")?;
    let bias = match node.opt(2) {
        Some(b) => param(imp, b, "bias")?,
        None => imp.e.splat(x.dtype(), normalized.clone(), 0.0),
    };
    let attrs = [
        ("axis", Attr::i64(axis)),
        ("epsilon", Attr::Float(epsilon as f64, DType::F32)),
    ];
    let ty = x.ty.clone();
    let y = imp.e.op("tcc.layer_norm", &[&x, &scale, &bias], &attrs, ty);
    // Mean and InvStdDev, when the graph uses them.
    let wanted = |i: usize| node.proto.output.get(i).is_some_and(|n| !n.is_empty());
    if !wanted(1) && !wanted(2) {
        return tensor(y);
    }
    let (mean, inv) = super::normalize::layer_norm_stats(imp, node, &x, axis, epsilon as f64)?;
    Ok(vec![
        Value::Tensor(y),
        Value::Tensor(mean),
        Value::Tensor(inv),
    ])
}

pub fn lrn(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "LRN's input")?;
    let x = imp.val(input)?;
    if x.rank() < 3 {
        bail!("LRN needs an N x C x spatial input");
    }
    let size = node
        .int_opt("size")?
        .ok_or_else(|| ImportError::new("LRN needs 'size'"))?;
    if size <= 0 || size > 1024 {
        bail!("LRN size {size} (1 to 1024 supported)");
    }
    let alpha = node.float("alpha", 1e-4)? as f64;
    let beta = node.float("beta", 0.75)? as f64;
    let bias = node.float("bias", 1.0)? as f64;
    let c = x.shape()[1];
    let sq = imp.e.mul(&x, &x)?;
    let mut pads = vec![(0, 0); x.rank()];
    pads[1] = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let padded = imp.e.pad(&sq, &pads, 0.0);
    let mut sum = imp.e.slice_axis(&padded, 1, 0, c);
    for i in 1..size {
        let part = imp.e.slice_axis(&padded, 1, i, i + c);
        sum = imp.e.add(&sum, &part)?;
    }
    let scaled = imp.e.scale(&sum, alpha / size as f64)?;
    let base = imp.e.offset(&scaled, bias)?;
    let exponent = imp.e.scalar(x.dtype(), x.rank(), -beta);
    let factor = imp.e.binary("tosa.pow", &base, &exponent)?;
    tensor(imp.e.mul(&x, &factor)?)
}

pub fn softmax(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, &format!("{}'s input", node.op()))?;
    let x = imp.val(input)?;
    let rank = x.rank();
    if rank == 0 {
        bail!("{} of a scalar", node.op());
    }
    let name = if node.op() == "Softmax" {
        "tcc.softmax"
    } else {
        "tcc.log_softmax"
    };
    let default = if node.opset < 13 { 1 } else { -1 };
    let axis = node.axis(node.int("axis", default)?, rank, "axis")?;
    if node.opset < 13 && axis != rank - 1 {
        // Before opset 13 the input is coerced to 2-D at `axis`.
        let s = x.shape().to_vec();
        let outer: i64 = s[..axis].iter().product();
        let inner: i64 = s[axis..].iter().product();
        let flat = imp.e.reshape(&x, &[outer, inner]);
        let ty = flat.ty.clone();
        let y = imp.e.op(name, &[&flat], &[("axis", Attr::i64(1))], ty);
        return tensor(imp.e.reshape(&y, &s));
    }
    let ty = x.ty.clone();
    tensor(imp.e.op(name, &[&x], &[("axis", Attr::i64(axis))], ty))
}
