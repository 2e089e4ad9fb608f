//! Conv: 1-D, 2-D (plain, depthwise, grouped per group) and 3-D
//! convolutions over TOSA and linalg, with ONNX's padding and dilation.

use super::super::dtype::{DType, TType};
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::pool::{Window, crop, per_axis, to_channels_first, to_channels_last, windows};
use super::shape::{reshape_value, strided_slice_value, transpose_value};
use super::tensor;

/// Grouped convolutions (other than depthwise) become one convolution per
/// group and a channel concat, the form the graph phase's passes take
/// (BatchNorm folding into each group) before `tcc-merge-grouped-convs`
/// makes them one grouped convolution again; more groups than this are
/// rejected.
pub(super) const MAX_GROUPS: i64 = 1024;

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
    let windows = windows(node, spatial, kernel, &strides, &dilations, false)?;
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
pub(super) fn bias_or_zero(
    imp: &mut Importer,
    bias: Option<&Value>,
    f: i64,
    dtype: DType,
) -> Result<Val> {
    match bias {
        Some(b) => imp.val(b),
        None => Ok(imp.e.splat(dtype, vec![f], 0.0)),
    }
}

/// Channel range `[begin, end)` of axis `axis` of a value.
pub(super) fn channels(
    imp: &mut Importer,
    v: &Value,
    axis: usize,
    begin: i64,
    end: i64,
) -> Result<Value> {
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
        [
            ("acc_type", Attr::Type(DType::F32)),
            ("dilation", Attr::I64s(dilation.to_vec())),
            (
                "pad",
                Attr::I64s(vec![
                    windows[0].pad_begin,
                    windows[0].pad_end,
                    windows[1].pad_begin,
                    windows[1].pad_end,
                ]),
            ),
            (
                "stride",
                Attr::I64s(vec![windows[0].stride, windows[1].stride]),
            ),
        ]
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
    let attrs = [
        ("dilations", Attr::I64Elements(g.dilations.to_vec())),
        ("strides", Attr::I64Elements(g.strides.to_vec())),
    ];
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
