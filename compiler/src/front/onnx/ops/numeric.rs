//! Elementwise ops TOSA has no op for, each one `linalg.generic` over
//! `arith`/`math`: the inverse and hyperbolic trigonometric functions and
//! Tan, Mod (both `fmod` modes, integers and floats), BitShift, IsNaN,
//! IsInf and Shrink.

use super::super::dtype::{DType, TType};
use super::super::emit::{Body, FPred, IPred, Sv, Val, broadcast_shapes};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::tensor;

pub fn trigonometric(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, &format!("{}'s input", node.op()))?;
    let x = imp.val(input)?;
    let op = match node.op() {
        "Tan" => "math.tan",
        "Asin" => "math.asin",
        "Acos" => "math.acos",
        "Atan" => "math.atan",
        "Sinh" => "math.sinh",
        "Cosh" => "math.cosh",
        "Asinh" => "math.asinh",
        "Acosh" => "math.acosh",
        "Atanh" => "math.atanh",
        other => bail!("no math op for {other}"),
    };
    tensor(imp.e.map(&[&x], x.ty.clone(), &|b, a| b.op(op, &[a[0]])))
}

/// Both operands of a binary op, of one element type, and their
/// broadcast result type.
fn operands(imp: &mut Importer, node: &Node) -> Result<(Val, Val, TType)> {
    let a = imp.val(node.input(0)?)?;
    let b = imp.val(node.input(1)?)?;
    if a.dtype() != b.dtype() {
        bail!(
            "{} of {} and {}: element types differ",
            node.op(),
            a.dtype(),
            b.dtype()
        );
    }
    let Some(shape) = broadcast_shapes(a.shape(), b.shape()) else {
        bail!(
            "{}: shapes {:?} and {:?} do not broadcast",
            node.op(),
            a.shape(),
            b.shape()
        );
    };
    let ty = TType::new(a.dtype(), shape);
    Ok((a, b, ty))
}

/// Mod: `fmod = 1` is C's fmod (the sign of the dividend), `fmod = 0`
/// Python's (the sign of the divisor). An integer remainder by 0 is 0
/// (numpy's answer; ONNX leaves it undefined), and so is one by -1 (which
/// overflows C's `%` for the smallest integer).
pub fn modulo(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let fmod = node.int("fmod", 0)? != 0;
    let (a, b, ty) = operands(imp, node)?;
    let d = ty.dtype;
    if d == DType::Bool {
        bail!("Mod of bool tensors");
    }
    let body = |b: &mut Body, a: &[Sv]| -> Sv {
        let (x, y) = (a[0], a[1]);
        if d.is_float() {
            let m = b.op("arith.remf", &[x, y]);
            if fmod {
                return m;
            }
            let zero = b.constant(0.0, d);
            let nonzero = b.cmpf(FPred::One, m, zero);
            let m_negative = b.cmpf(FPred::Olt, m, zero);
            let y_negative = b.cmpf(FPred::Olt, y, zero);
            let signs = b.op("arith.xori", &[m_negative, y_negative]);
            let fix = b.op("arith.andi", &[nonzero, signs]);
            let adjusted = b.op("arith.addf", &[m, y]);
            return b.select(fix, adjusted, m);
        }
        let zero = b.int(0, d);
        let one = b.int(1, d);
        if d == DType::U64 {
            // uint64 (not widened): an unsigned remainder, which has no
            // sign to fix in either mode; by 0 it is 0.
            let y_zero = b.cmpi(IPred::Eq, y, zero);
            let safe = b.select(y_zero, one, y);
            let rem = b.op("arith.remui", &[x, safe]);
            return b.select(y_zero, zero, rem);
        }
        let minus = b.int(-1, d);
        let y_zero = b.cmpi(IPred::Eq, y, zero);
        let y_minus = b.cmpi(IPred::Eq, y, minus);
        let trivial = b.op("arith.ori", &[y_zero, y_minus]);
        let safe = b.select(trivial, one, y);
        let rem = b.op("arith.remsi", &[x, safe]);
        let m = b.select(trivial, zero, rem);
        if fmod {
            return m;
        }
        let nonzero = b.cmpi(IPred::Ne, m, zero);
        let m_negative = b.cmpi(IPred::Slt, m, zero);
        let y_negative = b.cmpi(IPred::Slt, y, zero);
        let signs = b.op("arith.xori", &[m_negative, y_negative]);
        let fix = b.op("arith.andi", &[nonzero, signs]);
        let adjusted = b.op("arith.addi", &[m, y]);
        b.select(fix, adjusted, m)
    };
    tensor(imp.e.map(&[&a, &b], ty, &body))
}

/// BitShift. Unsigned types (every opset) shift logically; the signed
/// types of opset 28 shift right arithmetically. A shift by a negative
/// amount or by the width or more gives what the sign fill alone gives:
/// -1 for a right shift of a negative signed value, else 0.
pub fn bit_shift(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let direction = node.string("direction", "")?;
    let left = match direction.as_str() {
        "LEFT" => true,
        "RIGHT" => false,
        other => bail!("BitShift direction must be LEFT or RIGHT, not '{other}'"),
    };
    let (a, b, ty) = operands(imp, node)?;
    let d = ty.dtype;
    if !d.is_int() {
        bail!("BitShift of {d} tensors (it takes integers)");
    }
    let width = (d.size() * 8) as i64;
    let signed = !d.is_unsigned();
    let op = match (left, signed) {
        (true, _) => "arith.shli",
        (false, false) => "arith.shrui",
        (false, true) => "arith.shrsi",
    };
    tensor(imp.e.map(&[&a, &b], ty, &|b, a| {
        let width = b.int(width, d);
        let zero = b.int(0, d);
        let minus = b.int(-1, d);
        let negative = b.cmpi(IPred::Slt, a[0], zero);
        let sign = b.select(negative, minus, zero);
        let big = b.cmpi(IPred::Uge, a[1], width);
        let shifted = b.op(op, &[a[0], a[1]]);
        let fill = if !left && signed { sign } else { zero };
        b.select(big, fill, shifted)
    }))
}

pub fn is_nan(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "IsNaN's input")?;
    let x = imp.val(input)?;
    tensor(imp.e.map(&[&x], x.ty.with_dtype(DType::Bool), &|b, a| {
        b.cmpf(FPred::Uno, a[0], a[0])
    }))
}

pub fn is_inf(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "IsInf's input")?;
    let positive = node.int("detect_positive", 1)? != 0;
    let negative = node.int("detect_negative", 1)? != 0;
    let x = imp.val(input)?;
    let d = x.dtype();
    tensor(imp.e.map(&[&x], x.ty.with_dtype(DType::Bool), &|b, a| {
        let plus = b.constant(f64::INFINITY, d);
        let minus = b.constant(f64::NEG_INFINITY, d);
        let p = b.cmpf(FPred::Oeq, a[0], plus);
        let n = b.cmpf(FPred::Oeq, a[0], minus);
        let want_p = b.int(positive as i64, DType::Bool);
        let want_n = b.int(negative as i64, DType::Bool);
        let pp = b.op("arith.andi", &[p, want_p]);
        let nn = b.op("arith.andi", &[n, want_n]);
        b.op("arith.ori", &[pp, nn])
    }))
}

/// Shrink: `x + bias` below `-lambd`, `x - bias` above `lambd`, else 0.
pub fn shrink(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let lambd = node.float("lambd", 0.5)? as f64;
    let bias = node.float("bias", 0.0)? as f64;
    let x = imp.val(node.input(0)?)?;
    let d = x.dtype();
    // The thresholds and the bias; integers compare with the thresholds
    // as numpy does (promoted): x < -lambd is x < ceil(-lambd), x > lambd
    // is x > floor(lambd).
    let (low, high, ops) = if d.is_float() {
        (-lambd, lambd, ("arith.addf", "arith.subf"))
    } else if d.is_int() {
        if bias.fract() != 0.0 {
            bail!("Shrink of {d} tensors with the fractional bias {bias}");
        }
        ((-lambd).ceil(), lambd.floor(), ("arith.addi", "arith.subi"))
    } else {
        bail!("Shrink of bool tensors");
    };
    let body = |b: &mut Body, a: &[Sv]| -> Sv {
        let low = b.constant(low, d);
        let high = b.constant(high, d);
        let bias = b.constant(bias, d);
        let zero = b.constant(0.0, d);
        let (below, above) = if d.is_float() {
            (
                b.cmpf(FPred::Olt, a[0], low),
                b.cmpf(FPred::Ogt, a[0], high),
            )
        } else {
            (
                b.cmpi(IPred::Slt, a[0], low),
                b.cmpi(IPred::Sgt, a[0], high),
            )
        };
        let plus = b.op(ops.0, &[a[0], bias]);
        let minus = b.op(ops.1, &[a[0], bias]);
        let upper = b.select(above, minus, zero);
        b.select(below, plus, upper)
    };
    tensor(imp.e.map(&[&x], x.ty.clone(), &body))
}
