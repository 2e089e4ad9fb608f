//! The narrow element types: float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz),
//! float4e2m1, int4/uint4 and int2/uint2. The graph keeps one element a
//! byte (`i8`: a minifloat's bits, a 4- or 2-bit integer's value,
//! sign-extended for int4/int2), so only conversions need to know them:
//! a minifloat is decoded to f32 with integer arithmetic on its fields
//! (exact: every minifloat is an f32), and f32 is encoded by rounding to
//! the minifloat's grid (round half to even) and re-reading the fields,
//! with overflow saturating or giving infinity/NaN as Cast's `saturate`
//! asks; integers are converted through int64 and wrapped to 4 or 2 bits,
//! as ONNX's reference (ml_dtypes) does. The kernels see only integer and
//! f32 arithmetic and `arith.bitcast`, which every back end has.

use super::super::dtype::{DType, Minifloat, Specials};
use super::super::emit::{Body, FPred, IPred, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;

/// `x` (narrow) as a value of a computing type: a minifloat decoded to
/// f32, a 4- or 2-bit integer relabeled as the int8/uint8 it is stored as.
pub fn widen(imp: &mut Importer, x: &Val) -> Val {
    let dtype = x.dtype();
    if let Some(format) = dtype.minifloat() {
        return decode(imp, x, format);
    }
    let wide = match dtype {
        DType::I4 | DType::I2 => DType::I8,
        DType::U4 | DType::U2 => DType::U8,
        _ => return x.clone(),
    };
    x.relabeled(wide)
}

fn decode(imp: &mut Importer, x: &Val, f: Minifloat) -> Val {
    let shift = f.sign_shift();
    let magnitude_mask = (1u32 << shift) - 1;
    let mantissa_mask = (1u32 << f.mantissa) - 1;
    let lead = 1u32 << f.mantissa;
    let m = f.mantissa;
    // The f32 biased exponent of the significand's unit, 2^(e - bias - m).
    let offset = 127 - f.bias - m as i32;
    let all_exponent = ((1u32 << f.exponent) - 1) << m;
    imp.e.map(&[x], x.ty.with_dtype(DType::F32), &|b, a| {
        let i32c = |b: &mut Body, v: i64| b.int(v, DType::I32);
        let bits = b.cast("arith.extui", a[0], DType::I32);
        let shift = i32c(b, shift as i64);
        let sb = b.op("arith.shrui", &[bits, shift]);
        let one = i32c(b, 1);
        let sign = b.op("arith.andi", &[sb, one]);
        let zero = i32c(b, 0);
        let s = b.cmpi(IPred::Ne, sign, zero);
        let mmask = i32c(b, magnitude_mask as i64);
        let mag = b.op("arith.andi", &[bits, mmask]);
        let mc = i32c(b, m as i64);
        let e = b.op("arith.shrui", &[mag, mc]);
        let fmask = i32c(b, mantissa_mask as i64);
        let man = b.op("arith.andi", &[mag, fmask]);
        let normal = b.cmpi(IPred::Ne, e, zero);
        let leadc = i32c(b, lead as i64);
        let lead = b.select(normal, leadc, zero);
        let sig = b.op("arith.ori", &[man, lead]);
        let sigf = b.cast("arith.sitofp", sig, DType::F32);
        let e1 = b.op("arith.maxsi", &[e, one]);
        let offset = i32c(b, offset as i64);
        let k = b.op("arith.addi", &[e1, offset]);
        let twentythree = i32c(b, 23);
        let pbits = b.op("arith.shli", &[k, twentythree]);
        let p = b.cast("arith.bitcast", pbits, DType::F32);
        let v = b.op("arith.mulf", &[sigf, p]);
        let neg = b.op("arith.negf", &[v]);
        // (NaN, infinity) tests of the format's special encodings.
        let specials = match f.specials {
            Specials::NanAllOnes => {
                let all = i32c(b, magnitude_mask as i64);
                Some((b.cmpi(IPred::Eq, mag, all), None))
            }
            Specials::Ieee => {
                let top = i32c(b, all_exponent as i64);
                let is_nan = b.cmpi(IPred::Ugt, mag, top);
                Some((is_nan, Some(b.cmpi(IPred::Eq, mag, top))))
            }
            Specials::NanNegativeZero => {
                let nan_bits = i32c(b, 128);
                Some((b.cmpi(IPred::Eq, bits, nan_bits), None))
            }
            Specials::None => None,
        };
        let signed = b.select(s, neg, v);
        let Some((is_nan, is_inf)) = specials else {
            return signed;
        };
        let finite = match is_inf {
            Some(is_inf) => {
                let inf = b.constant(f64::INFINITY, DType::F32);
                let ninf = b.constant(f64::NEG_INFINITY, DType::F32);
                let infv = b.select(s, ninf, inf);
                b.select(is_inf, infv, signed)
            }
            None => signed,
        };
        let nan = b.constant(f64::NAN, DType::F32);
        b.select(is_nan, nan, finite)
    })
}

/// The f32 `x` encoded as the minifloat `target` (round half to even;
/// beyond the largest finite value: it when `saturate` or for float4e2m1,
/// else infinity for e5m2 and NaN for the others; NaN stays NaN, and is a
/// zero of the other sign in float4e2m1, as ONNX's reference has it).
pub fn encode(imp: &mut Importer, x: &Val, target: DType, saturate: bool) -> Result<Val> {
    let Some(f) = target.minifloat() else {
        bail!("{target} is not a minifloat");
    };
    if x.dtype() != DType::F32 {
        bail!("encoding {} as {target} (from float only)", x.dtype());
    }
    let m = f.mantissa as i32;
    let emin_value = f.min_exponent();
    let max = f.decode(f.max_bits() as u8);
    let max_bits = f.max_bits();
    let sign_bit = 1u32 << f.sign_shift();
    let mantissa_mask = (1u32 << f.mantissa) - 1;
    let all_exponent = ((1u32 << f.exponent) - 1) << f.mantissa;
    Ok(imp.e.map(&[x], x.ty.with_dtype(target), &|b, a| {
        let x = a[0];
        let i32c = |b: &mut Body, v: i64| b.int(v, DType::I32);
        let bits = b.cast("arith.bitcast", x, DType::I32);
        let zero = i32c(b, 0);
        let is_negative = b.cmpi(IPred::Slt, bits, zero);
        let sb = i32c(b, sign_bit as i64);
        let signv = b.select(is_negative, sb, zero);
        let abs = b.op("math.absf", &[x]);
        let is_nan = b.cmpf(FPred::Uno, x, x);
        let ab = b.cast("arith.bitcast", abs, DType::I32);
        let twentythree = i32c(b, 23);
        let ef = b.op("arith.shrui", &[ab, twentythree]);
        let bias32 = i32c(b, 127);
        let eu = b.op("arith.subi", &[ef, bias32]);
        let emin = i32c(b, emin_value as i64);
        let ec = b.op("arith.maxsi", &[eu, emin]);
        let qoff = i32c(b, (127 - m) as i64);
        let qe = b.op("arith.addi", &[ec, qoff]);
        let qb = b.op("arith.shli", &[qe, twentythree]);
        let q = b.cast("arith.bitcast", qb, DType::F32);
        let n = b.op("arith.divf", &[abs, q]);
        let rn = b.op("math.roundeven", &[n]);
        let rv = b.op("arith.mulf", &[rn, q]);
        let max = b.constant(max, DType::F32);
        let over = b.cmpf(FPred::Ogt, rv, max);
        let rs = b.select(over, max, rv);
        let rb = b.cast("arith.bitcast", rs, DType::I32);
        let re = b.op("arith.shrui", &[rb, twentythree]);
        let reu = b.op("arith.subi", &[re, bias32]);
        let subnormal = b.cmpi(IPred::Slt, reu, emin);
        let unit = b.constant(2f64.powi(m - emin_value), DType::F32);
        let subf = b.op("arith.mulf", &[rs, unit]);
        let subi = b.cast("arith.fptosi", subf, DType::I32);
        let biasm = i32c(b, f.bias as i64);
        let nexp = b.op("arith.addi", &[reu, biasm]);
        let mshift = i32c(b, m as i64);
        let nexps = b.op("arith.shli", &[nexp, mshift]);
        let manshift = i32c(b, (23 - m) as i64);
        let nman = b.op("arith.shrui", &[rb, manshift]);
        let mmask = i32c(b, mantissa_mask as i64);
        let nmanm = b.op("arith.andi", &[nman, mmask]);
        let nf = b.op("arith.ori", &[nexps, nmanm]);
        let field = b.select(subnormal, subi, nf);
        let fin = if f.specials == Specials::NanNegativeZero {
            // fnuz: no negative zero.
            let with_sign = b.op("arith.ori", &[field, signv]);
            let is_zero = b.cmpi(IPred::Eq, field, zero);
            b.select(is_zero, zero, with_sign)
        } else {
            b.op("arith.ori", &[field, signv])
        };
        let nanv = match f.specials {
            Specials::NanAllOnes => {
                let nanm = i32c(b, (sign_bit - 1) as i64);
                b.op("arith.ori", &[signv, nanm])
            }
            Specials::Ieee => {
                let nanm = i32c(b, (all_exponent | (1 << (f.mantissa - 1))) as i64);
                b.op("arith.ori", &[signv, nanm])
            }
            Specials::NanNegativeZero => i32c(b, 128),
            // float4 has no NaN: a zero of the other sign, as ONNX's
            // reference.
            Specials::None => {
                let nanm = i32c(b, sign_bit as i64);
                b.op("arith.xori", &[signv, nanm])
            }
        };
        let overs = if saturate || f.specials == Specials::None {
            let overv = i32c(b, max_bits as i64);
            b.op("arith.ori", &[signv, overv])
        } else if f.specials == Specials::Ieee {
            let overv = i32c(b, all_exponent as i64);
            b.op("arith.ori", &[signv, overv])
        } else {
            nanv
        };
        let o = b.select(over, overs, fin);
        let w = b.select(is_nan, nanv, o);
        b.cast("arith.trunci", w, DType::I8)
    }))
}

/// The int64 `x` wrapped to the 4- or 2-bit integer `target` (its low
/// bits, sign-extended for int4/int2), a byte an element.
pub fn wrap(imp: &mut Importer, x: &Val, target: DType) -> Result<Val> {
    if x.dtype() != DType::I64 {
        bail!("wrapping {} to {target} (from int64 only)", x.dtype());
    }
    let bits = match target {
        DType::I4 | DType::U4 => 4,
        DType::I2 | DType::U2 => 2,
        other => bail!("{other} is not a narrow integer"),
    };
    let signed = matches!(target, DType::I4 | DType::I2);
    Ok(imp.e.map(&[x], x.ty.with_dtype(target), &|b, a| {
        let t = b.cast("arith.trunci", a[0], DType::I8);
        if signed {
            let k = b.int(8 - bits, DType::I8);
            let up = b.op("arith.shli", &[t, k]);
            b.op("arith.shrsi", &[up, k])
        } else {
            let mask = b.int((1 << bits) - 1, DType::I8);
            b.op("arith.andi", &[t, mask])
        }
    }))
}
