//! `DeformConv` (opset 19, 22): a 2-D convolution whose taps are moved by
//! run-time offsets (and scaled by an optional mask). A bilinear sample at
//! `(y, x)` with zeros outside the image is `Σ_h Σ_w t(y - h) X[h, w]
//! t(x - w)` with the tent `t(d) = max(0, 1 - |d|)`, so every tap of every
//! output position is sampled by a batched matmul of the tent weights with
//! the image (rows), a product with the column weights and a sum; the
//! samples then meet the filter in one batched matmul per group. Dense:
//! the work grows with `positions x taps x H x W x channels`, fine for the
//! small feature maps this op is used on in detection heads.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::{reshape_value, transpose_value};
use super::{int_attr, one, synthetic};

pub fn deform_conv(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    let w = node.input(1)?.clone();
    let offset = node.input(2)?.clone();
    let bias = node.opt(3).cloned();
    let mask = node.opt(4).cloned();
    require_float(&x, "DeformConv's input")?;
    if x.dtype() != DType::F32 {
        bail!("DeformConv computes in float32, not {}", x.dtype());
    }
    let (xs, ws) = (x.shape().to_vec(), w.shape().to_vec());
    if xs.len() != 4 || ws.len() != 4 {
        bail!(
            "DeformConv takes 2-D images ([N, C, H, W] and [oC, C/group, kH, kW]), not {:?} and {:?}",
            xs,
            ws
        );
    }
    let (n, c, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (oc, cw, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let attr2 = |name: &str, default: i64| -> Result<[i64; 2]> {
        match node.ints(name)?.as_deref() {
            None => Ok([default; 2]),
            Some([a, b]) => Ok([*a, *b]),
            Some(v) => bail!("DeformConv's {name} {v:?} must have 2 values"),
        }
    };
    if let Some(k) = node.ints("kernel_shape")?
        && k != [kh, kw]
    {
        bail!("DeformConv's kernel_shape {k:?} is not the weights' [{kh}, {kw}]");
    }
    let strides = attr2("strides", 1)?;
    let dilations = attr2("dilations", 1)?;
    let pads = match node.ints("pads")?.as_deref() {
        None => [0; 4],
        Some([a, b, c, d]) => [*a, *b, *c, *d],
        Some(v) => bail!("DeformConv's pads {v:?} must have 4 values"),
    };
    let group = node.int("group", 1)?;
    let offset_group = node.int("offset_group", 1)?;
    if strides.iter().chain(&dilations).any(|&v| v < 1) || pads.iter().any(|&p| p < 0) {
        bail!("DeformConv's strides and dilations must be positive and its pads not negative");
    }
    if group < 1 || c % group != 0 || oc % group != 0 || cw * group != c {
        bail!(
            "DeformConv's group {group} does not split the {c} input channels into the weights' {cw} per group (and {oc} output channels)"
        );
    }
    if offset_group < 1 || c % offset_group != 0 {
        bail!("DeformConv's offset_group {offset_group} does not divide the {c} input channels");
    }
    let out = |size: i64, k: i64, axis: usize| {
        (size + pads[axis] + pads[axis + 2] - dilations[axis] * (k - 1) - 1) / strides[axis] + 1
    };
    let (oh, ow) = (out(h, kh, 0), out(wd, kw, 1));
    if oh < 1 || ow < 1 {
        bail!("DeformConv's output would be empty ({oh} x {ow})");
    }
    let (g, k) = (offset_group, kh * kw);
    let cg = c / g;
    if offset.shape() != [n, g * 2 * k, oh, ow] {
        bail!(
            "DeformConv's offset is {:?}, not [{n}, {}, {oh}, {ow}]",
            offset.shape(),
            g * 2 * k
        );
    }
    let p = k * oh * ow;
    if (n * g * p).saturating_mul(cg * wd.max(h)) > 1 << 28 {
        bail!(
            "DeformConv of {n}x{c}x{h}x{wd} with {k} taps at {oh}x{ow} positions is larger than tcc's dense sampling takes"
        );
    }
    // The tent weights of one axis: [N*G, P, size] for the offsets'
    // component `which` (0: y, 1: x).
    let mut tents = |which: i64, size: i64| -> Result<Value> {
        let d = reshape_value(imp, &offset, &[n, g, k, 2, oh, ow])?;
        let d = synthetic(
            imp,
            "Gather",
            vec![
                d,
                Value::constant(Const::from_i64(DType::I64, vec![], &[which])),
            ],
            vec![int_attr("axis", 3)],
        )?;
        // Each tap's undeformed position.
        let mut base = vec![0.0; (k * oh * ow) as usize];
        for i in 0..kh {
            for j in 0..kw {
                for a in 0..oh {
                    for b in 0..ow {
                        let at = (((i * kw + j) * oh + a) * ow + b) as usize;
                        base[at] = if which == 0 {
                            (a * strides[0] - pads[0] + i * dilations[0]) as f64
                        } else {
                            (b * strides[1] - pads[1] + j * dilations[1]) as f64
                        };
                    }
                }
            }
        }
        let base = Value::constant(Const::from_f64(DType::F32, vec![1, 1, k, oh, ow], &base));
        let at = synthetic(imp, "Add", vec![d, base], vec![])?;
        let at = reshape_value(imp, &at, &[n * g, p, 1])?;
        let grid: Vec<f64> = (0..size).map(|v| v as f64).collect();
        let grid = Value::constant(Const::from_f64(DType::F32, vec![1, 1, size], &grid));
        let dist = synthetic(imp, "Sub", vec![at, grid], vec![])?;
        let dist = synthetic(imp, "Abs", vec![dist], vec![])?;
        let one_minus = synthetic(
            imp,
            "Sub",
            vec![
                Value::constant(Const::from_f64(DType::F32, vec![1, 1, 1], &[1.0])),
                dist,
            ],
            vec![],
        )?;
        synthetic(imp, "Relu", vec![one_minus], vec![])
    };
    let ty = tents(0, h)?;
    let tx = tents(1, wd)?;
    // The image as [N*G, H, Cg*W].
    let image = reshape_value(imp, &x, &[n, g, cg, h, wd])?;
    let image = transpose_value(imp, &image, &[0, 1, 3, 2, 4])?;
    let image = reshape_value(imp, &image, &[n * g, h, cg * wd])?;
    let rows = synthetic(imp, "MatMul", vec![ty, image], vec![])?;
    let rows = reshape_value(imp, &rows, &[n * g, p, cg, wd])?;
    let tx = reshape_value(imp, &tx, &[n * g, p, 1, wd])?;
    let weighted = synthetic(imp, "Mul", vec![rows, tx], vec![])?;
    let mut samples = synthetic(
        imp,
        "ReduceSum",
        vec![weighted, Value::constant(Const::i64_vector(&[3]))],
        vec![int_attr("keepdims", 0)],
    )?;
    if let Some(m) = mask {
        if m.shape() != [n, g * k, oh, ow] {
            bail!(
                "DeformConv's mask is {:?}, not [{n}, {}, {oh}, {ow}]",
                m.shape(),
                g * k
            );
        }
        let m = reshape_value(imp, &m, &[n * g, p, 1])?;
        samples = synthetic(imp, "Mul", vec![samples, m], vec![])?;
    }
    // [N, G, K, oH*oW, Cg] -> [N, C, K, oH*oW] -> per conv group
    // [N, group, Cw*K, oH*oW].
    let samples = reshape_value(imp, &samples, &[n, g, k, oh * ow, cg])?;
    let samples = transpose_value(imp, &samples, &[0, 1, 4, 2, 3])?;
    let samples = reshape_value(imp, &samples, &[n, group, cw * k, oh * ow])?;
    let filters = reshape_value(imp, &w, &[1, group, oc / group, cw * k])?;
    let y = synthetic(imp, "MatMul", vec![filters, samples], vec![])?;
    let mut y = reshape_value(imp, &y, &[n, oc, oh, ow])?;
    if let Some(b) = bias {
        if b.shape() != [oc] {
            bail!("DeformConv's bias is {:?}, not [{oc}]", b.shape());
        }
        let b = reshape_value(imp, &b, &[1, oc, 1, 1])?;
        y = synthetic(imp, "Add", vec![y, b], vec![])?;
    }
    one(y)
}
