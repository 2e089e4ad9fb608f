//! Pooling, and the window arithmetic shared with convolutions.
//!
//! ONNX tensors are NCHW; TOSA's are NHWC, so 2-D pools are wrapped in
//! transposes (the graph phase cancels adjacent pairs). 1-D pools run as
//! 2-D pools of height 1. Dilated and 3-D pools, which TOSA lacks, are
//! linalg pooling ops on an explicitly padded NDHWC input.

use super::super::dtype::{DType, TType};
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::one;

/// One spatial axis of a sliding window after ONNX's output-size rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Input length.
    pub input: i64,
    pub kernel: i64,
    pub stride: i64,
    pub dilation: i64,
    /// Padding before and after, adjusted so that the last window ends
    /// exactly at the padded input's end (TOSA requires it).
    pub pad_begin: i64,
    pub pad_end: i64,
    /// The padding the model asked for (for average-pool divisors).
    pub model_pad_end: i64,
    /// Input elements actually used (the rest is cropped).
    pub used: i64,
    pub output: i64,
}

impl Window {
    pub fn new(
        input: i64,
        kernel: i64,
        stride: i64,
        dilation: i64,
        pad_begin: i64,
        pad_end: i64,
        ceil_mode: bool,
    ) -> Result<Window> {
        if kernel <= 0 || stride <= 0 || dilation <= 0 {
            bail!("kernel {kernel}, stride {stride} and dilation {dilation} must be positive");
        }
        if pad_begin < 0 || pad_end < 0 {
            bail!("negative padding {pad_begin}, {pad_end}");
        }
        let extent = (kernel - 1)
            .checked_mul(dilation)
            .and_then(|e| e.checked_add(1))
            .ok_or_else(|| ImportError::new("window too large"))?;
        let padded = input
            .checked_add(pad_begin)
            .and_then(|p| p.checked_add(pad_end))
            .ok_or_else(|| ImportError::new("padding too large"))?;
        if padded < extent {
            bail!("the window ({extent}) is larger than the padded input ({padded})");
        }
        let mut output = (padded - extent) / stride + 1;
        if ceil_mode {
            let ceil =
                (((padded - extent) as i128 + stride as i128 - 1) / stride as i128) as i64 + 1;
            // A last window that would start in the end padding is dropped.
            output = if (ceil as i128 - 1) * stride as i128 >= (input + pad_begin) as i128 {
                ceil - 1
            } else {
                ceil
            };
        }
        let needed = (output - 1) * stride + extent;
        let (mut pad_end_new, mut used) = (pad_end, input);
        if needed > padded {
            pad_end_new += needed - padded;
        } else {
            let mut excess = padded - needed;
            let cut = excess.min(pad_end_new);
            pad_end_new -= cut;
            excess -= cut;
            used -= excess;
        }
        if used <= 0 {
            bail!("the windows use no input element");
        }
        Ok(Window {
            input,
            kernel,
            stride,
            dilation,
            pad_begin,
            pad_end: pad_end_new,
            model_pad_end: pad_end,
            used,
            output,
        })
    }

    /// Elements of window `o` inside `[lo, hi)` (input coordinates).
    pub fn count_in(&self, o: i64, lo: i64, hi: i64) -> i64 {
        // Taps k in [0, kernel) with lo <= start + k * dilation < hi.
        let start = o * self.stride - self.pad_begin;
        let first = div_ceil(lo - start, self.dilation).max(0);
        let end = div_ceil(hi - start, self.dilation).min(self.kernel);
        (end - first).max(0)
    }

    /// The ONNX average-pool divisor of window `o`.
    fn onnx_count(&self, o: i64, count_include_pad: bool) -> i64 {
        let count = if count_include_pad {
            self.count_in(o, -self.pad_begin, self.input + self.model_pad_end)
        } else {
            self.count_in(o, 0, self.input)
        };
        count.max(1)
    }
}

/// `ceil(a / b)` for b > 0.
fn div_ceil(a: i64, b: i64) -> i64 {
    a.div_euclid(b) + (a.rem_euclid(b) != 0) as i64
}

/// Per-axis padding from `pads`/`auto_pad` (ONNX's SAME_UPPER/SAME_LOWER
/// padding keeps `ceil(input / stride)` outputs).
pub fn padding(
    node: &Node,
    inputs: &[i64],
    kernels: &[i64],
    strides: &[i64],
    dilations: &[i64],
) -> Result<Vec<(i64, i64)>> {
    let n = inputs.len();
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    match auto_pad.as_str() {
        "NOTSET" => {
            let pads = node.ints("pads")?.unwrap_or_else(|| vec![0; 2 * n]);
            if pads.len() != 2 * n {
                bail!("{} pads for {n} spatial axes", pads.len());
            }
            Ok((0..n).map(|i| (pads[i], pads[i + n])).collect())
        }
        "VALID" => Ok(vec![(0, 0); n]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut out = Vec::new();
            for i in 0..n {
                if strides[i] <= 0 {
                    bail!("stride {}", strides[i]);
                }
                if kernels[i] <= 0 || dilations[i] <= 0 {
                    bail!(
                        "kernel {} and dilation {} must be positive",
                        kernels[i],
                        dilations[i]
                    );
                }
                let (input, stride) = (inputs[i] as i128, strides[i] as i128);
                let output = (input + stride - 1) / stride;
                let extent = (kernels[i] as i128 - 1) * dilations[i] as i128 + 1;
                let total = ((output - 1) * stride + extent - input).max(0);
                if total > i64::MAX as i128 / 2 {
                    bail!("padding too large");
                }
                let total = total as i64;
                let small = total / 2;
                out.push(if auto_pad == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                });
            }
            Ok(out)
        }
        other => bail!("auto_pad '{other}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER"),
    }
}

/// An integer-list attribute with one entry per spatial axis.
pub fn per_axis(node: &Node, name: &str, n: usize, default: i64) -> Result<Vec<i64>> {
    match node.ints(name)? {
        Some(v) if v.len() == n => Ok(v),
        Some(v) if v.is_empty() => Ok(vec![default; n]),
        Some(v) => bail!("'{name}' has {} entries for {n} spatial axes", v.len()),
        None => Ok(vec![default; n]),
    }
}

/// NC... → N...C and back.
pub fn to_channels_last(rank: usize) -> Vec<usize> {
    let mut perm = vec![0];
    perm.extend(2..rank);
    perm.push(1);
    perm
}

pub fn to_channels_first(rank: usize) -> Vec<usize> {
    let mut perm = vec![0, rank - 1];
    perm.extend(1..rank - 1);
    perm
}

/// The sliding windows of every spatial axis, padded as the node asks
/// (`pads` or `auto_pad`, see [`padding`]).
pub fn windows(
    node: &Node,
    inputs: &[i64],
    kernels: &[i64],
    strides: &[i64],
    dilations: &[i64],
    ceil_mode: bool,
) -> Result<Vec<Window>> {
    let pads = padding(node, inputs, kernels, strides, dilations)?;
    (0..inputs.len())
        .map(|i| {
            let (begin, end) = pads[i];
            Window::new(
                inputs[i],
                kernels[i],
                strides[i],
                dilations[i],
                begin,
                end,
                ceil_mode,
            )
        })
        .collect()
}

/// Crops the unused tail of each spatial axis of an NC... tensor.
pub fn crop(imp: &mut Importer, x: &Val, windows: &[Window]) -> Val {
    let mut size = x.shape().to_vec();
    for (i, w) in windows.iter().enumerate() {
        size[i + 2] = w.used;
    }
    imp.e.slice(x, &vec![0; x.rank()], &size)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Max,
    Average,
    /// The window sums (LpPool, on |x|^p; padding counts as zeros).
    Sum,
}

/// What one MaxPool/AveragePool computes, for its TOSA or linalg lowering.
#[derive(Clone, Copy)]
struct Pooling<'w> {
    windows: &'w [Window],
    kind: Kind,
    count_include_pad: bool,
}

pub fn pool(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let kind = if node.op() == "MaxPool" {
        Kind::Max
    } else {
        Kind::Average
    };
    let input = node.input(0)?;
    // MaxPool takes integer tensors too (int8 and uint8 since opset 12:
    // the window's largest element); AveragePool only floats.
    if kind == Kind::Average || !input.dtype().is_int() {
        require_float(input, &format!("{}'s input", node.op()))?;
    }
    let x = imp.val(input)?;
    let count_include_pad = node.int("count_include_pad", 0)? != 0;
    let (y, windows) = pool_windows(imp, node, &x, kind, count_include_pad)?;
    let wants_indices =
        kind == Kind::Max && node.proto.output.get(1).is_some_and(|n| !n.is_empty());
    if wants_indices {
        let indices = super::spatial::max_pool_indices(imp, node, &x, &windows)?;
        return Ok(vec![Value::Tensor(y), Value::Tensor(indices)]);
    }
    one(Value::Tensor(y))
}

/// Pools `x` (NC...) as the node's window attributes say; returns the
/// result and the windows.
fn pool_windows(
    imp: &mut Importer,
    node: &Node,
    x: &Val,
    kind: Kind,
    count_include_pad: bool,
) -> Result<(Val, Vec<Window>)> {
    let rank = x.rank();
    if !(3..=5).contains(&rank) {
        bail!(
            "{} of a rank-{rank} tensor (1-D to 3-D pooling is supported)",
            node.op()
        );
    }
    let n = rank - 2;
    let kernels = node
        .ints("kernel_shape")?
        .ok_or_else(|| ImportError::new("kernel_shape is required"))?;
    if kernels.len() != n {
        bail!(
            "kernel_shape has {} entries for {n} spatial axes",
            kernels.len()
        );
    }
    let strides = per_axis(node, "strides", n, 1)?;
    let dilations = per_axis(node, "dilations", n, 1)?;
    let ceil_mode = node.int("ceil_mode", 0)? != 0;
    let inputs = &x.shape()[2..];
    let windows = windows(node, inputs, &kernels, &strides, &dilations, ceil_mode)?;
    let pooling = Pooling {
        windows: &windows,
        kind,
        count_include_pad,
    };
    let cropped = crop(imp, x, &windows);
    // TOSA's pools take float and narrow integer tensors; the importer's
    // integers are wider (uint8 widens to int64), which linalg's pools take.
    let y = if n <= 2
        && x.dtype().is_float()
        && dilations.iter().all(|&d| d == 1)
        && windows
            .iter()
            .all(|w| w.pad_begin < w.kernel && w.pad_end < w.kernel)
    {
        tosa_pool(imp, cropped, pooling)?
    } else {
        linalg_pool(imp, cropped, pooling)?
    };
    Ok((y, windows))
}

/// `|x|^p` (p = 1, 2 or any positive value).
fn abs_pow(imp: &mut Importer, x: &Val, p: i64) -> Result<Val> {
    Ok(match p {
        1 => imp.e.unary("tosa.abs", x),
        2 => imp.e.mul(x, x)?,
        p if p > 0 => {
            let a = imp.e.unary("tosa.abs", x);
            let e = imp.e.scalar(x.dtype(), x.rank(), p as f64);
            imp.e.binary("tosa.pow", &a, &e)?
        }
        p => bail!("LpPool p = {p} must be positive"),
    })
}

/// `s^(1/p)`.
fn root(imp: &mut Importer, s: &Val, p: i64) -> Result<Val> {
    Ok(match p {
        1 => s.clone(),
        2 => imp
            .e
            .map(&[s], s.ty.clone(), &|b, a| b.op("math.sqrt", &[a[0]])),
        p => {
            let e = imp.e.scalar(s.dtype(), s.rank(), 1.0 / p as f64);
            imp.e.binary("tosa.pow", s, &e)?
        }
    })
}

/// LpPool: `(sum over the window of |x|^p)^(1/p)`, padding counting as 0.
/// LpPool's and GlobalLpPool's `p`: an integer since opset 2, a float
/// before (which must then be integral).
fn lp_order(node: &Node) -> Result<i64> {
    if node.opset >= 2 {
        return node.int("p", 2);
    }
    let p = node.float("p", 2.0)?;
    if p.fract() != 0.0 || !(1.0..=64.0).contains(&p) {
        bail!(
            "{} with p = {p}: only integral orders from 1 are supported",
            node.op()
        );
    }
    Ok(p as i64)
}

pub fn lp_pool(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "LpPool's input")?;
    let x = imp.val(input)?;
    let p = lp_order(node)?;
    let a = abs_pow(imp, &x, p)?;
    let (s, _) = pool_windows(imp, node, &a, Kind::Sum, true)?;
    one(Value::Tensor(root(imp, &s, p)?))
}

/// GlobalLpPool: LpPool over every spatial element.
pub fn global_lp_pool(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "GlobalLpPool's input")?;
    let x = imp.val(input)?;
    if x.rank() < 3 {
        bail!("GlobalLpPool needs an N x C x spatial input");
    }
    let p = lp_order(node)?;
    let s = x.shape().to_vec();
    let spatial: i64 = s[2..].iter().product();
    let flat = imp.e.reshape(&x, &[s[0], s[1], spatial]);
    let a = abs_pow(imp, &flat, p)?;
    let sum = imp.e.reduce("tosa.reduce_sum", &a, 2);
    let y = root(imp, &sum, p)?;
    let mut out = vec![s[0], s[1]];
    out.extend(std::iter::repeat_n(1, s.len() - 2));
    one(Value::Tensor(imp.e.reshape(&y, &out)))
}

/// Multiplies a channels-last pooled tensor [N, O..., C] by
/// `factor(window, o)` along each spatial axis (the windows are boxes, so
/// divisors factor per axis).
fn scale_per_axis(
    imp: &mut Importer,
    y: &Val,
    windows: &[Window],
    factor: &dyn Fn(&Window, i64) -> f64,
) -> Result<Val> {
    let mut y = y.clone();
    for (a, w) in windows.iter().enumerate() {
        if w.output > fold::FOLD_LIMIT {
            bail!(
                "average pooling with {} outputs along an axis is too large",
                w.output
            );
        }
        let values: Vec<f64> = (0..w.output).map(|o| factor(w, o)).collect();
        if values.iter().all(|&v| v == 1.0) {
            continue;
        }
        let mut shape = vec![1; y.rank()];
        shape[a + 1] = w.output;
        let c = imp
            .e
            .constant(&Const::from_f64(y.dtype(), shape, &values), "pool_divisor")?;
        y = imp.e.mul(&y, &c)?;
    }
    Ok(y)
}

/// Pools `x`, already cropped to the windows' used extent, with TOSA's
/// 2-D pools (1-D as height 1).
fn tosa_pool(imp: &mut Importer, x: Val, pooling: Pooling) -> Result<Val> {
    let rank = x.rank();
    // 1-D: height 1.
    let (x4, w2): (Val, Vec<Window>) = if rank == 3 {
        let s = x.shape().to_vec();
        let unit = Window::new(1, 1, 1, 1, 0, 0, false)?;
        (
            imp.e.reshape(&x, &[s[0], s[1], 1, s[2]]),
            vec![unit, pooling.windows[0]],
        )
    } else {
        (x, pooling.windows.to_vec())
    };
    let nhwc = imp.e.transpose(&x4, &[0, 2, 3, 1]);
    let s = nhwc.shape().to_vec();
    let out_ty = nhwc
        .ty
        .with_shape(vec![s[0], w2[0].output, w2[1].output, s[3]]);
    let window = [
        ("kernel", Attr::I64s(vec![w2[0].kernel, w2[1].kernel])),
        (
            "pad",
            Attr::I64s(vec![
                w2[0].pad_begin,
                w2[0].pad_end,
                w2[1].pad_begin,
                w2[1].pad_end,
            ]),
        ),
        ("stride", Attr::I64s(vec![w2[0].stride, w2[1].stride])),
    ];
    let mut y = match pooling.kind {
        Kind::Max => imp.e.op("tosa.max_pool2d", &[&nhwc], &window, out_ty),
        Kind::Average | Kind::Sum => {
            let zp = imp.e.zero_point(nhwc.dtype());
            let mut attrs = vec![("acc_type", Attr::Type(DType::F32))];
            attrs.extend(window.iter().cloned());
            imp.e
                .op("tosa.avg_pool2d", &[&nhwc, &zp, &zp], &attrs, out_ty)
        }
    };
    if pooling.kind != Kind::Max {
        // TOSA divides by the window's elements inside the (cropped) input.
        let sum = pooling.kind == Kind::Sum;
        y = scale_per_axis(imp, &y, &w2, &|w, o| {
            let tosa = w.count_in(o, 0, w.used) as f64;
            if sum {
                tosa
            } else {
                tosa / w.onnx_count(o, pooling.count_include_pad) as f64
            }
        })?;
    }
    let y = imp.e.transpose(&y, &[0, 3, 1, 2]);
    Ok(if rank == 3 {
        let s = y.shape().to_vec();
        imp.e.reshape(&y, &[s[0], s[1], s[3]])
    } else {
        y
    })
}

/// Pools `x`, already cropped, with linalg's named pooling ops (dilation,
/// 3-D, and padding as wide as the kernel, which TOSA's pools reject).
fn linalg_pool(imp: &mut Importer, x: Val, pooling: Pooling) -> Result<Val> {
    let rank = x.rank();
    let mut pads = vec![(0, 0), (0, 0)];
    pads.extend(pooling.windows.iter().map(|w| (w.pad_begin, w.pad_end)));
    // A maximum's padding and start: -inf, or an integer type's least
    // value (the widened unsigned types' values are never negative).
    let fill = match pooling.kind {
        Kind::Max => super::spatial::lowest(x.dtype()),
        _ => 0.0,
    };
    let padded = imp.e.pad(&x, &pads, fill);
    let cl = imp.e.transpose(&padded, &to_channels_last(rank));
    let s = cl.shape().to_vec();
    let mut out_shape = vec![s[0]];
    out_shape.extend(pooling.windows.iter().map(|w| w.output));
    out_shape.push(s[rank - 1]);
    let out_ty = TType::new(x.dtype(), out_shape);
    let init = imp.e.filled(&out_ty, fill);
    let window = imp.e.empty(&TType::new(
        x.dtype(),
        pooling.windows.iter().map(|w| w.kernel).collect(),
    ));
    let name = match (pooling.kind, pooling.windows.len()) {
        (Kind::Max, 1) => "linalg.pooling_nwc_max",
        (Kind::Max, 2) => "linalg.pooling_nhwc_max",
        (Kind::Max, _) => "linalg.pooling_ndhwc_max",
        (_, 1) => "linalg.pooling_nwc_sum",
        (_, 2) => "linalg.pooling_nhwc_sum",
        (_, _) => "linalg.pooling_ndhwc_sum",
    };
    let attrs = [
        (
            "dilations",
            Attr::I64Elements(pooling.windows.iter().map(|w| w.dilation).collect()),
        ),
        (
            "strides",
            Attr::I64Elements(pooling.windows.iter().map(|w| w.stride).collect()),
        ),
    ];
    let mut y = imp.e.linalg_named(name, &attrs, &[&cl, &window], &init);
    if pooling.kind == Kind::Average {
        y = scale_per_axis(imp, &y, pooling.windows, &|w, o| {
            1.0 / w.onnx_count(o, pooling.count_include_pad) as f64
        })?;
    }
    Ok(imp.e.transpose(&y, &to_channels_first(rank)))
}

pub fn global_pool(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, &format!("{}'s input", node.op()))?;
    let x = imp.val(input)?;
    if x.rank() < 3 {
        bail!("{} needs an N x C x spatial input", node.op());
    }
    let s = x.shape().to_vec();
    let spatial: i64 = s[2..].iter().product();
    let flat = imp.e.reshape(&x, &[s[0], s[1], spatial]);
    let y = if node.op() == "GlobalMaxPool" {
        imp.e.reduce("tosa.reduce_max", &flat, 2)
    } else {
        let sum = imp.e.reduce("tosa.reduce_sum", &flat, 2);
        imp.e.scale(&sum, 1.0 / spatial as f64)?
    };
    let mut out = vec![s[0], s[1]];
    out.extend(std::iter::repeat_n(1, s.len() - 2));
    one(Value::Tensor(imp.e.reshape(&y, &out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_onnx_output_sizes() {
        // 1000 wide, kernel 80 dilated 10, pads 20/20, stride 10 -> 25.
        let w = Window::new(1000, 80, 10, 10, 20, 20, false).unwrap();
        assert_eq!(w.output, 25);
        assert_eq!(
            (w.output - 1) * w.stride + (w.kernel - 1) * w.dilation + 1,
            w.used + w.pad_begin + w.pad_end
        );
        // Floor mode drops the partial window: 7, k 2, s 2 -> 3, last input cropped.
        let w = Window::new(7, 2, 2, 1, 0, 0, false).unwrap();
        assert_eq!((w.output, w.used, w.pad_end), (3, 6, 0));
        // Ceil mode pads it: -> 4.
        let w = Window::new(7, 2, 2, 1, 0, 0, true).unwrap();
        assert_eq!((w.output, w.used, w.pad_end), (4, 7, 1));
        assert_eq!(w.count_in(3, 0, 7), 1);
        assert!(Window::new(3, 5, 1, 1, 0, 0, false).is_err());
        assert!(Window::new(3, 1, 0, 1, 0, 0, false).is_err());
    }
}
