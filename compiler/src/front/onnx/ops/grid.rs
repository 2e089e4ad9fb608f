//! GridSample (opsets 16, 20: 2-D and N-D; nearest, (bi)linear,
//! (bi)cubic; zeros, border and reflection padding; align_corners) and
//! AffineGrid (20).
//!
//! GridSample reads the input at coordinates computed at run time, so it
//! becomes a `tosa.gather`: for every spatial axis and every interpolation
//! tap, an elementwise `linalg.generic` computes from the grid the tap's
//! input index (i32, already mapped by the padding mode) and weight (0
//! where zeros padding falls outside); the taps of all axes combine into
//! flat indices into the input viewed as [N, spatial, C] and products of
//! weights, one gather fetches every tap's channels, and a multiplication
//! and `tosa.reduce_sum` over the taps give the result. AffineGrid is a
//! constant base grid times theta (`tosa.matmul`).

use super::super::dtype::{DType, TType, checked_numel};
use super::super::emit::{Body, FPred, Sv, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::matmul::matmul_vals;
use super::tensor;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// The float32 arithmetic of GridSample's bodies, on the emitter's
/// body builder.
trait F32Body {
    fn c(&mut self, v: f64) -> Sv;
    fn bin(&mut self, op: &'static str, a: Sv, b: Sv) -> Sv;
    fn un(&mut self, op: &'static str, a: Sv) -> Sv;
    fn cmp(&mut self, predicate: FPred, a: Sv, b: Sv) -> Sv;
    fn sel(&mut self, c: Sv, a: Sv, b: Sv) -> Sv;
    fn reflect(&mut self, x: Sv, lo: f64, hi: f64) -> Sv;
}

impl F32Body for Body {
    fn c(&mut self, v: f64) -> Sv {
        self.constant(v, DType::F32)
    }

    fn bin(&mut self, op: &'static str, a: Sv, b: Sv) -> Sv {
        self.op(op, &[a, b])
    }

    fn un(&mut self, op: &'static str, a: Sv) -> Sv {
        self.op(op, &[a])
    }

    fn cmp(&mut self, predicate: FPred, a: Sv, b: Sv) -> Sv {
        self.cmpf(predicate, a, b)
    }

    fn sel(&mut self, c: Sv, a: Sv, b: Sv) -> Sv {
        self.select(c, a, b)
    }

    /// Reflects `x` into [lo, hi] as the ONNX reference does.
    fn reflect(&mut self, x: Sv, lo: f64, hi: f64) -> Sv {
        if hi <= lo {
            // A single aligned position: everything reflects onto it.
            return self.c(lo);
        }
        let (lo_c, hi_c, range) = (self.c(lo), self.c(hi), self.c(hi - lo));
        let below = self.cmp(FPred::Olt, x, lo_c);
        let above = self.cmp(FPred::Ogt, x, hi_c);
        let d_lo = self.bin("arith.subf", lo_c, x);
        let d_hi = self.bin("arith.subf", x, hi_c);
        let dx = self.sel(below, d_lo, d_hi);
        let q = self.bin("arith.divf", dx, range);
        let n = self.un("math.floor", q);
        let nr = self.bin("arith.mulf", n, range);
        let r = self.bin("arith.subf", dx, nr);
        let half_c = self.c(0.5);
        let half = self.bin("arith.mulf", n, half_c);
        let half_floor = self.un("math.floor", half);
        let even = self.cmp(FPred::Oeq, half, half_floor);
        let lo_r = self.bin("arith.addf", lo_c, r);
        let hi_r = self.bin("arith.subf", hi_c, r);
        let from_below = self.sel(even, lo_r, hi_r);
        let from_above = self.sel(even, hi_r, lo_r);
        let inner = self.sel(above, from_above, x);
        self.sel(below, from_below, inner)
    }
}

/// The settings of one spatial axis.
#[derive(Clone, Copy)]
struct Axis {
    size: i64,
    align: bool,
    mode: Mode,
    padding: Padding,
}

impl Axis {
    fn bounds(&self) -> (f64, f64) {
        if self.align {
            (0.0, self.size as f64 - 1.0)
        } else {
            (-0.5, self.size as f64 - 0.5)
        }
    }

    fn taps(&self) -> usize {
        match self.mode {
            Mode::Nearest => 1,
            Mode::Linear => 2,
            Mode::Cubic => 4,
        }
    }

    /// The padded source coordinate of grid value `g`.
    fn coordinate(&self, b: &mut Body, g: Sv) -> Sv {
        let d = self.size as f64;
        let one = b.c(1.0);
        let g1 = b.bin("arith.addf", g, one);
        let mut x = if self.align {
            let k = b.c((d - 1.0) / 2.0);
            b.bin("arith.mulf", g1, k)
        } else {
            let dc = b.c(d);
            let half = b.c(0.5);
            let t = b.bin("arith.mulf", g1, dc);
            let t = b.bin("arith.subf", t, one);
            b.bin("arith.mulf", t, half)
        };
        if self.mode == Mode::Nearest {
            x = b.un("math.roundeven", x);
        }
        let (lo, hi) = self.bounds();
        match self.padding {
            Padding::Zeros => x,
            Padding::Border => {
                let (lo_c, hi_c) = (b.c(lo), b.c(hi));
                let below = b.cmp(FPred::Olt, x, lo_c);
                let above = b.cmp(FPred::Ogt, x, hi_c);
                let zero = b.c(0.0);
                let top = b.c(d - 1.0);
                let m = b.bin("arith.minimumf", x, top);
                let clamped = b.bin("arith.maximumf", m, zero);
                let t = b.sel(above, clamped, x);
                b.sel(below, clamped, t)
            }
            Padding::Reflection => b.reflect(x, lo, hi),
        }
    }

    /// The first tap's position (as a float holding an integer) and the
    /// fraction the weights use.
    fn base(&self, b: &mut Body, x: Sv) -> (Sv, Sv) {
        match self.mode {
            Mode::Nearest => {
                // astype(int32): truncation.
                let t = b.un("math.trunc", x);
                let zero = b.c(0.0);
                (t, zero)
            }
            _ => {
                let f = b.un("math.floor", x);
                let frac = b.bin("arith.subf", x, f);
                let start = if self.mode == Mode::Cubic {
                    let one = b.c(1.0);
                    b.bin("arith.subf", f, one)
                } else {
                    f
                };
                (start, frac)
            }
        }
    }

    /// Tap `t`'s index for the coordinate `x`, mapped by the padding mode
    /// (a float holding an integer in [0, size)), and whether it lies
    /// inside the input.
    fn index(&self, b: &mut Body, x: Sv, t: usize) -> (Sv, Sv) {
        let (start, _) = self.base(b, x);
        let tc = b.c(t as f64);
        let i = b.bin("arith.addf", start, tc);
        let zero = b.c(0.0);
        let top = b.c(self.size as f64 - 1.0);
        let ge = b.cmp(FPred::Oge, i, zero);
        let le = b.cmp(FPred::Ole, i, top);
        let inside = b.op("arith.andi", &[ge, le]);
        let mapped = match self.padding {
            Padding::Reflection => {
                let (lo, hi) = self.bounds();
                let r = b.reflect(i, lo, hi);
                b.un("math.trunc", r)
            }
            _ => i,
        };
        // minnumf/maxnumf: a NaN (from a NaN or infinite grid value) becomes
        // a bound, so the gather never reads outside the input.
        let m = b.bin("arith.minnumf", mapped, top);
        let clamped = b.bin("arith.maxnumf", m, zero);
        (clamped, inside)
    }

    /// Tap `t`'s weight for the coordinate `x` (0 outside the input with
    /// zeros padding).
    fn weight(&self, b: &mut Body, x: Sv, t: usize) -> Sv {
        let (_, f) = self.base(b, x);
        let w = match self.mode {
            Mode::Nearest => b.c(1.0),
            Mode::Linear => {
                if t == 0 {
                    let one = b.c(1.0);
                    b.bin("arith.subf", one, f)
                } else {
                    f
                }
            }
            Mode::Cubic => {
                let a = -0.75;
                // Keys' kernel at distance |t - 1 - f|.
                let off = b.c(t as f64 - 1.0);
                let d = b.bin("arith.subf", f, off);
                let d = b.un("math.absf", d);
                let d2 = b.bin("arith.mulf", d, d);
                let d3 = b.bin("arith.mulf", d2, d);
                let (c1, c2) = (b.c(a + 2.0), b.c(a + 3.0));
                let p = b.bin("arith.mulf", c1, d3);
                let q = b.bin("arith.mulf", c2, d2);
                let near = b.bin("arith.subf", p, q);
                let one = b.c(1.0);
                let near = b.bin("arith.addf", near, one);
                let (ca, c5, c8, c4) = (b.c(a), b.c(5.0 * a), b.c(8.0 * a), b.c(4.0 * a));
                let f3 = b.bin("arith.mulf", ca, d3);
                let f2 = b.bin("arith.mulf", c5, d2);
                let f1 = b.bin("arith.mulf", c8, d);
                let far = b.bin("arith.subf", f3, f2);
                let far = b.bin("arith.addf", far, f1);
                let far = b.bin("arith.subf", far, c4);
                let is_near = b.cmp(FPred::Ole, d, one);
                b.sel(is_near, near, far)
            }
        };
        if self.padding == Padding::Zeros {
            let (_, inside) = self.index(b, x, t);
            let zero = b.c(0.0);
            b.sel(inside, w, zero)
        } else {
            w
        }
    }
}

pub fn grid_sample(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (x_in, grid_in) = (node.input(0)?, node.input(1)?);
    require_float(x_in, "GridSample's X")?;
    if x_in.dtype() != DType::F32 || grid_in.dtype() != DType::F32 {
        bail!("GridSample is supported for float32 X and grid");
    }
    let xs = x_in.shape();
    let gs = grid_in.shape();
    let dims = xs.len().saturating_sub(2);
    if dims == 0 || gs.len() != dims + 2 || gs[0] != xs[0] || gs[dims + 1] != dims as i64 {
        bail!("GridSample of X {xs:?} with grid {gs:?}: the grid must be [N, out..., {dims}]");
    }
    if node.opset < 20 && dims != 2 {
        bail!("GridSample before opset 20 takes 4-D inputs");
    }
    let mode = match node
        .string(
            "mode",
            if node.opset < 20 {
                "bilinear"
            } else {
                "linear"
            },
        )?
        .as_str()
    {
        "nearest" => Mode::Nearest,
        "bilinear" | "linear" => Mode::Linear,
        "bicubic" | "cubic" => Mode::Cubic,
        other => bail!("GridSample mode '{other}' is not supported"),
    };
    if mode == Mode::Cubic && dims != 2 {
        bail!("GridSample cubic mode is defined for 4-D inputs only");
    }
    let padding = match node.string("padding_mode", "zeros")?.as_str() {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => bail!("GridSample padding_mode '{other}' is not supported"),
    };
    let align = node.int("align_corners", 0)? != 0;
    let (n, c) = (xs[0], xs[1]);
    let spatial = &xs[2..];
    let (Some(s), Some(p)) = (checked_numel(spatial), checked_numel(&gs[1..=dims])) else {
        bail!("GridSample of X {xs:?} with grid {gs:?} is too large");
    };
    let taps = match mode {
        Mode::Nearest => 1i64,
        Mode::Linear => 2,
        Mode::Cubic => 4,
    }
    .pow(dims as u32);
    if (n as i128) * (p as i128) * (taps as i128) * (c as i128) > i32::MAX as i128
        || s > i32::MAX as i64
    {
        bail!("GridSample of X {xs:?} with grid {gs:?} is too large");
    }
    if n == 0 || c == 0 || s == 0 || p == 0 {
        bail!("GridSample of an empty tensor is not supported");
    }
    let x = imp.val(x_in)?;
    let grid = imp.val(grid_in)?;
    let g2 = imp.e.reshape(&grid, &[n, p, dims as i64]);
    let f32_ty = TType::new(DType::F32, vec![n, p]);
    let i32_ty = TType::new(DType::I32, vec![n, p]);
    // Per spatial axis i: its grid component (reversed order), then each
    // tap's index and weight.
    let mut axis_taps: Vec<Vec<(Val, Val)>> = Vec::new();
    for (i, &size) in spatial.iter().enumerate() {
        let comp = imp
            .e
            .slice_axis(&g2, 2, (dims - 1 - i) as i64, (dims - i) as i64);
        let comp = imp.e.reshape(&comp, &[n, p]);
        let axis = Axis {
            size,
            align,
            mode,
            padding,
        };
        // The padded source coordinate, once per axis.
        let coordinate = imp
            .e
            .map(&[&comp], f32_ty.clone(), &|b, a| axis.coordinate(b, a[0]));
        let comp = coordinate;
        let mut taps = Vec::new();
        for t in 0..axis.taps() {
            let index = imp.e.map(&[&comp], i32_ty.clone(), &|b, a| {
                let (idx, _) = axis.index(b, a[0], t);
                b.cast("arith.fptosi", idx, DType::I32)
            });
            let weight = imp
                .e
                .map(&[&comp], f32_ty.clone(), &|b, a| axis.weight(b, a[0], t));
            taps.push((index, weight));
        }
        axis_taps.push(taps);
    }
    // Every combination of taps: flat index and weight product.
    let strides: Vec<i64> = (0..dims)
        .map(|i| spatial[i + 1..].iter().product())
        .collect();
    let mut combos: Vec<(Val, Val)> = vec![];
    let mut counters = vec![0usize; dims];
    loop {
        let mut index: Option<Val> = None;
        let mut weight: Option<Val> = None;
        for i in 0..dims {
            let (ti, tw) = &axis_taps[i][counters[i]];
            let scaled = if strides[i] == 1 {
                ti.clone()
            } else {
                let st = imp.e.scalar(DType::I32, 2, strides[i] as f64);
                imp.e.mul(ti, &st)?
            };
            index = Some(match index {
                Some(v) => imp.e.add(&v, &scaled)?,
                None => scaled,
            });
            weight = Some(match weight {
                Some(v) => imp.e.mul(&v, tw)?,
                None => tw.clone(),
            });
        }
        let (index, weight) = (index.unwrap(), weight.unwrap());
        let index = imp.e.reshape(&index, &[n, p, 1]);
        let weight = imp.e.reshape(&weight, &[n, p, 1]);
        combos.push((index, weight));
        // Next combination.
        let mut i = dims;
        loop {
            if i == 0 {
                break;
            }
            i -= 1;
            counters[i] += 1;
            if counters[i] < axis_taps[i].len() {
                break;
            }
            counters[i] = 0;
            if i == 0 {
                i = usize::MAX;
                break;
            }
        }
        if i == usize::MAX || counters.iter().all(|&c| c == 0) {
            break;
        }
    }
    let tt = combos.len() as i64;
    let indices: Vec<Val> = combos.iter().map(|(i, _)| i.clone()).collect();
    let weights: Vec<Val> = combos.iter().map(|(_, w)| w.clone()).collect();
    let index = imp.e.concat(&indices, 2);
    let weight = imp.e.concat(&weights, 2);
    let index = imp.e.reshape(&index, &[n, p * tt]);
    let weight = imp.e.reshape(&weight, &[n, p * tt, 1]);
    // X as [N, S, C].
    let rank = xs.len();
    let mut perm = vec![0];
    perm.extend(2..rank);
    perm.push(1);
    let moved = imp.e.transpose(&x, &perm);
    let values = imp.e.reshape(&moved, &[n, s, c]);
    let gathered = imp.e.op(
        "tosa.gather",
        &[&values, &index],
        &[],
        values.ty.with_shape(vec![n, p * tt, c]),
    );
    let weighted = imp.e.mul(&gathered, &weight)?;
    let grouped = imp.e.reshape(&weighted, &[n, p, tt, c]);
    let summed = imp.e.reduce("tosa.reduce_sum", &grouped, 2);
    let summed = imp.e.reshape(&summed, &[n, p, c]);
    let t = imp.e.transpose(&summed, &[0, 2, 1]);
    let mut out = vec![n, c];
    out.extend_from_slice(&gs[1..=dims]);
    tensor(imp.e.reshape(&t, &out))
}

pub fn affine_grid(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let theta = node.input(0)?;
    require_float(theta, "AffineGrid's theta")?;
    let size = node
        .const_ints(1, "the size")?
        .ok_or_else(|| ImportError::new("AffineGrid needs a size"))?;
    let align = node.int("align_corners", 0)? != 0;
    let dims = size.len().saturating_sub(2);
    if !(dims == 2 || dims == 3) || size.iter().any(|&d| d <= 0) {
        bail!("AffineGrid size {size:?}: [N, C, H, W] or [N, C, D, H, W] expected");
    }
    let n = size[0];
    if theta.shape() != [n, dims as i64, dims as i64 + 1] {
        bail!(
            "AffineGrid theta {:?} for size {size:?}: [{n}, {dims}, {}] expected",
            theta.shape(),
            dims + 1
        );
    }
    let spatial = &size[2..];
    if checked_numel(&size).is_none_or(|t| t > super::super::fold::FOLD_LIMIT) {
        bail!("AffineGrid size {size:?} is too large");
    }
    let coords = |d: i64| -> Vec<f64> {
        (0..d)
            .map(|i| {
                if align {
                    if d == 1 {
                        -1.0
                    } else {
                        -1.0 + 2.0 * i as f64 / (d - 1) as f64
                    }
                } else {
                    -1.0 + (2.0 * i as f64 + 1.0) / d as f64
                }
            })
            .collect()
    };
    let axes: Vec<Vec<f64>> = spatial.iter().map(|&d| coords(d)).collect();
    let points: i64 = spatial.iter().product();
    // Base rows (x, y[, z], 1): x runs along the last spatial axis.
    let mut base = Vec::with_capacity((points as usize) * (dims + 1));
    let mut idx = vec![0usize; dims];
    for _ in 0..points {
        for k in (0..dims).rev() {
            base.push(axes[k][idx[k]]);
        }
        base.push(1.0);
        for k in (0..dims).rev() {
            idx[k] += 1;
            if idx[k] < spatial[k] as usize {
                break;
            }
            idx[k] = 0;
        }
    }
    let dtype = theta.dtype();
    let b = imp.e.constant(
        &Const::from_f64(dtype, vec![1, points, dims as i64 + 1], &base),
        "affine_base",
    )?;
    let th = imp.val(theta)?;
    let tt = imp.e.transpose(&th, &[0, 2, 1]);
    let g = matmul_vals(imp, &b, &tt)?;
    let mut out = vec![n];
    out.extend_from_slice(spatial);
    out.push(dims as i64);
    tensor(imp.e.reshape(&g, &out))
}
