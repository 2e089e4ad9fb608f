//! ConvTranspose as TOSA transpose_conv2d: constant kernels are dilated at
//! import time, groups become one convolution each.

use super::super::dtype::{DType, TType};
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::conv::{MAX_GROUPS, channels};
use super::pool::per_axis;
use super::shape::{reshape_value, transpose_value};
use super::tensor;

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

/// Weights computed at run time dilated by `dilations` (along their last
/// two axes): zeros between the taps, by a reshape that gives each tap an
/// axis of `d` slots, a pad of that axis to `d`, and a slice of the
/// `(K - 1) * d + 1` leading elements.
fn dilate_kernel_at_run_time(imp: &mut Importer, k: &Val, dilations: &[i64; 2]) -> Val {
    let mut k = k.clone();
    for (axis, &d) in [2usize, 3].into_iter().zip(dilations) {
        if d == 1 {
            continue;
        }
        let shape = k.shape().to_vec();
        let taps = shape[axis];
        // [.., K, ..] -> [.., K, 1, ..] -> [.., K, d, ..] -> [.., K * d, ..].
        let mut split = shape.clone();
        split.insert(axis + 1, 1);
        let spread = imp.e.reshape(&k, &split);
        let mut pads = vec![(0, 0); split.len()];
        pads[axis + 1] = (0, d - 1);
        let spread = imp.e.pad(&spread, &pads, 0.0);
        let mut merged = shape.clone();
        merged[axis] = taps * d;
        let merged_val = imp.e.reshape(&spread, &merged);
        let mut size = shape.clone();
        size[axis] = (taps - 1) * d + 1;
        k = imp.e.slice(&merged_val, &vec![0; shape.len()], &size);
    }
    k
}

/// A 3-D transposed convolution's geometry, per spatial axis (depth,
/// height, width): `full` is the uncropped output, `output_padding` what
/// extends it at the end, `pads` what is cropped.
struct Geometry3d<'g> {
    strides: &'g [i64],
    dilations: &'g [i64],
    output_padding: &'g [i64],
    pads: &'g [(i64, i64)],
    full: &'g [i64],
}

/// 3-D ConvTranspose as one 2-D ConvTranspose per depth tap of the
/// weights (TOSA has no 3-D form): the input's depth folded into its
/// batch, each tap's 2-D output spread along the output depth by the
/// stride (zeros between) and shifted by the tap's dilated offset, the
/// taps summed, then the bias added and the pads cropped.
fn conv_transpose_3d(
    imp: &mut Importer,
    node: &Node,
    x: &Val,
    w: &Value,
    g: &Geometry3d,
) -> Result<Vec<Value>> {
    let xs = x.shape().to_vec();
    let ws = w.shape();
    let (batch, c, depth) = (xs[0], xs[1], xs[2]);
    let taps = ws[2];
    let f = ws[1] * node.int("group", 1)?;
    // [N, C, D, H, W] -> [N * D, C, H, W].
    let folded = imp.e.transpose(x, &[0, 2, 1, 3, 4]);
    let folded = imp.e.reshape(&folded, &[batch * depth, c, xs[3], xs[4]]);
    // The 2-D node: the height and width attributes, no pads (cropped
    // below with the depth's), no bias.
    let mut proto = node.proto.clone();
    proto.input.truncate(2);
    proto.attribute.retain(|a| {
        !matches!(
            a.name.as_str(),
            "strides"
                | "dilations"
                | "output_padding"
                | "pads"
                | "output_shape"
                | "auto_pad"
                | "kernel_shape"
        )
    });
    proto
        .attribute
        .push(super::ints_attr("strides", &g.strides[1..]));
    proto
        .attribute
        .push(super::ints_attr("dilations", &g.dilations[1..]));
    proto
        .attribute
        .push(super::ints_attr("output_padding", &g.output_padding[1..]));
    let weights = imp.val(w)?;
    let depth_full = g.full[0];
    let spread = (depth - 1) * g.strides[0] + 1;
    let mut sum: Option<Val> = None;
    for tap in 0..taps {
        let wt = imp.e.slice_axis(&weights, 2, tap, tap + 1);
        let wt = imp.e.reshape(&wt, &[ws[0], ws[1], ws[3], ws[4]]);
        let plane = Node {
            proto: &proto,
            opset: node.opset,
            inputs: vec![Some(Value::Tensor(folded.clone())), Some(Value::Tensor(wt))],
        };
        let y = conv_transpose(imp, &plane)?;
        let y = imp.val(&y[0])?;
        let (fh, fw) = (y.shape()[2], y.shape()[3]);
        // [N * D, F, FH, FW] -> [N, D, 1, F, FH, FW], the stride's zeros
        // after each depth, [N, (D - 1) * s + 1, F, FH, FW].
        let y = imp.e.reshape(&y, &[batch, depth, 1, f, fh, fw]);
        let y = imp.e.pad(
            &y,
            &[
                (0, 0),
                (0, 0),
                (0, g.strides[0] - 1),
                (0, 0),
                (0, 0),
                (0, 0),
            ],
            0.0,
        );
        let y = imp.e.reshape(&y, &[batch, depth * g.strides[0], f, fh, fw]);
        let y = imp.e.slice_axis(&y, 1, 0, spread);
        let offset = tap * g.dilations[0];
        let y = imp.e.pad(
            &y,
            &[
                (0, 0),
                (offset, depth_full - spread - offset),
                (0, 0),
                (0, 0),
                (0, 0),
            ],
            0.0,
        );
        sum = Some(match sum {
            None => y,
            Some(s) => imp.e.add(&s, &y)?,
        });
    }
    let Some(mut y) = sum else {
        bail!("ConvTranspose with weights of no depth");
    };
    if let Some(b) = node.opt(2) {
        if b.shape() != [f] {
            bail!("ConvTranspose bias {:?} for {f} output channels", b.shape());
        }
        let b = imp.val(b)?;
        let b = imp.e.reshape(&b, &[1, 1, f, 1, 1]);
        y = imp.e.add(&y, &b)?;
    }
    let shape = y.shape().to_vec();
    let (pd, ph, pw) = (g.pads[0], g.pads[1], g.pads[2]);
    let cropped = imp.e.slice(
        &y,
        &[0, pd.0, 0, ph.0, pw.0],
        &[
            batch,
            shape[1] - pd.0 - pd.1,
            f,
            shape[3] - ph.0 - ph.1,
            shape[4] - pw.0 - pw.1,
        ],
    );
    tensor(imp.e.transpose(&cropped, &[0, 2, 1, 3, 4]))
}

pub fn conv_transpose(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "ConvTranspose's input")?;
    let x = imp.val(input)?;
    let w = node.input(1)?.clone();
    let (xs, ws) = (x.shape().to_vec(), w.shape());
    let rank = xs.len();
    if !(3..=5).contains(&rank) || ws.len() != rank {
        bail!(
            "ConvTranspose of a {xs:?} input with {ws:?} weights (1-D, 2-D and 3-D are supported)"
        );
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
            // Negative when the output is larger than the full one (its
            // extra rows and columns hold the bias alone); halved rounding
            // down, as ONNX's reference does.
            let total = full[i] - target[i];
            let half = total.div_euclid(2);
            pads.push(if auto_pad == "SAME_UPPER" {
                (half, total - half)
            } else {
                (total - half, half)
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
    // A negative end pad (an `output_shape` past the full output by less
    // than the stride, as `output_padding` may be) extends the output:
    // TOSA's `out_pad` adds rows and columns that hold the bias alone.
    // Past that, or before the first element, ONNX's reference and
    // onnxruntime refuse the shape too.
    let mut extend = vec![0i64; n];
    let mut pads = pads;
    for i in 0..n {
        if output_shape.is_some() && pads[i].1 < 0 {
            if pads[i].0 < 0 || -pads[i].1 >= strides[i] {
                bail!(
                    "output_shape {:?} is larger than the full output {full:?} by as much as the stride or more (or before its first element)",
                    output_shape.as_deref().unwrap_or_default()
                );
            }
            extend[i] = -pads[i].1;
            pads[i].1 = 0;
            full[i] += extend[i];
        }
        if pads[i].0 < 0 || pads[i].1 < 0 || pads[i].0 + pads[i].1 >= full[i] {
            bail!("ConvTranspose pads {pads:?} for a full output of {full:?}");
        }
    }
    if rank == 5 {
        let output_padding: Vec<i64> = (0..n).map(|i| output_padding[i] + extend[i]).collect();
        let geometry = Geometry3d {
            strides: &strides,
            dilations: &dilations,
            output_padding: &output_padding,
            pads: &pads,
            full: &full,
        };
        return conv_transpose_3d(imp, node, &x, &w, &geometry);
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
            [0, output_padding[0] + extend[0]],
            [(0, 0), pads[0]],
            [1, full[0]],
        )
    } else {
        (
            x,
            w,
            [strides[0], strides[1]],
            [dilations[0], dilations[1]],
            [output_padding[0] + extend[0], output_padding[1] + extend[1]],
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
            Value::Tensor(k) => Value::Tensor(dilate_kernel_at_run_time(imp, k, &dilations2)),
        }
    } else {
        w4
    };
    let nhwc = imp.e.transpose(&x4, &[0, 2, 3, 1]);
    let (cg, fg) = (c / group, f / group);
    let zp = imp.e.zero_point(nhwc.dtype());
    let props = [
        ("acc_type", Attr::Type(DType::F32)),
        ("out_pad", Attr::I64s(vec![0, opad2[0], 0, opad2[1]])),
        ("stride", Attr::I64s(strides2.to_vec())),
    ];
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
