//! Whether a 2-D convolution (`tcc.conv` of kind `conv_2d_nhwc_hwcf`)
//! reads its NHWC input as it is: the body of the op, as
//! `tcc-fold-conv-inputs` writes it, loads `input[n, y s + ky d - pad,
//! x s + kx d - pad, c]` and, where the window reaches past the image,
//! selects the pad value 0 instead; nothing else is computed on the way
//! (no folded producer, no other pad value, no clamped edge reads).
//!
//! Why: a GEMM body that gathers A's tiles itself from the image (the
//! FP16/BF16 `wgmma` body's implicit GEMM, which copies 16-byte runs of
//! channels with `cp.async` and zero-fills the padding) needs the
//! window's geometry rather than the C statements of the body, and may
//! take the convolution only when these are all the body does. Both the
//! tile phase (on tensors: `tensor.extract`) and the kernel writer (on
//! memrefs: `memref.load`) ask. A `linalg.conv_2d_nhwc_hwcf` (a
//! convolution without padding, which keeps its named form) reads its
//! image as it is by definition.

use melior::ir::operation::OperationLike;
use melior::ir::{BlockLike, OperationRef, RegionLike, Value, ValueLike};

use super::conv::{ConvWindow, WindowKind};
use super::types::static_shape;
use super::util::{constant_float, constant_int, defining_op, integer_value, op_name};

/// The geometry of a convolution that reads its NHWC input as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainInput<'c> {
    /// The input image (a tensor or a memref of static shape).
    pub image: Value<'c, 'c>,
    /// N, H, W, C of the image.
    pub image_shape: [i64; 4],
    /// OH, OW of the output.
    pub output: [i64; 2],
    /// KH, KW of the filter.
    pub taps: [i64; 2],
    pub strides: [i64; 2],
    pub dilations: [i64; 2],
    /// Rows and columns of zeros before the image (the window's first
    /// tap of output pixel 0 is at `-pads`).
    pub pads: [i64; 2],
}

impl PlainInput<'_> {
    /// Whether the convolution reads its image as a plain matrix of
    /// pixels by channels: one tap, stride 1, no padding.
    pub fn is_matrix(&self) -> bool {
        let [_, h, w, _] = self.image_shape;
        self.taps == [1, 1]
            && self.strides == [1, 1]
            && self.pads == [0, 0]
            && self.output == [h, w]
    }
}

/// Loops of a 2-D convolution: n, oh, ow, f, kh, kw, c.
const LOOPS: usize = 7;

/// A value of the body as the analysis sees it.
#[derive(Clone, Debug, PartialEq)]
enum Term {
    /// `sum(coefficients[d] * index(d)) + constant`.
    Linear([i64; LOOPS], i64),
    /// A linear term clamped into `[low, high]` (`maxsi` then `minsi`, or
    /// the other way round; `None` for a side not yet clamped).
    Clamped([i64; LOOPS], i64, Option<i64>, Option<i64>),
    /// The conjunction of bounds `term >= low` (`true`) or `term < high`
    /// (`false`), each with its bound.
    Bounds(Vec<([i64; LOOPS], i64, bool, i64)>),
    /// A float constant.
    Float(f64),
}

/// The term of an index, bound or float value of the body; `None` for
/// anything else (a load, a block argument, float arithmetic).
fn term(value: Value, depth: usize) -> Option<Term> {
    if let Some(constant) = constant_int(value) {
        return Some(Term::Linear([0; LOOPS], constant));
    }
    if let Some(constant) = constant_float(value) {
        return Some(Term::Float(constant));
    }
    if depth > 32 {
        return None;
    }
    let op = defining_op(unsafe { Value::from_raw(value.to_raw()) })?;
    let operand = |i: usize| -> Option<Term> { term(op.operand(i).ok()?, depth + 1) };
    let linear = |i: usize| match operand(i)? {
        Term::Linear(c, k) => Some((c, k)),
        _ => None,
    };
    match op_name(&op).as_str() {
        "linalg.index" => {
            let dim = op.attribute("dim").ok().and_then(integer_value)?;
            let mut c = [0; LOOPS];
            *c.get_mut(usize::try_from(dim).ok()?)? = 1;
            Some(Term::Linear(c, 0))
        }
        name @ ("arith.addi" | "arith.subi") => {
            let ((a, x), (b, y)) = (linear(0)?, linear(1)?);
            let sign = if name == "arith.addi" { 1 } else { -1 };
            let mut c = [0; LOOPS];
            for d in 0..LOOPS {
                c[d] = a[d].checked_add(sign * b[d])?;
            }
            Some(Term::Linear(c, x.checked_add(sign * y)?))
        }
        "arith.muli" => {
            let ((a, x), (b, y)) = (linear(0)?, linear(1)?);
            let ((c, k), factor) = if a == [0; LOOPS] {
                ((b, y), x)
            } else if b == [0; LOOPS] {
                ((a, x), y)
            } else {
                return None;
            };
            let mut scaled = [0; LOOPS];
            for d in 0..LOOPS {
                scaled[d] = c[d].checked_mul(factor)?;
            }
            Some(Term::Linear(scaled, k.checked_mul(factor)?))
        }
        name @ ("arith.maxsi" | "arith.minsi") => {
            let (inner, bound) = match (operand(0)?, operand(1)?) {
                (inner, Term::Linear(c, k)) if c == [0; LOOPS] => (inner, k),
                (Term::Linear(c, k), inner) if c == [0; LOOPS] => (inner, k),
                _ => return None,
            };
            let (c, k, low, high) = match inner {
                Term::Linear(c, k) => (c, k, None, None),
                Term::Clamped(c, k, low, high) => (c, k, low, high),
                _ => return None,
            };
            match name {
                "arith.maxsi" if low.is_none() => Some(Term::Clamped(c, k, Some(bound), high)),
                "arith.minsi" if high.is_none() => Some(Term::Clamped(c, k, low, Some(bound))),
                _ => None,
            }
        }
        "arith.cmpi" => {
            // 5: sge, 2: slt (mlir's arith::CmpIPredicate).
            let predicate = op.attribute("predicate").ok().and_then(integer_value)?;
            let (c, k) = linear(0)?;
            let (zero, bound) = linear(1)?;
            if zero != [0; LOOPS] {
                return None;
            }
            match predicate {
                5 => Some(Term::Bounds(vec![(c, k, true, bound)])),
                2 => Some(Term::Bounds(vec![(c, k, false, bound)])),
                _ => None,
            }
        }
        "arith.andi" => match (operand(0)?, operand(1)?) {
            (Term::Bounds(mut a), Term::Bounds(b)) => {
                a.extend(b);
                Some(Term::Bounds(a))
            }
            _ => None,
        },
        _ => None,
    }
}

/// One axis of the image read at `term`: the loops it takes from
/// (`output`, `tap`), and whether and how it is clamped. `absent_tap`:
/// the dilation to take where the tap's loop has one iteration and its
/// index is not in the term (unclamped only).
fn axis(
    term: &Term,
    (output, tap): (usize, usize),
    absent_tap: Option<i64>,
) -> Option<(i64, i64, i64, Option<(i64, i64)>)> {
    let (c, k, clamp) = match term {
        Term::Linear(c, k) => (c, *k, None),
        Term::Clamped(c, k, Some(low), Some(high)) => (c, *k, Some((*low, *high))),
        _ => return None,
    };
    let others = (0..LOOPS).all(|d| d == output || d == tap || c[d] == 0);
    let dilation = match (c[tap], absent_tap) {
        (0, Some(dilation)) if clamp.is_none() => dilation,
        (tap, _) => tap,
    };
    (others && c[output] > 0 && dilation > 0).then_some((c[output], dilation, -k, clamp))
}

/// The geometry of `op` if it is a 2-D NHWC/HWCF `tcc.conv` whose A is
/// its input as it is (see the module's doc); `None` otherwise.
pub fn plain_input<'c>(op: OperationRef<'c, 'c>) -> Option<PlainInput<'c>> {
    input_of(op, false)
}

/// [`plain_input`], also where folding left out the image's batch index
/// of a batch of 1 (the constant 0). The CPU's register-blocked GEMM
/// reads such an image as a matrix (`tcc_kernels` `register_gemm`); the
/// GPU bodies, whose tiles `tcc-configure-kernels` chose with
/// [`plain_input`], keep that. Both take a filter one tap wide or tall
/// (a pointwise convolution's) without that tap's index.
pub fn plain_input_folded<'c>(op: OperationRef<'c, 'c>) -> Option<PlainInput<'c>> {
    input_of(op, true)
}

fn input_of<'c>(op: OperationRef<'c, 'c>, folded: bool) -> Option<PlainInput<'c>> {
    if op_name(&op) == "linalg.conv_2d_nhwc_hwcf" {
        return named_conv_input(op);
    }
    let window = ConvWindow::of_op(&op)?;
    if window.kind != WindowKind::Conv2dNhwcHwcf {
        return None;
    }
    let filter = super::filter_panels::hwcf_filter_shape(op, 0)?;
    let output = static_shape(op.operand(1).ok()?.r#type())?;
    let [_, oh, ow, _] = output[..] else {
        return None;
    };
    let region = op.region(0).ok()?;
    let body = region.first_block()?;
    let weight: Value = body.argument(0).ok()?.into();
    let accumulator: Value = body.argument(1).ok()?.into();
    // The tail: yield(addf(acc, mulf(a, w))).
    let terminator = body.terminator()?;
    let sum = defining_op(terminator.operand(0).ok()?)?;
    if op_name(&sum) != "arith.addf" {
        return None;
    }
    let product = [sum.operand(0).ok()?, sum.operand(1).ok()?]
        .into_iter()
        .find(|v| *v != accumulator)
        .and_then(defining_op)?;
    if op_name(&product) != "arith.mulf" {
        return None;
    }
    let a = match [product.operand(0).ok()?, product.operand(1).ok()?] {
        [w, a] | [a, w] if w == weight && a != weight => a,
        _ => return None,
    };
    // A is the load itself, or select(in bounds, load, 0).
    let read = defining_op(a)?;
    let (load, condition) = if op_name(&read) == "arith.select" {
        if term(read.operand(2).ok()?, 0)? != Term::Float(0.0) {
            return None;
        }
        let Term::Bounds(bounds) = term(read.operand(0).ok()?, 0)? else {
            return None;
        };
        (defining_op(read.operand(1).ok()?)?, bounds)
    } else {
        (read, Vec::new())
    };
    if !matches!(op_name(&load).as_str(), "memref.load" | "tensor.extract")
        || load.operand_count() != 5
    {
        return None;
    }
    let image = load.operand(0).ok()?;
    let image_shape: [i64; 4] = static_shape(image.r#type())?.try_into().ok()?;
    let index = |i: usize| term(load.operand(i).ok()?, 0);
    let unit = |d: usize| {
        let mut c = [0; LOOPS];
        c[d] = 1;
        Term::Linear(c, 0)
    };
    let batch = index(1)?;
    let single_image = folded && image_shape[0] == 1 && batch == Term::Linear([0; LOOPS], 0);
    if (batch != unit(0) && !single_image) || index(4)? != unit(6) {
        return None;
    }
    // A tap loop of one iteration may be absent from its axis's index
    // (canonicalization folds the index of a loop of one iteration to 0):
    // its dilation is then the window's own.
    let one_tap = |taps: i64, dilation: i64| (taps == 1).then_some(dilation);
    let (sh, dh, ph, clamp_y) = axis(&index(2)?, (1, 4), one_tap(filter[0], window.dilations[0]))?;
    let (sw, dw, pw, clamp_x) = axis(&index(3)?, (2, 5), one_tap(filter[1], window.dilations[1]))?;
    if [sh, sw] != window.strides || [dh, dw] != window.dilations {
        return None;
    }
    let [_, h, w, channels] = image_shape;
    if channels != filter[2] {
        return None;
    }
    // Each axis either stays inside the image by construction, or is
    // clamped to it with both of its bounds in the condition; the
    // condition has no other bound.
    let mut expected = Vec::new();
    for ((c, tap, stride, dilation, pad), extent, clamp, taps, out) in [
        ((1, 4, sh, dh, ph), h, clamp_y, filter[0], oh),
        ((2, 5, sw, dw, pw), w, clamp_x, filter[1], ow),
    ] {
        let mut coefficients = [0; LOOPS];
        coefficients[c] = stride;
        coefficients[tap] = dilation;
        match clamp {
            None => {
                let last = (out - 1) * stride + (taps - 1) * dilation - pad;
                if pad != 0 || last >= extent {
                    return None;
                }
            }
            Some((low, high)) => {
                if (low, high) != (0, extent - 1) || pad < 0 {
                    return None;
                }
                expected.push((coefficients, -pad, true, 0));
                expected.push((coefficients, -pad, false, extent));
            }
        }
    }
    let mut condition = condition;
    condition.sort();
    condition.dedup();
    expected.sort();
    if condition != expected {
        return None;
    }
    Some(PlainInput {
        image,
        image_shape,
        output: [oh, ow],
        taps: [filter[0], filter[1]],
        strides: window.strides,
        dilations: window.dilations,
        pads: [ph, pw],
    })
}

/// A `linalg.conv_2d_nhwc_hwcf` (what `tcc-fold-conv-inputs` leaves of a
/// convolution without padding or producer): its image is its first
/// operand, read as it is by the op's definition.
fn named_conv_input<'c>(op: OperationRef<'c, 'c>) -> Option<PlainInput<'c>> {
    let image = op.operand(0).ok()?;
    let image_shape: [i64; 4] = static_shape(image.r#type())?.try_into().ok()?;
    let filter: [i64; 4] = static_shape(op.operand(1).ok()?.r#type())?
        .try_into()
        .ok()?;
    let output = static_shape(op.operand(2).ok()?.r#type())?;
    let [_, oh, ow, _] = output[..] else {
        return None;
    };
    (filter[2] == image_shape[3]).then_some(PlainInput {
        image,
        image_shape,
        output: [oh, ow],
        taps: [filter[0], filter[1]],
        strides: super::dense::conv_pair(op, "strides")?,
        dilations: super::dense::conv_pair(op, "dilations")?,
        pads: [0, 0],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{first_op, parse};

    /// The `tcc.conv` of `source` through the analysis.
    fn analyse(source: &str) -> Option<([i64; 4], [i64; 2], [i64; 2], [i64; 2])> {
        let context = tcc_dialects::new_context();
        let module = parse(&context, source);
        let op = first_op(&module, crate::ir::conv::OP);
        plain_input(op).map(|p| (p.image_shape, p.strides, p.pads, p.taps))
    }

    const PADDED: &str = r#"
#filter = affine_map<(n, y, x, f, ky, kx, c) -> (ky, kx, c, f)>
#out = affine_map<(n, y, x, f, ky, kx, c) -> (n, y, x, f)>
func.func @padded(%img: tensor<2x9x9x64xf32>, %w: tensor<3x3x64x128xf32>, %init: tensor<2x5x5x128xf32>) -> tensor<2x5x5x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %zero = arith.constant 0.0 : f32
  %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2], dilations = [1, 1]> ins(%w : tensor<3x3x64x128xf32>) outs(%init : tensor<2x5x5x128xf32>) indexing_maps = [#filter, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %y = linalg.index 1 : index
    %x = linalg.index 2 : index
    %ky = linalg.index 4 : index
    %kx = linalg.index 5 : index
    %ch = linalg.index 6 : index
    %ys = arith.muli %y, %c2 : index
    %yk = arith.addi %ys, %ky : index
    %iy = arith.subi %yk, %c1 : index
    %y0 = arith.cmpi sge, %iy, %c0 : index
    %y1 = arith.cmpi slt, %iy, %c9 : index
    %yin = arith.andi %y0, %y1 : i1
    %ylo = arith.maxsi %iy, %c0 : index
    %yc = arith.minsi %ylo, %c8 : index
    %xs = arith.muli %x, %c2 : index
    %xk = arith.addi %xs, %kx : index
    %ix = arith.subi %xk, %c1 : index
    %x0 = arith.cmpi sge, %ix, %c0 : index
    %x1 = arith.cmpi slt, %ix, %c9 : index
    %xin = arith.andi %x0, %x1 : i1
    %inside = arith.andi %yin, %xin : i1
    %xlo = arith.maxsi %ix, %c0 : index
    %xc = arith.minsi %xlo, %c8 : index
    %v = tensor.extract %img[%n, %yc, %xc, %ch] : tensor<2x9x9x64xf32>
    %a = arith.select %inside, %v, %zero : f32
    %p = arith.mulf %a, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x5x5x128xf32>
  return %r : tensor<2x5x5x128xf32>
}
"#;

    #[test]
    fn a_padded_strided_convolution_reads_its_input_as_it_is() {
        assert_eq!(
            analyse(PADDED),
            Some(([2, 9, 9, 64], [2, 2], [1, 1], [3, 3]))
        );
    }

    #[test]
    fn a_pad_value_other_than_zero_or_an_unchecked_axis_is_not_plain() {
        let one = PADDED.replace("%zero = arith.constant 0.0", "%zero = arith.constant 1.0");
        assert_eq!(analyse(&one), None);
        // x clamped but not checked: the edge pixel is read again.
        let clamped = PADDED.replace(
            "%inside = arith.andi %yin, %xin : i1",
            "%inside = arith.andi %yin, %yin : i1",
        );
        assert_eq!(analyse(&clamped), None);
        // A producer between the load and the product.
        let relu = PADDED.replace(
            "%p = arith.mulf %a, %in : f32",
            "%r0 = arith.maximumf %a, %zero : f32\n    %p = arith.mulf %r0, %in : f32",
        );
        assert_eq!(analyse(&relu), None);
    }

    #[test]
    fn an_nchw_read_is_not_plain() {
        let nchw = PADDED
            .replace(
                "%v = tensor.extract %img[%n, %yc, %xc, %ch] : tensor<2x9x9x64xf32>",
                "%v = tensor.extract %img[%n, %ch, %yc, %xc] : tensor<2x64x9x9xf32>",
            )
            .replace("%img: tensor<2x9x9x64xf32>", "%img: tensor<2x64x9x9xf32>");
        assert_eq!(analyse(&nchw), None);
    }
}
