//! Signal and generator ops: the windows (Hann, Hamming, Blackman), the
//! mel filter bank and EyeLike are constants computed at import time (their
//! sizes must be known); DFT and STFT are matmuls of the signal with
//! constant twiddle matrices (the window folded in), so they run on the
//! GEMM kernels. Also the ops tcc refuses on purpose, with the reason:
//! random number generators, training ops, string ops.

use std::f64::consts::PI;

use super::super::dtype::{DType, checked_numel};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::movement::concat_values;
use super::shape::{reshape_value, strided_slice_value, transpose_value};
use super::{one, tensor};

/// The most elements a twiddle matrix may have (64 MiB of f32).
const MAX_TWIDDLES: i64 = 1 << 24;

/// Why tcc refuses `op` on purpose, if it does.
pub fn refused(op: &str) -> Option<String> {
    Some(match op {
        "RandomNormal" | "RandomUniform" | "RandomNormalLike" | "RandomUniformLike"
        | "Bernoulli" | "Multinomial" => format!(
            "{op} draws random numbers: its result is nondeterministic (onnxruntime keeps a generator per node, seeded by the 'seed' attribute or else by a per-process random seed, whose state advances from run to run, so its values differ between runs and runtimes); tcc compiles deterministic programs and does not import it"
        ),
        "StringNormalizer" | "RegexFullMatch" | "StringConcat" | "StringSplit" => {
            format!(
                "{op} is a string op: strings are not supported (tcc computes on numeric tensors only)"
            )
        }
        _ => return None,
    })
}

/// The `size` input of a window op (a constant scalar).
fn window_size(node: &Node) -> Result<i64> {
    let Some(size) = node.const_ints(0, &format!("{}'s size", node.op()))? else {
        bail!("{} needs its size", node.op())
    };
    match size.as_slice() {
        [n] if (0..=1 << 24).contains(n) => Ok(*n),
        [n] => bail!("{}'s size {n} is out of range", node.op()),
        _ => bail!("{}'s size must be a scalar", node.op()),
    }
}

/// The element type an `output_datatype`/`dtype` attribute names.
fn datatype(node: &Node, name: &str, default: DType) -> Result<DType> {
    match node.int_opt(name)? {
        None => Ok(default),
        Some(code) => match i32::try_from(code).ok().and_then(DType::from_onnx) {
            Some(d) => Ok(d),
            None => bail!(
                "{}'s {name} {} is not supported",
                node.op(),
                DType::onnx_code_name(code as i32)
            ),
        },
    }
}

/// HannWindow, HammingWindow, BlackmanWindow (opset 17): periodic or
/// symmetric windows of a constant size.
pub fn window(_imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let n = window_size(node)?;
    let dtype = datatype(node, "output_datatype", DType::F32)?;
    let periodic = node.int("periodic", 1)? != 0;
    let denom = if periodic { n } else { n - 1 } as f64;
    let values: Vec<f64> = (0..n)
        .map(|i| {
            let x = i as f64 / denom;
            match node.op() {
                "HannWindow" => (PI * x).sin().powi(2),
                "HammingWindow" => {
                    let alpha = 25.0 / 46.0;
                    alpha - (1.0 - alpha) * (2.0 * PI * x).cos()
                }
                _ => 0.42 - 0.5 * (2.0 * PI * x).cos() + 0.08 * (4.0 * PI * x).cos(),
            }
        })
        .collect();
    one(Value::constant(Const::from_f64(dtype, vec![n], &values)))
}

/// MelWeightMatrix (opset 17): the `[dft_length / 2 + 1, num_mel_bins]`
/// triangular filter bank, computed as the ONNX reference (and
/// onnxruntime) define it.
pub fn mel_weight_matrix(node: &Node) -> Result<Vec<Value>> {
    let scalar = |i: usize, what: &str| -> Result<f64> {
        match node.const_input(i, what)? {
            Some(c) if c.numel() == 1 => Ok(c.f64_at(0)),
            Some(_) => bail!("MelWeightMatrix's {what} must be a scalar"),
            None => bail!("MelWeightMatrix needs {what}"),
        }
    };
    let bins = scalar(0, "num_mel_bins")? as i64;
    let dft_length = scalar(1, "dft_length")? as i64;
    let sample_rate = scalar(2, "sample_rate")?;
    let lower = scalar(3, "lower_edge_hertz")?;
    let upper = scalar(4, "upper_edge_hertz")?;
    if !(1..=1 << 14).contains(&bins) || !(1..=1 << 20).contains(&dft_length) || sample_rate <= 0.0
    {
        bail!(
            "MelWeightMatrix of {bins} bins, DFT length {dft_length} and sample rate {sample_rate} is out of range"
        );
    }
    let dtype = datatype(node, "output_datatype", DType::F32)?;
    let spectrogram_bins = dft_length / 2 + 1;
    let mel = |hz: f64| 2595.0 * (hz / 700.0).ln_1p() / 10f64.ln();
    let (low_mel, high_mel) = (mel(lower), mel(upper));
    let step = (high_mel - low_mel) / (bins + 2) as f64;
    let points: Vec<i64> = (0..bins + 2)
        .map(|i| {
            let m = i as f64 * step + low_mel;
            let hz = 700.0 * (m / 2595.0 * 10f64.ln()).exp_m1();
            (((dft_length + 1) as f64 * hz) / sample_rate).floor() as i64
        })
        .collect();
    let cols = bins as usize;
    let mut out = vec![0.0; spectrogram_bins as usize * cols];
    let mut set = |j: i64, i: usize, v: f64| -> Result<()> {
        if !(0..spectrogram_bins).contains(&j) {
            bail!(
                "MelWeightMatrix: filter {i} reaches bin {j}, outside the {spectrogram_bins} spectrogram bins (upper_edge_hertz above the Nyquist frequency?)"
            );
        }
        out[j as usize * cols + i] = v;
        Ok(())
    };
    for i in 0..cols {
        let (left, center, right) = (points[i], points[i + 1], points[i + 2]);
        if center == left {
            set(center, i, 1.0)?;
        } else {
            for j in left..=center {
                set(j, i, (j - left) as f64 / (center - left) as f64)?;
            }
        }
        if right > center {
            for j in center..right {
                set(j, i, (right - j) as f64 / (right - center) as f64)?;
            }
        }
    }
    one(Value::constant(Const::from_f64(
        dtype,
        vec![spectrogram_bins, bins],
        &out,
    )))
}

/// EyeLike: ones on diagonal `k` of a 2-D shape, a constant.
pub fn eye_like(node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    if shape.len() != 2 {
        bail!("EyeLike takes a 2-D input, not {shape:?}");
    }
    let dtype = datatype(node, "dtype", x.dtype())?;
    let k = node.int("k", 0)?;
    let (rows, cols) = (shape[0], shape[1]);
    if checked_numel(&shape).is_none_or(|n| n > MAX_TWIDDLES) {
        bail!("EyeLike of {shape:?} is too large a constant");
    }
    let mut values = vec![0i64; (rows * cols) as usize];
    for r in 0..rows {
        let c = r.saturating_add(k);
        if (0..cols).contains(&c) {
            values[(r * cols + c) as usize] = 1;
        }
    }
    one(Value::constant(Const::from_i64(dtype, shape, &values)))
}

/// A constant scalar integer input, if given.
fn const_scalar(node: &Node, index: usize, what: &str) -> Result<Option<i64>> {
    match node.const_ints(index, what)? {
        None => Ok(None),
        Some(v) if v.len() == 1 => Ok(Some(v[0])),
        Some(_) => bail!("{what} must be a scalar"),
    }
}

/// The twiddle matrix `[L*C, K*O]` of a DFT of length `n` over `l` input
/// samples with `c` components each (1 real, 2 complex, interleaved) and
/// `k` output bins of `o` components, each input row `i` scaled by
/// `window[i]`. Forward: `e^{-2πi kn/N}`; inverse: `e^{+2πi kn/N} / N`;
/// `real_inverse` (an inverse one-sided transform): the real signal of the
/// Hermitian spectrum whose first bins are the input.
fn twiddles(
    n: i64,
    (l, c): (i64, i64),
    (k, o): (i64, i64),
    (inverse, real_inverse): (bool, bool),
    window: Option<&[f64]>,
) -> Vec<f64> {
    let mut w = vec![0.0; (l * c * k * o) as usize];
    let (used, from_bins) = if real_inverse {
        (l.min(n / 2 + 1), true)
    } else {
        (l.min(n), false)
    };
    for row in 0..used {
        let scale = window.map_or(1.0, |w| w[row as usize]);
        for col in 0..k {
            // The angle 2π·(row·col mod N)/N, reduced exactly.
            let phase = ((row as i128 * col as i128) % n as i128) as f64;
            let theta = 2.0 * PI * phase / n as f64;
            let (cos, sin) = (theta.cos() * scale, theta.sin() * scale);
            let at = |ci: i64, oi: i64| ((row * c + ci) * k * o + col * o + oi) as usize;
            if from_bins {
                // Bin `row` of a one-sided spectrum, sample `col`: DC and
                // Nyquist once, the others twice (their mirror images).
                let weight = if row == 0 || (n % 2 == 0 && row == n / 2) {
                    1.0
                } else {
                    2.0
                } / n as f64;
                w[at(0, 0)] = weight * cos;
                if c == 2 {
                    w[at(1, 0)] = -weight * sin;
                }
            } else if inverse {
                let s = 1.0 / n as f64;
                w[at(0, 0)] = s * cos;
                w[at(0, 1)] = s * sin;
                if c == 2 {
                    w[at(1, 0)] = -s * sin;
                    w[at(1, 1)] = s * cos;
                }
            } else {
                w[at(0, 0)] = cos;
                w[at(0, 1)] = -sin;
                if c == 2 {
                    w[at(1, 0)] = sin;
                    w[at(1, 1)] = cos;
                }
            }
        }
    }
    w
}

/// `x` (`[M, L*C]`) times a constant matrix `[L*C, K*O]`.
fn times_constant(imp: &mut Importer, x: &Value, w: Vec<f64>, cols: i64) -> Result<Value> {
    let rows = x.shape()[1];
    let wc = Value::constant(Const::from_f64(x.dtype(), vec![rows, cols], &w));
    let (a, b) = (imp.val(x)?, imp.val(&wc)?);
    Ok(Value::Tensor(super::matmul::matmul_vals(imp, &a, &b)?))
}

/// DFT (opset 17: `axis` attribute, default 1; opset 20: `axis` input,
/// default -2), forward or inverse, one-sided or full, on real (last
/// dimension 1) or complex (2) signals, as a matmul. Opset 20's axis may
/// be a run-time scalar when the output's shape does not depend on it
/// (every signal axis gives the same shape): the transforms along every
/// signal axis, the one asked for selected at run time (an axis out of
/// range selects the last signal axis's, as CumSum does).
pub fn dft(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    require_float(x, "DFT's input")?;
    let shape = x.shape();
    let rank = shape.len();
    let c = *shape.last().unwrap_or(&0);
    if rank < 2 || !(c == 1 || c == 2) {
        bail!("DFT's input must end in a dimension of 1 (real) or 2 (complex), not {shape:?}");
    }
    let r = rank as i64;
    let runtime_axis = match node.inputs.get(2) {
        Some(Some(Value::Tensor(a))) if node.opset >= 20 => Some(a.clone()),
        _ => None,
    };
    let Some(a) = runtime_axis else {
        let axis = if node.opset >= 20 {
            const_scalar(node, 2, "DFT's axis")?.unwrap_or(-2)
        } else {
            node.int("axis", 1)?
        };
        let axis = if axis < 0 { axis + r } else { axis };
        if !(0..r - 1).contains(&axis) {
            bail!("DFT's axis must be a signal axis (not the last), not {axis} for rank {rank}");
        }
        return one(dft_along(imp, node, x, axis as usize)?);
    };
    if a.ty.numel() != 1 || !a.dtype().is_int() {
        bail!("DFT's axis must be one integer, not {}", a.ty);
    }
    let input = node.proto.input.get(2).map_or("", String::as_str);
    let mut results = Vec::new();
    for axis in 0..rank - 1 {
        match dft_along(imp, node, x, axis) {
            Ok(y) => results.push(y),
            Err(e) => {
                return Err(ImportError::needs_value(
                    format!(
                        "DFT's axis (input #2 '{input}') is computed at run time, and not every signal axis can be transformed (axis {axis}: {}); tcc needs it to be a constant",
                        e.message
                    ),
                    input,
                ));
            }
        }
    }
    let out_shape = results[0].shape();
    if results.iter().any(|y| y.shape() != out_shape) {
        return Err(ImportError::needs_value(
            format!(
                "DFT's axis (input #2 '{input}') is computed at run time, and the output's shape depends on it (a one-sided transform or a dft_length over axes of different lengths); tcc needs it to be a constant (static shapes)"
            ),
            input,
        ));
    }
    let out_rank = out_shape.len();
    let a = imp.e.reshape(&a, &vec![1; out_rank]);
    let a = imp.e.cast(&a, DType::I64);
    let mut y = imp.val(&results[rank - 2])?;
    for axis in (0..rank - 2).rev() {
        let on_axis = imp.val(&results[axis])?;
        let mut hit = None;
        for value in [axis as i64, axis as i64 - r] {
            let v = imp.e.scalar(DType::I64, out_rank, value as f64);
            let eq = imp.e.binary_to("tosa.equal", &a, &v, DType::Bool)?;
            hit = Some(match hit {
                None => eq,
                Some(h) => imp.e.binary("tosa.logical_or", &h, &eq)?,
            });
        }
        y = imp.e.select(&hit.expect("two tests"), &on_axis, &y)?;
    }
    one(Value::Tensor(y))
}

/// The DFT of `x` along the signal axis `axis` (see [`dft`]).
fn dft_along(imp: &mut Importer, node: &Node, x: &Value, axis: usize) -> Result<Value> {
    let shape = x.shape();
    let rank = shape.len();
    let c = shape[rank - 1];
    let inverse = node.int("inverse", 0)? != 0;
    let onesided = node.int("onesided", 0)? != 0;
    let l = shape[axis];
    let n = match const_scalar(node, 1, "DFT's dft_length")? {
        Some(n) => n,
        None if inverse && onesided => 2 * (l - 1),
        None => l,
    };
    if n < 1 {
        bail!("DFT's length {n} must be positive");
    }
    let real_inverse = inverse && onesided;
    let (k, o) = if real_inverse {
        (n, 1)
    } else if onesided {
        (n / 2 + 1, 2)
    } else {
        (n, 2)
    };
    if checked_numel(&[l, c, k, o]).is_none_or(|e| e > MAX_TWIDDLES) {
        bail!("DFT of {l} samples to {k} bins is too large for tcc's matmul form");
    }
    // Move the signal axis next to the components: [..., L, C].
    let mut perm: Vec<usize> = (0..rank - 1).filter(|&a| a != axis).collect();
    perm.push(axis);
    perm.push(rank - 1);
    let moved = transpose_value(imp, x, &perm)?;
    let outer: Vec<i64> = moved.shape()[..rank - 2].to_vec();
    let m: i64 = outer.iter().product();
    let flat = reshape_value(imp, &moved, &[m, l * c])?;
    let w = twiddles(n, (l, c), (k, o), (inverse, real_inverse), None);
    let y = times_constant(imp, &flat, w, k * o)?;
    let mut out_shape = outer;
    out_shape.extend([k, o]);
    let y = reshape_value(imp, &y, &out_shape)?;
    // Back to the input's axis order.
    let mut inverse_perm = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse_perm[p] = i;
    }
    transpose_value(imp, &y, &inverse_perm)
}

/// STFT (opset 17): frames of `frame_length` every `frame_step` samples,
/// each windowed and transformed; `[batch, frames, bins, 2]`.
pub fn stft(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    require_float(x, "STFT's signal")?;
    let shape = x.shape();
    if shape.len() != 3 || !(shape[2] == 1 || shape[2] == 2) {
        bail!("STFT's signal must be [batch, length, 1 or 2], not {shape:?}");
    }
    let (batch, length, c) = (shape[0], shape[1], shape[2]);
    let Some(step) = const_scalar(node, 1, "STFT's frame_step")? else {
        bail!("STFT needs frame_step")
    };
    let window = node.opt(2);
    let frame_length = match const_scalar(node, 3, "STFT's frame_length")? {
        Some(f) => f,
        None => match window {
            Some(w) => w.shape().first().copied().unwrap_or(0),
            None => length,
        },
    };
    if step < 1 || frame_length < 1 || frame_length > length {
        bail!("STFT with frame_step {step} and frame_length {frame_length} over {length} samples");
    }
    if let Some(w) = window
        && w.shape() != [frame_length]
    {
        bail!(
            "STFT's window must have frame_length ({frame_length}) elements, not {:?}",
            w.shape()
        );
    }
    let onesided = node.int("onesided", 1)? != 0;
    let frames = 1 + (length - frame_length) / step;
    if frames > 1 << 14 {
        bail!("STFT of {frames} frames: too many (at most 16384)");
    }
    let n = frame_length;
    let k = if onesided { n / 2 + 1 } else { n };
    if checked_numel(&[n, c, k, 2]).is_none_or(|e| e > MAX_TWIDDLES) {
        bail!("STFT frames of {n} samples are too large for tcc's matmul form");
    }
    // Frames [batch, frames, n, c].
    let mut parts = Vec::new();
    for f in 0..frames {
        let part = strided_slice_value(imp, x, &[0, f * step, 0], &[1, 1, 1], &[batch, n, c])?;
        parts.push(reshape_value(imp, &part, &[batch, 1, n, c])?);
    }
    let refs: Vec<&Value> = parts.iter().collect();
    let mut framed = concat_values(imp, &refs, 1)?;
    // A constant window is folded into the twiddles, one computed at run
    // time multiplies the frames.
    let window_values = match window {
        Some(Value::Const(w)) => Some(w.f64s()),
        Some(w @ Value::Tensor(_)) => {
            let wv = reshape_value(imp, w, &[1, 1, n, 1])?;
            let (a, b) = (imp.val(&framed)?, imp.val(&wv)?);
            let b = imp.e.cast(&b, a.dtype());
            framed = Value::Tensor(imp.e.mul(&a, &b)?);
            None
        }
        None => None,
    };
    let flat = reshape_value(imp, &framed, &[batch * frames, n * c])?;
    let w = twiddles(n, (n, c), (k, 2), (false, false), window_values.as_deref());
    let y = times_constant(imp, &flat, w, k * 2)?;
    let y = reshape_value(imp, &y, &[batch, frames, k, 2])?;
    match y {
        Value::Tensor(v) => tensor(v),
        other => one(other),
    }
}
