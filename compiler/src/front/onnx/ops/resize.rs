//! Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9).
//!
//! Resize is separable: each resized axis maps every output position to a
//! few input positions ("taps") with weights, which depend only on the
//! shapes, scales, roi and attributes — all known at import time. The
//! importer computes the taps exactly as the ONNX reference does (in f64,
//! from the f32 scales), then applies one axis at a time:
//!
//! - one tap of weight 1 per position (`nearest`, or an identity) is a
//!   `tosa.gather` with constant indices, or a reshape + `tosa.tile` when the
//!   positions repeat every input element `f` times (an integer upsample);
//! - otherwise one `tosa.gather` of all taps ([O * K] indices) on the axis
//!   moved first, a multiplication by the constant [O, K, 1] weights and a
//!   `tosa.reduce_sum` over K;
//! - `tf_crop_and_resize` positions outside the input get weight 0 and the
//!   `extrapolation_value` added.

use super::super::dtype::{DType, checked_numel};
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::tensor;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

/// How one axis is resized.
#[derive(Clone, Debug)]
struct AxisPlan {
    axis: usize,
    out: i64,
    scale: f64,
    roi: (f64, f64),
}

/// Everything but the per-axis numbers.
struct Settings {
    mode: Mode,
    nearest_mode: String,
    transform: String,
    cubic_a: f64,
    exclude_outside: bool,
    antialias: bool,
    extrapolation: f64,
    /// Opset 10 Resize and Upsample: asymmetric coordinates and, for
    /// nearest, onnxruntime's "simple" rounding (floor when upsampling,
    /// ceil when downsampling).
    legacy: bool,
}

/// One output position: (input index, weight) pairs, and whether the
/// position lies outside the input (tf_crop_and_resize extrapolation).
type Taps = Vec<(i64, f64)>;

fn nearest_coeffs(ratio: f64, mode: &str) -> Result<Vec<f64>> {
    if ratio.fract() == 0.0 {
        return Ok(vec![0.0, 1.0]);
    }
    let b = |c: bool| if c { 1.0 } else { 0.0 };
    Ok(match mode {
        "round_prefer_floor" => vec![b(ratio <= 0.5), b(ratio > 0.5)],
        "round_prefer_ceil" => vec![b(ratio < 0.5), b(ratio >= 0.5)],
        "floor" => vec![1.0, 0.0],
        "ceil" => vec![0.0, 1.0],
        other => bail!(
            "Resize nearest_mode '{other}' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil"
        ),
    })
}

fn cubic_coeffs(ratio: f64, a: f64) -> Vec<f64> {
    let r1 = ratio + 1.0;
    let q = 1.0 - ratio;
    let q1 = q + 1.0;
    vec![
        ((a * r1 - 5.0 * a) * r1 + 8.0 * a) * r1 - 4.0 * a,
        ((a + 2.0) * ratio - (a + 3.0)) * ratio * ratio + 1.0,
        ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0,
        ((a * q1 - 5.0 * a) * q1 + 8.0 * a) * q1 - 4.0 * a,
    ]
}

fn cubic_coeffs_antialias(ratio: f64, scale: f64, a: f64) -> Vec<f64> {
    let scale = scale.min(1.0);
    let coeff = |x: f64| {
        let x = x.abs();
        let (x2, x3) = (x * x, x * x * x);
        if x <= 1.0 {
            (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0
        } else if x < 2.0 {
            a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a
        } else {
            0.0
        }
    };
    let start = (-2.0 / scale).floor() as i64 + 1;
    let end = 2 - start;
    let c: Vec<f64> = (start..end)
        .map(|i| coeff(scale * (i as f64 - ratio)))
        .collect();
    let sum: f64 = c.iter().sum();
    c.iter().map(|v| v / sum).collect()
}

fn linear_coeffs_antialias(ratio: f64, scale: f64) -> Vec<f64> {
    let scale = scale.min(1.0);
    let start = (-1.0 / scale).floor() as i64 + 1;
    let footprint = 2 - 2 * start;
    let c: Vec<f64> = (start..start + footprint)
        .map(|i| (1.0 - ((i as f64 - ratio) * scale).abs()).clamp(0.0, 1.0))
        .collect();
    let sum: f64 = c.iter().sum();
    c.iter().map(|v| v / sum).collect()
}

/// The source coordinate of output position `y` and whether it lies
/// outside the input (only `tf_crop_and_resize` extrapolates).
fn source_coordinate(s: &Settings, plan: &AxisPlan, input: i64, y: f64) -> Result<(f64, bool)> {
    let scale = plan.scale;
    let out_f = scale * input as f64;
    let inp = input as f64;
    if s.legacy {
        return Ok((y / scale, false));
    }
    let x = match s.transform.as_str() {
        "align_corners" => {
            if out_f == 1.0 {
                0.0
            } else {
                y * (inp - 1.0) / (out_f - 1.0)
            }
        }
        "asymmetric" => y / scale,
        "tf_crop_and_resize" => {
            let (r0, r1) = plan.roi;
            let x = if out_f == 1.0 {
                (r1 - r0) * (inp - 1.0) / 2.0
            } else {
                y * (r1 - r0) * (inp - 1.0) / (out_f - 1.0)
            } + r0 * (inp - 1.0);
            return Ok((x, x < 0.0 || x > inp - 1.0));
        }
        "pytorch_half_pixel" => {
            if out_f == 1.0 {
                -0.5
            } else {
                (y + 0.5) / scale - 0.5
            }
        }
        "half_pixel" => (y + 0.5) / scale - 0.5,
        "half_pixel_symmetric" => {
            let adjustment = plan.out as f64 / out_f;
            let offset = inp / 2.0 * (1.0 - adjustment);
            offset + (y + 0.5) / scale - 0.5
        }
        "tf_half_pixel_for_nn" => (y + 0.5) / scale,
        other => bail!("Resize coordinate_transformation_mode '{other}' is not supported"),
    };
    Ok((x, false))
}

/// The taps of every output position of one axis, as the ONNX reference
/// computes them (`_interpolate_1d_along_axis`), with the clamped
/// (edge-padded) indices merged.
fn axis_taps(s: &Settings, plan: &AxisPlan, input: i64) -> Result<(Vec<Taps>, Vec<bool>)> {
    let mut all = Vec::with_capacity(plan.out as usize);
    let mut outside = Vec::with_capacity(plan.out as usize);
    for y in 0..plan.out {
        let (x, extrapolated) = source_coordinate(s, plan, input, y as f64)?;
        if !x.is_finite() {
            bail!(
                "Resize: source coordinate {x} for output {y} (scale {})",
                plan.scale
            );
        }
        if s.legacy && s.mode == Mode::Nearest {
            let i = if plan.scale < 1.0 {
                x.ceil()
            } else {
                x.floor()
            } as i64;
            all.push(vec![(i.clamp(0, input - 1), 1.0)]);
            outside.push(false);
            continue;
        }
        let x_int = x.floor();
        let ratio = if x == x_int { 1.0 } else { x - x_int };
        let mut coeffs = match (s.mode, s.antialias) {
            (Mode::Nearest, _) => nearest_coeffs(ratio, &s.nearest_mode)?,
            (Mode::Linear, false) => vec![1.0 - ratio, ratio],
            (Mode::Linear, true) => linear_coeffs_antialias(ratio, plan.scale),
            (Mode::Cubic, false) => cubic_coeffs(ratio, s.cubic_a),
            (Mode::Cubic, true) => cubic_coeffs_antialias(ratio, plan.scale, s.cubic_a),
        };
        let n = coeffs.len() as i64;
        let pad = (n + 1) / 2;
        let padded = x + pad as f64;
        let p = padded.floor();
        let frac = padded - p;
        let offset = if n % 2 == 0 {
            if frac == 0.0 { -(n / 2) } else { -(n / 2) + 1 }
        } else {
            let base = -((n - 1) / 2);
            if frac <= 0.5 { base } else { base + 1 }
        };
        let start = p as i64 + offset - pad;
        if s.exclude_outside {
            for (k, c) in coeffs.iter_mut().enumerate() {
                let i = start + k as i64;
                if i < 0 || i >= input {
                    *c = 0.0;
                }
            }
            let sum: f64 = coeffs.iter().sum();
            let sum = if sum == 0.0 { 1.0 } else { sum };
            for c in coeffs.iter_mut() {
                *c /= sum;
            }
        }
        let mut taps: Taps = Vec::new();
        if !extrapolated {
            for (k, &c) in coeffs.iter().enumerate() {
                if c == 0.0 {
                    continue;
                }
                let i = (start + k as i64).clamp(0, input - 1);
                match taps.iter_mut().find(|(j, _)| *j == i) {
                    Some(t) => t.1 += c,
                    None => taps.push((i, c)),
                }
            }
        }
        all.push(taps);
        outside.push(extrapolated);
    }
    Ok((all, outside))
}

/// Applies one axis's taps to `x`.
fn apply_axis(
    imp: &mut Importer,
    x: &Val,
    axis: usize,
    taps: &[Taps],
    outside: &[bool],
    extrapolation: f64,
) -> Result<Val> {
    let shape = x.shape().to_vec();
    let input = shape[axis];
    let out = taps.len() as i64;
    let rank = shape.len();
    let mut out_shape = shape.clone();
    out_shape[axis] = out;
    let single = taps.iter().all(|t| t.len() == 1 && t[0].1 == 1.0);
    let any_outside = outside.iter().any(|&o| o);
    if single && !any_outside {
        let index: Vec<i64> = taps.iter().map(|t| t[0].0).collect();
        if index.iter().enumerate().all(|(o, &i)| i == o as i64) && out == input {
            return Ok(x.clone());
        }
        // An integer upsample (each input repeated f times): reshape + tile.
        if out % input == 0 {
            let f = out / input;
            if index.iter().enumerate().all(|(o, &i)| i == o as i64 / f) {
                let mut split = shape[..=axis].to_vec();
                split.push(1);
                split.extend_from_slice(&shape[axis + 1..]);
                let r = imp.e.reshape(x, &split);
                let mut multiples = vec![1; rank + 1];
                multiples[axis + 1] = f;
                let t = imp.e.tile(&r, &multiples);
                return Ok(imp.e.reshape(&t, &out_shape));
            }
        }
    }
    if !x.dtype().is_float() && !single {
        bail!(
            "Resize of {} tensors is supported in nearest mode only",
            x.dtype()
        );
    }
    // Every position gets K taps (missing ones: index 0, weight 0).
    let k = taps.iter().map(Vec::len).max().unwrap_or(0).max(1) as i64;
    let mut index = Vec::with_capacity((out * k) as usize);
    let mut weight = Vec::with_capacity((out * k) as usize);
    for t in taps {
        for j in 0..k as usize {
            let (i, w) = t
                .get(j)
                .copied()
                .unwrap_or((t.first().map_or(0, |t| t.0), 0.0));
            index.push(i);
            weight.push(w);
        }
    }
    // The axis is gathered as TOSA's K, after the leading dimension (the
    // batch, TOSA's N, which stays leading so that a symbolic batch keeps
    // to the first dynamic slice); a resize of the leading axis itself
    // gathers with N = 1.
    let lead = if axis == 0 { 1 } else { shape[0] };
    let mut perm: Vec<usize> = if axis == 0 { vec![0] } else { vec![0, axis] };
    perm.extend((1..rank).filter(|&a| a != axis));
    let moved = imp.e.transpose(x, &perm);
    let rest: i64 = shape
        .iter()
        .enumerate()
        .filter(|&(a, _)| a != axis)
        .map(|(_, d)| d)
        .product::<i64>()
        / lead.max(1);
    if rest == 0 || out == 0 || lead == 0 {
        bail!("Resize to or of an empty tensor is not supported");
    }
    let values = imp.e.reshape(&moved, &[lead, input, rest]);
    let idx = imp.e.constant(
        &Const::from_i64(
            DType::I32,
            vec![lead, out * k],
            &index.repeat(lead as usize),
        ),
        "resize_indices",
    )?;
    let gathered = imp.e.op(
        "tosa.gather",
        &[&values, &idx],
        &[],
        values.ty.with_shape(vec![lead, out * k, rest]),
    );
    let y = if single {
        imp.e.reshape(&gathered, &[lead, out, rest])
    } else {
        let g = imp.e.reshape(&gathered, &[lead, out, k, rest]);
        let w = imp.e.constant(
            &Const::from_f64(x.dtype(), vec![1, out, k, 1], &weight),
            "resize_weights",
        )?;
        let weighted = imp.e.mul(&g, &w)?;
        let summed = imp.e.reduce("tosa.reduce_sum", &weighted, 2);
        imp.e.reshape(&summed, &[lead, out, rest])
    };
    let y = if any_outside {
        let bias: Vec<f64> = outside
            .iter()
            .map(|&o| if o { extrapolation } else { 0.0 })
            .collect();
        let b = imp.e.constant(
            &Const::from_f64(x.dtype(), vec![1, out, 1], &bias),
            "resize_bias",
        )?;
        imp.e.add(&y, &b)?
    } else {
        y
    };
    let moved_shape: Vec<i64> = perm
        .iter()
        .map(|&a| if a == axis { out } else { shape[a] })
        .collect();
    let y = imp.e.reshape(&y, &moved_shape);
    let mut back = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        back[p] = i;
    }
    Ok(imp.e.transpose(&y, &back))
}

fn resize_values(
    imp: &mut Importer,
    node: &Node,
    x: &Value,
    settings: &Settings,
    plans: &[AxisPlan],
) -> Result<Vec<Value>> {
    let mut out_shape = x.shape();
    for plan in plans {
        out_shape[plan.axis] = plan.out;
    }
    if checked_numel(&out_shape).is_none_or(|n| n > i32::MAX as i64) {
        bail!("{} to the shape {out_shape:?} is too large", node.op());
    }
    if settings.antialias && plans.iter().any(|p| p.scale < 1.0 / 1024.0) {
        bail!(
            "{} antialias with a scale below 1/1024 is not supported",
            node.op()
        );
    }
    if settings.mode != Mode::Nearest && !x.dtype().is_float() {
        bail!(
            "{} of {} tensors is supported in nearest mode only",
            node.op(),
            x.dtype()
        );
    }
    let mut y = imp.val(x)?;
    for plan in plans {
        let input = y.shape()[plan.axis];
        if input <= 0 || plan.out <= 0 {
            bail!(
                "{} of axis {} from {input} to {} elements is not supported (empty tensors)",
                node.op(),
                plan.axis,
                plan.out
            );
        }
        if plan.out > 1 << 20 {
            bail!(
                "{} to {} elements along axis {}",
                node.op(),
                plan.out,
                plan.axis
            );
        }
        let identity = plan.scale == 1.0
            && plan.out == input
            && (settings.transform != "tf_crop_and_resize"
                || (plan.roi.0 == 0.0 && plan.roi.1 == 1.0));
        if identity {
            continue;
        }
        let (taps, outside) = axis_taps(settings, plan, input)?;
        y = apply_axis(imp, &y, plan.axis, &taps, &outside, settings.extrapolation)?;
    }
    tensor(y)
}

/// A float list given as a constant input (scales, roi); an absent or empty
/// input is `None`.
fn const_floats(node: &Node, index: usize, what: &str) -> Result<Option<Vec<f64>>> {
    match node.const_input(index, what)? {
        Some(c) if c.numel() > 0 => {
            if !c.dtype.is_float() {
                bail!("{} {what} must be float, not {}", node.op(), c.dtype);
            }
            Ok(Some(c.f64s()))
        }
        _ => Ok(None),
    }
}

pub fn resize(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let rank = x.rank();
    let shape = x.shape();
    let legacy = node.opset < 11;
    let mode = match node.string("mode", "nearest")?.as_str() {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" if legacy => Mode::Linear,
        "linear" => Mode::Linear,
        "cubic" if !legacy => Mode::Cubic,
        other => bail!(
            "Resize mode '{other}' is not supported at opset {}",
            node.opset
        ),
    };
    let settings = Settings {
        mode,
        nearest_mode: node.string("nearest_mode", "round_prefer_floor")?,
        transform: node.string("coordinate_transformation_mode", "half_pixel")?,
        cubic_a: node.float("cubic_coeff_a", -0.75)? as f64,
        exclude_outside: node.int("exclude_outside", 0)? != 0,
        antialias: node.opset >= 18 && node.int("antialias", 0)? != 0,
        extrapolation: node.float("extrapolation_value", 0.0)? as f64,
        legacy,
    };
    if settings.antialias && mode == Mode::Nearest {
        bail!("Resize antialias is defined for linear and cubic modes only");
    }
    let valid_transforms: &[&str] = match node.opset {
        ..=10 => &[],
        11..=17 => &[
            "half_pixel",
            "pytorch_half_pixel",
            "align_corners",
            "asymmetric",
            "tf_half_pixel_for_nn",
            "tf_crop_and_resize",
        ],
        18 => &[
            "half_pixel",
            "pytorch_half_pixel",
            "align_corners",
            "asymmetric",
            "tf_crop_and_resize",
        ],
        _ => &[
            "half_pixel",
            "half_pixel_symmetric",
            "pytorch_half_pixel",
            "align_corners",
            "asymmetric",
            "tf_crop_and_resize",
        ],
    };
    if !legacy && !valid_transforms.contains(&settings.transform.as_str()) {
        bail!(
            "Resize coordinate_transformation_mode '{}' is not defined at opset {}",
            settings.transform,
            node.opset
        );
    }
    // The resized axes (opset 18's `axes`, else every axis).
    let axes: Vec<usize> = match node.ints("axes")? {
        Some(a) if node.opset >= 18 => {
            let mut out = Vec::new();
            for &v in &a {
                let v = node.axis(v, rank, "Resize axis")?;
                if out.contains(&v) {
                    bail!("Resize axis {v} appears twice");
                }
                out.push(v);
            }
            out
        }
        _ => (0..rank).collect(),
    };
    let (scales, sizes, roi) = if legacy {
        (const_floats(node, 1, "scales")?, None, None)
    } else {
        (
            const_floats(node, 2, "scales")?,
            node.const_ints(3, "sizes")?.filter(|s| !s.is_empty()),
            const_floats(node, 1, "roi")?,
        )
    };
    let n = axes.len();
    let mut per_scale = vec![1.0f64; n];
    let mut per_out: Vec<i64> = axes.iter().map(|&a| shape[a]).collect();
    match (scales, sizes) {
        (Some(_), Some(_)) => bail!("Resize takes scales or sizes, not both"),
        (None, None) => bail!("Resize needs scales or sizes"),
        (Some(s), None) => {
            if s.len() != n {
                bail!("Resize has {} scales for {n} axes", s.len());
            }
            for (i, &a) in axes.iter().enumerate() {
                if s[i].is_nan() || s[i] <= 0.0 || !s[i].is_finite() {
                    bail!("Resize scale {} must be positive", s[i]);
                }
                per_scale[i] = s[i];
                per_out[i] = (shape[a] as f64 * s[i]).floor() as i64;
            }
        }
        (None, Some(sz)) => {
            if sz.len() != n {
                bail!("Resize has {} sizes for {n} axes", sz.len());
            }
            for (i, &a) in axes.iter().enumerate() {
                if sz[i] <= 0 {
                    bail!("Resize size {} must be positive", sz[i]);
                }
                per_scale[i] = sz[i] as f64 / shape[a] as f64;
                per_out[i] = sz[i];
            }
            let policy = if node.opset >= 18 {
                node.string("keep_aspect_ratio_policy", "stretch")?
            } else {
                "stretch".to_string()
            };
            let common = match policy.as_str() {
                "stretch" => None,
                "not_larger" => Some(per_scale.iter().copied().fold(f64::INFINITY, f64::min)),
                "not_smaller" => Some(per_scale.iter().copied().fold(0.0, f64::max)),
                other => bail!("Resize keep_aspect_ratio_policy '{other}' is not supported"),
            };
            if let Some(scale) = common {
                for (i, &a) in axes.iter().enumerate() {
                    per_scale[i] = scale;
                    per_out[i] = (scale * shape[a] as f64 + 0.5) as i64;
                }
            }
        }
    }
    // roi: [starts..., ends...] over the resized axes (or every axis).
    let mut per_roi = vec![(0.0, 1.0); n];
    if settings.transform == "tf_crop_and_resize" && !legacy {
        let Some(r) = roi else {
            bail!("Resize with tf_crop_and_resize needs a constant roi");
        };
        if r.len() == 2 * n {
            for i in 0..n {
                per_roi[i] = (r[i], r[n + i]);
            }
        } else if r.len() == 2 * rank {
            for (i, &a) in axes.iter().enumerate() {
                per_roi[i] = (r[a], r[rank + a]);
            }
        } else {
            bail!("Resize roi has {} values for {n} axes", r.len());
        }
    }
    let plans: Vec<AxisPlan> = (0..n)
        .map(|i| AxisPlan {
            axis: axes[i],
            out: per_out[i],
            scale: per_scale[i],
            roi: per_roi[i],
        })
        .collect();
    resize_values(imp, node, x, &settings, &plans)
}

/// Upsample (opset 7: `scales` attribute; 9: `scales` input): Resize with
/// asymmetric coordinates, nearest or (bi)linear.
pub fn upsample(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    if node.opset < 7 {
        bail!("Upsample before opset 7 (experimental) is not supported");
    }
    let scales: Vec<f64> = if node.opset >= 9 {
        const_floats(node, 1, "scales")?.ok_or_else(|| ImportError::new("Upsample needs scales"))?
    } else {
        node.floats("scales")?
            .ok_or_else(|| ImportError::new("Upsample needs the scales attribute"))?
            .iter()
            .map(|&v| v as f64)
            .collect()
    };
    if scales.len() != shape.len() {
        bail!(
            "Upsample has {} scales for rank {}",
            scales.len(),
            shape.len()
        );
    }
    let mode = match node.string("mode", "nearest")?.as_str() {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" => Mode::Linear,
        other => bail!("Upsample mode '{other}' is not supported"),
    };
    let mut plans = Vec::new();
    for (a, &s) in scales.iter().enumerate() {
        if s.is_nan() || s < 1.0 || !s.is_finite() {
            bail!("Upsample scale {s} must be at least 1");
        }
        plans.push(AxisPlan {
            axis: a,
            out: (shape[a] as f64 * s).floor() as i64,
            scale: s,
            roi: (0.0, 1.0),
        });
    }
    let settings = Settings {
        mode,
        nearest_mode: String::new(),
        transform: "asymmetric".into(),
        cubic_a: -0.75,
        exclude_outside: false,
        antialias: false,
        extrapolation: 0.0,
        legacy: true,
    };
    resize_values(imp, node, x, &settings, &plans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: Mode, transform: &str) -> Settings {
        Settings {
            mode,
            nearest_mode: "round_prefer_floor".into(),
            transform: transform.into(),
            cubic_a: -0.75,
            exclude_outside: false,
            antialias: false,
            extrapolation: 0.0,
            legacy: false,
        }
    }

    fn plan(out: i64, scale: f64) -> AxisPlan {
        AxisPlan {
            axis: 0,
            out,
            scale,
            roi: (0.0, 1.0),
        }
    }

    #[test]
    fn linear_half_pixel_upsample_taps() {
        // 2 -> 4, half_pixel: x = (y + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25.
        let (taps, _) = axis_taps(&settings(Mode::Linear, "half_pixel"), &plan(4, 2.0), 2).unwrap();
        assert_eq!(taps[0], vec![(0, 1.0)]);
        assert_eq!(taps[1], vec![(0, 0.75), (1, 0.25)]);
        assert_eq!(taps[2], vec![(0, 0.25), (1, 0.75)]);
        assert_eq!(taps[3], vec![(1, 1.0)]);
    }

    #[test]
    fn nearest_modes_round_as_specified() {
        let mut s = settings(Mode::Nearest, "asymmetric");
        // 4 -> 2 asymmetric: x = 0, 2; 3 -> 2 (scale 0.6): x = 0, 1.666.
        let (taps, _) = axis_taps(&s, &plan(2, 0.6), 3).unwrap();
        assert_eq!(taps, vec![vec![(0, 1.0)], vec![(2, 1.0)]]);
        s.nearest_mode = "floor".into();
        let (taps, _) = axis_taps(&s, &plan(2, 0.6), 3).unwrap();
        assert_eq!(taps, vec![vec![(0, 1.0)], vec![(1, 1.0)]]);
    }

    #[test]
    fn cubic_weights_sum_to_one_and_crop_extrapolates() {
        let (taps, _) = axis_taps(&settings(Mode::Cubic, "half_pixel"), &plan(7, 1.75), 4).unwrap();
        for t in &taps {
            let sum: f64 = t.iter().map(|p| p.1).sum();
            assert!((sum - 1.0).abs() < 1e-12, "{t:?}");
        }
        let mut crop = settings(Mode::Linear, "tf_crop_and_resize");
        let mut p = plan(3, 1.0);
        p.roi = (-0.5, 1.5);
        let (taps, outside) = axis_taps(&crop, &p, 3).unwrap();
        assert_eq!(outside, vec![true, false, true]);
        assert!(taps[0].is_empty() && taps[2].is_empty());
        crop.exclude_outside = true;
        assert!(axis_taps(&crop, &p, 3).is_ok());
    }
}
