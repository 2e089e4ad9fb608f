//! Contractions (MatMul, Gemm, Conv, ConvTranspose), normalizations and
//! softmax.

use super::super::dtype::{DType, TType};
use super::super::emit::{Val, array_i64, broadcast_shapes};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::one;
use super::pool::{Window, crop, padding, per_axis, to_channels_first, to_channels_last};
use super::shape::{reshape_value, strided_slice_value, transpose_value};

/// Grouped convolutions (other than depthwise) become one convolution per
/// group; more groups than this are rejected.
const MAX_GROUPS: i64 = 1024;

fn tensor(v: Val) -> Result<Vec<Value>> {
    one(Value::Tensor(v))
}

pub fn matmul(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    require_float(a, "MatMul's A")?;
    if a.dtype() != b.dtype() {
        bail!("MatMul of {} and {}", a.dtype(), b.dtype());
    }
    if a.rank() == 0 || b.rank() == 0 {
        bail!("MatMul of a scalar");
    }
    let a = imp.val(a)?;
    let b = imp.val(b)?;
    tensor(matmul_vals(imp, &a, &b)?)
}

/// numpy `matmul` (1-D promotion, broadcast batch dimensions).
pub fn matmul_vals(imp: &mut Importer, a: &Val, b: &Val) -> Result<Val> {
    let (a_vec, b_vec) = (a.rank() == 1, b.rank() == 1);
    let a = if a_vec {
        imp.e.reshape(a, &[1, a.shape()[0]])
    } else {
        a.clone()
    };
    let b = if b_vec {
        imp.e.reshape(b, &[b.shape()[0], 1])
    } else {
        b.clone()
    };
    let (ra, rb) = (a.rank(), b.rank());
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
    if k != k2 {
        bail!(
            "MatMul of {:?} and {:?}: inner dimensions differ",
            a.shape(),
            b.shape()
        );
    }
    let (batch_a, batch_b) = (&a.shape()[..ra - 2], &b.shape()[..rb - 2]);
    let Some(batch) = broadcast_shapes(batch_a, batch_b) else {
        bail!("MatMul batch dimensions {batch_a:?} and {batch_b:?} do not broadcast");
    };
    let count: i64 = batch.iter().product();
    let y = if batch_b.iter().product::<i64>() == 1 && batch_a == batch.as_slice() {
        // B is one matrix: fold A's batch into its rows.
        let a3 = imp.e.reshape(&a, &[1, count * m, k]);
        let b3 = imp.e.reshape(&b, &[1, k, n]);
        let y = imp.e.matmul3(&a3, &b3);
        let mut shape = batch.clone();
        shape.extend([m, n]);
        imp.e.reshape(&y, &shape)
    } else {
        let mut sa = batch.clone();
        sa.extend([m, k]);
        let mut sb = batch.clone();
        sb.extend([k, n]);
        let a_full = imp.e.broadcast_to(&a, &sa)?;
        let b_full = imp.e.broadcast_to(&b, &sb)?;
        let a3 = imp.e.reshape(&a_full, &[count, m, k]);
        let b3 = imp.e.reshape(&b_full, &[count, k, n]);
        let y = imp.e.matmul3(&a3, &b3);
        let mut shape = batch.clone();
        shape.extend([m, n]);
        imp.e.reshape(&y, &shape)
    };
    let mut shape = y.shape().to_vec();
    if b_vec {
        shape.pop();
    }
    if a_vec {
        shape.remove(shape.len() - if b_vec { 1 } else { 2 });
    }
    Ok(imp.e.reshape(&y, &shape))
}

pub fn gemm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    require_float(a, "Gemm's A")?;
    if a.rank() != 2 || b.rank() != 2 {
        bail!(
            "Gemm needs 2-D A and B, not {:?} and {:?}",
            a.shape(),
            b.shape()
        );
    }
    let alpha = node.float("alpha", 1.0)? as f64;
    let beta = node.float("beta", 1.0)? as f64;
    let a = if node.int("transA", 0)? != 0 {
        transpose_value(imp, a, &[1, 0])?
    } else {
        a.clone()
    };
    let b = if node.int("transB", 0)? != 0 {
        transpose_value(imp, b, &[1, 0])?
    } else {
        b.clone()
    };
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    if b.shape()[0] != k {
        bail!(
            "Gemm of {:?} and {:?}: inner dimensions differ",
            a.shape(),
            b.shape()
        );
    }
    let a3 = reshape_value(imp, &a, &[1, m, k])?;
    let b3 = reshape_value(imp, &b, &[1, k, n])?;
    let (a3, b3) = (imp.val(&a3)?, imp.val(&b3)?);
    let y = imp.e.matmul3(&a3, &b3);
    let y = imp.e.reshape(&y, &[m, n]);
    let mut y = imp.e.scale(&y, alpha)?;
    if let Some(c) = node.opt(2)
        && beta != 0.0
    {
        if broadcast_shapes(&c.shape(), &[m, n]).as_deref() != Some(&[m, n][..]) {
            bail!(
                "Gemm's C {:?} does not broadcast to {:?}",
                c.shape(),
                [m, n]
            );
        }
        let c = match c {
            Value::Const(k) if beta != 1.0 && k.numel() as i64 <= fold::FOLD_LIMIT => {
                let scaled: Vec<f64> = k.f64s().iter().map(|v| v * beta).collect();
                imp.e.constant(
                    &Const::from_f64(k.dtype, k.shape.clone(), &scaled),
                    "gemm_c",
                )?
            }
            _ => {
                let c = imp.val(c)?;
                imp.e.scale(&c, beta)?
            }
        };
        y = imp.e.add(&y, &c)?;
    }
    tensor(y)
}

/// Conv attributes for `n` spatial axes of input `x` and kernel shape `k`.
struct ConvGeometry {
    strides: Vec<i64>,
    dilations: Vec<i64>,
    windows: Vec<Window>,
}

fn conv_geometry(node: &Node, spatial: &[i64], kernel: &[i64]) -> Result<ConvGeometry> {
    let n = spatial.len();
    if let Some(k) = node.ints("kernel_shape")?
        && k != kernel
    {
        bail!("kernel_shape {k:?} does not match the weights' {kernel:?}");
    }
    let strides = per_axis(node, "strides", n, 1)?;
    let dilations = per_axis(node, "dilations", n, 1)?;
    let pads = padding(node, spatial, kernel, &strides, &dilations)?;
    let mut windows = Vec::new();
    for i in 0..n {
        windows.push(Window::new(
            spatial[i],
            kernel[i],
            strides[i],
            dilations[i],
            pads[i].0,
            pads[i].1,
            false,
        )?);
    }
    Ok(ConvGeometry {
        strides,
        dilations,
        windows,
    })
}

pub fn conv(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "Conv's input")?;
    let w = node.input(1)?.clone();
    let x = imp.val(input)?;
    let (xs, ws) = (x.shape().to_vec(), w.shape());
    let rank = xs.len();
    if !(3..=5).contains(&rank) || ws.len() != rank {
        bail!(
            "Conv of a {:?} input with {:?} weights (1-D to 3-D convolutions are supported)",
            xs,
            ws
        );
    }
    if w.dtype() != x.dtype() {
        bail!("Conv of {} input and {} weights", x.dtype(), w.dtype());
    }
    let group = node.int("group", 1)?;
    let (c, f) = (xs[1], ws[0]);
    if group <= 0 || c % group != 0 || f % group != 0 || ws[1] != c / group {
        bail!("Conv with {c} input channels, weights {ws:?} and group {group}");
    }
    let depthwise = rank <= 4 && group == c && ws[1] == 1;
    if group > MAX_GROUPS && !depthwise {
        bail!(
            "Conv with {group} groups: tcc splits grouped convolutions per group, at most {MAX_GROUPS}"
        );
    }
    let bias = node.opt(2).cloned();
    if let Some(b) = &bias
        && b.shape() != [f]
    {
        bail!("Conv bias {:?} for {f} output channels", b.shape());
    }
    let geometry = conv_geometry(node, &xs[2..], &ws[2..])?;
    let x = crop(imp, &x, &geometry.windows);
    let y = match rank {
        3 => {
            // 1-D as 2-D with height 1.
            let x4 = imp.e.reshape(&x, &[xs[0], c, 1, x.shape()[2]]);
            let w4 = reshape_value(imp, &w, &[ws[0], ws[1], 1, ws[2]])?;
            let unit = Window::new(1, 1, 1, 1, 0, 0, false)?;
            let windows = [unit, geometry.windows[0]];
            let y = conv2d(imp, &x4, &w4, bias.as_ref(), group, &windows)?;
            let s = y.shape().to_vec();
            imp.e.reshape(&y, &[s[0], s[1], s[3]])
        }
        4 => conv2d(
            imp,
            &x,
            &w,
            bias.as_ref(),
            group,
            &[geometry.windows[0], geometry.windows[1]],
        )?,
        _ => conv3d(imp, &x, &w, bias.as_ref(), group, &geometry)?,
    };
    tensor(y)
}

/// `bias` or zeros, as a [F] tensor.
fn bias_or_zero(imp: &mut Importer, bias: Option<&Value>, f: i64, dtype: DType) -> Result<Val> {
    match bias {
        Some(b) => imp.val(b),
        None => Ok(imp.e.splat(dtype, vec![f], 0.0)),
    }
}

/// Channel range `[begin, end)` of axis `axis` of a value.
fn channels(imp: &mut Importer, v: &Value, axis: usize, begin: i64, end: i64) -> Result<Value> {
    let shape = v.shape();
    let mut starts = vec![0; shape.len()];
    let mut sizes = shape.clone();
    starts[axis] = begin;
    sizes[axis] = end - begin;
    strided_slice_value(imp, v, &starts, &vec![1; shape.len()], &sizes)
}

/// A 2-D convolution of a cropped NCHW input with [F, C/g, KH, KW] weights.
fn conv2d(
    imp: &mut Importer,
    x: &Val,
    w: &Value,
    bias: Option<&Value>,
    group: i64,
    windows: &[Window; 2],
) -> Result<Val> {
    let nhwc = imp.e.transpose(x, &[0, 2, 3, 1]);
    let ws = w.shape();
    let (c, f) = (x.shape()[1], ws[0]);
    let n = x.shape()[0];
    let props = |dilation: [i64; 2]| {
        format!(
            "acc_type = f32, dilation = {}, pad = {}, stride = {}",
            array_i64(&dilation),
            array_i64(&[
                windows[0].pad_begin,
                windows[0].pad_end,
                windows[1].pad_begin,
                windows[1].pad_end
            ]),
            array_i64(&[windows[0].stride, windows[1].stride])
        )
    };
    let dilation = [windows[0].dilation, windows[1].dilation];
    let out = |channels: i64| {
        TType::new(
            x.dtype(),
            vec![n, windows[0].output, windows[1].output, channels],
        )
    };
    let zp = imp.e.zero_point(x.dtype());
    let y = if group == 1 {
        let ohwi = transpose_value(imp, w, &[0, 2, 3, 1])?;
        let ohwi = imp.val(&ohwi)?;
        let b = bias_or_zero(imp, bias, f, x.dtype())?;
        imp.e.op(
            "tosa.conv2d",
            &[&nhwc, &ohwi, &b, &zp, &zp],
            &props(dilation),
            out(f),
        )
    } else if group == c && ws[1] == 1 {
        // Depthwise: [C*M, 1, KH, KW] -> [KH, KW, C, M].
        let m = f / c;
        let r = reshape_value(imp, w, &[c, m, ws[2], ws[3]])?;
        let hwcm = transpose_value(imp, &r, &[2, 3, 0, 1])?;
        let hwcm = imp.val(&hwcm)?;
        let b = bias_or_zero(imp, bias, f, x.dtype())?;
        imp.e.op(
            "tosa.depthwise_conv2d",
            &[&nhwc, &hwcm, &b, &zp, &zp],
            &props(dilation),
            out(f),
        )
    } else {
        let (cg, fg) = (c / group, f / group);
        let mut parts = Vec::new();
        for g in 0..group {
            let xg = imp.e.slice_axis(&nhwc, 3, g * cg, (g + 1) * cg);
            let wg = channels(imp, w, 0, g * fg, (g + 1) * fg)?;
            let ohwi = transpose_value(imp, &wg, &[0, 2, 3, 1])?;
            let ohwi = imp.val(&ohwi)?;
            let b = match bias {
                Some(b) => {
                    let bg = channels(imp, b, 0, g * fg, (g + 1) * fg)?;
                    imp.val(&bg)?
                }
                None => imp.e.splat(x.dtype(), vec![fg], 0.0),
            };
            parts.push(imp.e.op(
                "tosa.conv2d",
                &[&xg, &ohwi, &b, &zp, &zp],
                &props(dilation),
                out(fg),
            ));
        }
        imp.e.concat(&parts, 3)
    };
    Ok(imp.e.transpose(&y, &[0, 3, 1, 2]))
}

/// A 3-D convolution as `linalg.conv_3d_ndhwc_dhwcf` (TOSA's conv3d is
/// outside tcc's coverage) on an explicitly padded input.
fn conv3d(
    imp: &mut Importer,
    x: &Val,
    w: &Value,
    bias: Option<&Value>,
    group: i64,
    g: &ConvGeometry,
) -> Result<Val> {
    let mut pads = vec![(0, 0), (0, 0)];
    pads.extend(g.windows.iter().map(|w| (w.pad_begin, w.pad_end)));
    let padded = imp.e.pad(x, &pads, 0.0);
    let cl = imp.e.transpose(&padded, &to_channels_last(5));
    let ws = w.shape();
    let (c, f) = (x.shape()[1], ws[0]);
    let (cg, fg) = (c / group, f / group);
    let attrs = format!(
        "dilations = dense<[{}]> : tensor<3xi64>, strides = dense<[{}]> : tensor<3xi64>",
        g.dilations
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        g.strides
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut parts = Vec::new();
    for k in 0..group {
        let xk = if group == 1 {
            cl.clone()
        } else {
            imp.e.slice_axis(&cl, 4, k * cg, (k + 1) * cg)
        };
        let wk = if group == 1 {
            w.clone()
        } else {
            channels(imp, w, 0, k * fg, (k + 1) * fg)?
        };
        let dhwcf = transpose_value(imp, &wk, &[2, 3, 4, 1, 0])?;
        let dhwcf = imp.val(&dhwcf)?;
        let mut shape = vec![x.shape()[0]];
        shape.extend(g.windows.iter().map(|w| w.output));
        shape.push(fg);
        let init = imp.e.filled(&TType::new(x.dtype(), shape), 0.0);
        parts.push(
            imp.e
                .linalg_named("linalg.conv_3d_ndhwc_dhwcf", &attrs, &[&xk, &dhwcf], &init),
        );
    }
    let mut y = imp.e.concat(&parts, 4);
    if let Some(b) = bias {
        let b = imp.val(b)?;
        let b = imp.e.reshape(&b, &[1, 1, 1, 1, f]);
        y = imp.e.add(&y, &b)?;
    }
    Ok(imp.e.transpose(&y, &to_channels_first(5)))
}

/// Inserts `dilation - 1` zeros between kernel taps of constant weights
/// [C, F, KH, KW] (TOSA's transpose_conv2d has no dilation).
fn dilate_kernel(w: &Const, dilations: &[i64; 2]) -> Const {
    let s = &w.shape;
    let (kh, kw) = ((s[2] - 1) * dilations[0] + 1, (s[3] - 1) * dilations[1] + 1);
    let values = w.f64s();
    let mut out = vec![0.0; (s[0] * s[1] * kh * kw) as usize];
    for a in 0..s[0] * s[1] {
        for i in 0..s[2] {
            for j in 0..s[3] {
                out[(a * kh * kw + i * dilations[0] * kw + j * dilations[1]) as usize] =
                    values[(a * s[2] * s[3] + i * s[3] + j) as usize];
            }
        }
    }
    Const::from_f64(w.dtype, vec![s[0], s[1], kh, kw], &out)
}

pub fn conv_transpose(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "ConvTranspose's input")?;
    let x = imp.val(input)?;
    let w = node.input(1)?.clone();
    let (xs, ws) = (x.shape().to_vec(), w.shape());
    let rank = xs.len();
    if !(3..=4).contains(&rank) || ws.len() != rank {
        bail!("ConvTranspose of a {xs:?} input with {ws:?} weights (1-D and 2-D are supported)");
    }
    let n = rank - 2;
    let group = node.int("group", 1)?;
    let c = xs[1];
    if group <= 0 || c % group != 0 || ws[0] != c {
        bail!("ConvTranspose with {c} input channels, weights {ws:?} and group {group}");
    }
    let f = ws[1] * group;
    if group > MAX_GROUPS {
        bail!(
            "ConvTranspose with {group} groups: tcc splits grouped convolutions per group, at most {MAX_GROUPS}"
        );
    }
    if let Some(k) = node.ints("kernel_shape")?
        && k != ws[2..]
    {
        bail!(
            "kernel_shape {k:?} does not match the weights' {:?}",
            &ws[2..]
        );
    }
    let strides = per_axis(node, "strides", n, 1)?;
    let dilations = per_axis(node, "dilations", n, 1)?;
    let output_padding = per_axis(node, "output_padding", n, 0)?;
    if strides.iter().chain(&dilations).any(|&v| v <= 0) || output_padding.iter().any(|&v| v < 0) {
        bail!("invalid strides, dilations or output_padding");
    }
    let mut full = Vec::new();
    for i in 0..n {
        let length = (xs[i + 2] as i128 - 1) * strides[i] as i128
            + (ws[i + 2] as i128 - 1) * dilations[i] as i128
            + 1
            + output_padding[i] as i128;
        if length > super::super::dtype::MAX_ELEMENTS as i128 {
            bail!("ConvTranspose output too large");
        }
        full.push(length as i64);
    }
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    let output_shape = node.ints("output_shape")?;
    let pads: Vec<(i64, i64)> = if output_shape.is_some() || auto_pad.starts_with("SAME") {
        let target: Vec<i64> = match &output_shape {
            Some(s) if s.len() == n => s.clone(),
            Some(s) if s.len() == rank => s[2..].to_vec(),
            Some(s) => bail!("output_shape {s:?} for {n} spatial axes"),
            None => (0..n).map(|i| xs[i + 2] * strides[i]).collect(),
        };
        let mut pads = Vec::new();
        for i in 0..n {
            let total = full[i] - target[i];
            if total < 0 {
                bail!("output_shape {target:?} is larger than the full output {full:?}");
            }
            pads.push(if auto_pad == "SAME_UPPER" {
                (total / 2, total - total / 2)
            } else {
                (total - total / 2, total / 2)
            });
        }
        pads
    } else {
        let p = node.ints("pads")?.unwrap_or_else(|| vec![0; 2 * n]);
        if p.len() != 2 * n {
            bail!("{} pads for {n} spatial axes", p.len());
        }
        (0..n).map(|i| (p[i], p[i + n])).collect()
    };
    for i in 0..n {
        if pads[i].0 < 0 || pads[i].1 < 0 || pads[i].0 + pads[i].1 >= full[i] {
            bail!("ConvTranspose pads {pads:?} for a full output of {full:?}");
        }
    }
    // 1-D as 2-D with height 1.
    let (x4, w4, strides2, dilations2, opad2, pads2, full2) = if rank == 3 {
        let x4 = imp.e.reshape(&x, &[xs[0], c, 1, xs[2]]);
        let w4 = reshape_value(imp, &w, &[ws[0], ws[1], 1, ws[2]])?;
        (
            x4,
            w4,
            [1, strides[0]],
            [1, dilations[0]],
            [0, output_padding[0]],
            [(0, 0), pads[0]],
            [1, full[0]],
        )
    } else {
        (
            x,
            w,
            [strides[0], strides[1]],
            [dilations[0], dilations[1]],
            [output_padding[0], output_padding[1]],
            [pads[0], pads[1]],
            [full[0], full[1]],
        )
    };
    let w4 = if dilations2 != [1, 1] {
        match &w4 {
            Value::Const(k)
                if k.numel() as i64 <= fold::FOLD_LIMIT && dilations2.iter().all(|&d| d <= 64) =>
            {
                Value::constant(dilate_kernel(k, &dilations2))
            }
            Value::Const(_) => bail!(
                "ConvTranspose dilations {dilations2:?} of {:?} weights are too large",
                w4.shape()
            ),
            Value::Tensor(_) => {
                bail!("dilated ConvTranspose with weights computed at run time is not supported")
            }
        }
    } else {
        w4
    };
    let nhwc = imp.e.transpose(&x4, &[0, 2, 3, 1]);
    let (cg, fg) = (c / group, f / group);
    let zp = imp.e.zero_point(nhwc.dtype());
    let props = format!(
        "acc_type = f32, out_pad = {}, stride = {}",
        array_i64(&[0, opad2[0], 0, opad2[1]]),
        array_i64(&strides2)
    );
    let batch = xs[0];
    let mut parts = Vec::new();
    for g in 0..group {
        let xg = if group == 1 {
            nhwc.clone()
        } else {
            imp.e.slice_axis(&nhwc, 3, g * cg, (g + 1) * cg)
        };
        let wg = if group == 1 {
            w4.clone()
        } else {
            channels(imp, &w4, 0, g * cg, (g + 1) * cg)?
        };
        // [Cg, Fg, KH, KW] -> [Fg, KH, KW, Cg].
        let ohwi = transpose_value(imp, &wg, &[1, 2, 3, 0])?;
        let ohwi = imp.val(&ohwi)?;
        let b = match node.opt(2) {
            Some(b) => {
                if b.shape() != [f] {
                    bail!("ConvTranspose bias {:?} for {f} output channels", b.shape());
                }
                let bg = if group == 1 {
                    b.clone()
                } else {
                    channels(imp, b, 0, g * fg, (g + 1) * fg)?
                };
                imp.val(&bg)?
            }
            None => imp.e.splat(nhwc.dtype(), vec![fg], 0.0),
        };
        let ty = TType::new(nhwc.dtype(), vec![batch, full2[0], full2[1], fg]);
        parts.push(imp.e.op(
            "tosa.transpose_conv2d",
            &[&xg, &ohwi, &b, &zp, &zp],
            &props,
            ty,
        ));
    }
    let y = imp.e.concat(&parts, 3);
    let cropped = imp.e.slice(
        &y,
        &[0, pads2[0].0, pads2[1].0, 0],
        &[
            batch,
            full2[0] - pads2[0].0 - pads2[0].1,
            full2[1] - pads2[1].0 - pads2[1].1,
            f,
        ],
    );
    let y = imp.e.transpose(&cropped, &[0, 3, 1, 2]);
    tensor(if rank == 3 {
        let s = y.shape().to_vec();
        imp.e.reshape(&y, &[s[0], s[1], s[3]])
    } else {
        y
    })
}

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
        bail!("BatchNormalization in training mode is not supported");
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
    let props = format!(
        "axis = {} : i64, epsilon = {} : f32",
        axis,
        super::super::emit::float_literal(epsilon as f64, DType::F32)
    );
    let ty = x.ty.clone();
    tensor(imp.e.op("tcc.layer_norm", &[&x, &scale, &bias], &props, ty))
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
        let y = imp.e.op(name, &[&flat], "axis = 1 : i64", ty);
        return tensor(imp.e.reshape(&y, &s));
    }
    let ty = x.ty.clone();
    tensor(imp.e.op(name, &[&x], &format!("axis = {axis} : i64"), ty))
}
