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
use super::super::emit::{Val, float_literal};
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
    Val {
        ssa: x.ssa.clone(),
        ty: x.ty.with_dtype(wide),
    }
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
    let specials = match f.specials {
        Specials::NanAllOnes => format!(
            "%all = arith.constant {magnitude_mask} : i32\n%isnan = arith.cmpi eq, %mag, %all : i32\n"
        ),
        Specials::Ieee => format!(
            "%top = arith.constant {all_exponent} : i32\n%isnan = arith.cmpi ugt, %mag, %top : i32\n\
             %isinf = arith.cmpi eq, %mag, %top : i32\n"
        ),
        Specials::NanNegativeZero => {
            "%nanbits = arith.constant 128 : i32\n%isnan = arith.cmpi eq, %b, %nanbits : i32\n"
                .into()
        }
        Specials::None => String::new(),
    };
    let finish = match f.specials {
        Specials::None => "%r = arith.select %s, %neg, %v : f32".to_string(),
        Specials::Ieee => "%signed = arith.select %s, %neg, %v : f32\n\
             %inf = arith.constant 0x7F800000 : f32\n%ninf = arith.constant 0xFF800000 : f32\n\
             %infv = arith.select %s, %ninf, %inf : f32\n%fin = arith.select %isinf, %infv, %signed : f32\n\
             %nan = arith.constant 0x7FC00000 : f32\n%r = arith.select %isnan, %nan, %fin : f32"
            .to_string(),
        _ => "%signed = arith.select %s, %neg, %v : f32\n%nan = arith.constant 0x7FC00000 : f32\n\
             %r = arith.select %isnan, %nan, %signed : f32"
            .to_string(),
    };
    imp.e.map(&[x], x.ty.with_dtype(DType::F32), &|a| {
        format!(
            "%b = arith.extui {} : i8 to i32\n%shift = arith.constant {shift} : i32\n\
             %sb = arith.shrui %b, %shift : i32\n%one = arith.constant 1 : i32\n\
             %sign = arith.andi %sb, %one : i32\n%zero = arith.constant 0 : i32\n\
             %s = arith.cmpi ne, %sign, %zero : i32\n%mmask = arith.constant {magnitude_mask} : i32\n\
             %mag = arith.andi %b, %mmask : i32\n%m = arith.constant {m} : i32\n\
             %e = arith.shrui %mag, %m : i32\n%fmask = arith.constant {mantissa_mask} : i32\n\
             %man = arith.andi %mag, %fmask : i32\n%normal = arith.cmpi ne, %e, %zero : i32\n\
             %leadc = arith.constant {lead} : i32\n%lead = arith.select %normal, %leadc, %zero : i32\n\
             %sig = arith.ori %man, %lead : i32\n%sigf = arith.sitofp %sig : i32 to f32\n\
             %e1 = arith.maxsi %e, %one : i32\n%offset = arith.constant {offset} : i32\n\
             %k = arith.addi %e1, %offset : i32\n%twentythree = arith.constant 23 : i32\n\
             %pbits = arith.shli %k, %twentythree : i32\n%p = arith.bitcast %pbits : i32 to f32\n\
             %v = arith.mulf %sigf, %p : f32\n%neg = arith.negf %v : f32\n{specials}{finish}",
            a[0]
        )
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
    let emin = f.min_exponent();
    let max = f.decode(f.max_bits() as u8);
    let max_bits = f.max_bits();
    let sign_bit = 1u32 << f.sign_shift();
    let mantissa_mask = (1u32 << f.mantissa) - 1;
    let all_exponent = ((1u32 << f.exponent) - 1) << f.mantissa;
    let nan_bits = match f.specials {
        Specials::NanAllOnes => format!(
            "%nanm = arith.constant {} : i32\n%nanv = arith.ori %signv, %nanm : i32\n",
            sign_bit - 1
        ),
        Specials::Ieee => format!(
            "%nanm = arith.constant {} : i32\n%nanv = arith.ori %signv, %nanm : i32\n",
            all_exponent | (1 << (f.mantissa - 1))
        ),
        Specials::NanNegativeZero => "%nanv = arith.constant 128 : i32\n".to_string(),
        // float4 has no NaN: a zero of the other sign, as ONNX's reference.
        Specials::None => format!(
            "%nanm = arith.constant {sign_bit} : i32\n%nanv = arith.xori %signv, %nanm : i32\n"
        ),
    };
    let overflow = if saturate || f.specials == Specials::None {
        format!(
            "%overv = arith.constant {max_bits} : i32\n%overs = arith.ori %signv, %overv : i32\n"
        )
    } else if f.specials == Specials::Ieee {
        format!(
            "%overv = arith.constant {all_exponent} : i32\n%overs = arith.ori %signv, %overv : i32\n"
        )
    } else {
        "%overs = arith.addi %nanv, %zero : i32\n".to_string()
    };
    // fnuz: no negative zero.
    let signed = if f.specials == Specials::NanNegativeZero {
        "%withsign = arith.ori %field, %signv : i32\n%iszero = arith.cmpi eq, %field, %zero : i32\n\
         %fin = arith.select %iszero, %zero, %withsign : i32\n"
    } else {
        "%fin = arith.ori %field, %signv : i32\n"
    };
    let max_lit = float_literal(max, DType::F32);
    let unit = float_literal(2f64.powi(m - emin), DType::F32);
    Ok(imp.e.map(&[x], x.ty.with_dtype(target), &|a| {
        format!(
            "%bits = arith.bitcast {x} : f32 to i32\n%zero = arith.constant 0 : i32\n\
             %isneg = arith.cmpi slt, %bits, %zero : i32\n%sb = arith.constant {sign_bit} : i32\n\
             %signv = arith.select %isneg, %sb, %zero : i32\n%a = math.absf {x} : f32\n\
             %isnan = arith.cmpf uno, {x}, {x} : f32\n%ab = arith.bitcast %a : f32 to i32\n\
             %twentythree = arith.constant 23 : i32\n%ef = arith.shrui %ab, %twentythree : i32\n\
             %bias32 = arith.constant 127 : i32\n%eu = arith.subi %ef, %bias32 : i32\n\
             %emin = arith.constant {emin} : i32\n%ec = arith.maxsi %eu, %emin : i32\n\
             %qoff = arith.constant {qoff} : i32\n%qe = arith.addi %ec, %qoff : i32\n\
             %qb = arith.shli %qe, %twentythree : i32\n%q = arith.bitcast %qb : i32 to f32\n\
             %n = arith.divf %a, %q : f32\n%rn = math.roundeven %n : f32\n%rv = arith.mulf %rn, %q : f32\n\
             %max = arith.constant {max_lit} : f32\n%over = arith.cmpf ogt, %rv, %max : f32\n\
             %rs = arith.select %over, %max, %rv : f32\n%rb = arith.bitcast %rs : f32 to i32\n\
             %re = arith.shrui %rb, %twentythree : i32\n%reu = arith.subi %re, %bias32 : i32\n\
             %sub = arith.cmpi slt, %reu, %emin : i32\n%unit = arith.constant {unit} : f32\n\
             %subf = arith.mulf %rs, %unit : f32\n%subi = arith.fptosi %subf : f32 to i32\n\
             %biasm = arith.constant {bias} : i32\n%nexp = arith.addi %reu, %biasm : i32\n\
             %mshift = arith.constant {m} : i32\n%nexps = arith.shli %nexp, %mshift : i32\n\
             %manshift = arith.constant {manshift} : i32\n%nman = arith.shrui %rb, %manshift : i32\n\
             %mmask = arith.constant {mantissa_mask} : i32\n%nmanm = arith.andi %nman, %mmask : i32\n\
             %nf = arith.ori %nexps, %nmanm : i32\n%field = arith.select %sub, %subi, %nf : i32\n\
             {signed}{nan_bits}{overflow}%o = arith.select %over, %overs, %fin : i32\n\
             %w = arith.select %isnan, %nanv, %o : i32\n%r = arith.trunci %w : i32 to i8",
            x = a[0],
            qoff = 127 - m,
            bias = f.bias,
            manshift = 23 - m,
        )
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
    Ok(imp.e.map(&[x], x.ty.with_dtype(target), &|a| {
        let t = format!("%t = arith.trunci {} : i64 to i8\n", a[0]);
        if signed {
            format!(
                "{t}%k = arith.constant {} : i8\n%up = arith.shli %t, %k : i8\n%r = arith.shrsi %up, %k : i8",
                8 - bits
            )
        } else {
            format!(
                "{t}%mask = arith.constant {} : i8\n%r = arith.andi %t, %mask : i8",
                (1 << bits) - 1
            )
        }
    }))
}
