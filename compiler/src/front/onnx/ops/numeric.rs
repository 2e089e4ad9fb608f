//! Elementwise ops TOSA has no op for, each one `linalg.generic` over
//! `arith`/`math`: the inverse and hyperbolic trigonometric functions and
//! Tan, Mod (both `fmod` modes, integers and floats), BitShift, IsNaN,
//! IsInf and Shrink.

use super::super::dtype::{DType, TType};
use super::super::emit::{Val, broadcast_shapes, float_literal};
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
    let t = x.dtype().mlir();
    tensor(imp.e.map(&[&x], x.ty.clone(), &|a| {
        format!("%r = {op} {} : {t}", a[0])
    }))
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
    let t = d.mlir();
    let body = if d.is_float() {
        if fmod {
            "%r = arith.remf %in0, %in1 : T\n".to_string()
        } else {
            format!(
                "%zero = arith.constant {} : T\n%m = arith.remf %in0, %in1 : T\n\
                 %nonzero = arith.cmpf one, %m, %zero : T\n\
                 %mneg = arith.cmpf olt, %m, %zero : T\n\
                 %bneg = arith.cmpf olt, %in1, %zero : T\n\
                 %signs = arith.xori %mneg, %bneg : i1\n\
                 %fix = arith.andi %nonzero, %signs : i1\n\
                 %adjusted = arith.addf %m, %in1 : T\n\
                 %r = arith.select %fix, %adjusted, %m : T\n",
                float_literal(0.0, d)
            )
        }
        .replace(": T", &format!(": {t}"))
    } else if d == DType::U64 {
        // uint64 (not widened): an unsigned remainder, which has no sign
        // to fix in either mode; by 0 it is 0.
        "%zero = arith.constant 0 : T\n%one = arith.constant 1 : T\n\
         %bzero = arith.cmpi eq, %in1, %zero : T\n\
         %safe = arith.select %bzero, %one, %in1 : T\n\
         %rem = arith.remui %in0, %safe : T\n\
         %r = arith.select %bzero, %zero, %rem : T\n"
            .replace(": T", &format!(": {t}"))
    } else {
        let mut text = String::from(
            "%zero = arith.constant 0 : T\n%one = arith.constant 1 : T\n\
             %minus = arith.constant -1 : T\n\
             %bzero = arith.cmpi eq, %in1, %zero : T\n%bminus = arith.cmpi eq, %in1, %minus : T\n\
             %trivial = arith.ori %bzero, %bminus : i1\n\
             %safe = arith.select %trivial, %one, %in1 : T\n\
             %rem = arith.remsi %in0, %safe : T\n\
             %m = arith.select %trivial, %zero, %rem : T\n",
        );
        if fmod {
            text.push_str("%r = arith.addi %m, %zero : T\n");
        } else {
            text.push_str(
                "%nonzero = arith.cmpi ne, %m, %zero : T\n\
                 %mneg = arith.cmpi slt, %m, %zero : T\n\
                 %bneg = arith.cmpi slt, %in1, %zero : T\n\
                 %signs = arith.xori %mneg, %bneg : i1\n\
                 %fix = arith.andi %nonzero, %signs : i1\n\
                 %adjusted = arith.addi %m, %in1 : T\n\
                 %r = arith.select %fix, %adjusted, %m : T\n",
            );
        }
        text.replace(": T", &format!(": {t}"))
    };
    tensor(imp.e.map(&[&a, &b], ty, &|_| body.clone()))
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
    let t = d.mlir();
    let width = d.size() * 8;
    let signed = !d.is_unsigned();
    let (op, fill) = match (left, signed) {
        (true, _) => ("arith.shli", "%zero".to_string()),
        (false, false) => ("arith.shrui", "%zero".to_string()),
        (false, true) => ("arith.shrsi", "%sign".to_string()),
    };
    tensor(imp.e.map(&[&a, &b], ty, &|_| {
        format!(
            "%width = arith.constant {width} : {t}\n%zero = arith.constant 0 : {t}\n\
             %minus = arith.constant -1 : {t}\n%negative = arith.cmpi slt, %in0, %zero : {t}\n\
             %sign = arith.select %negative, %minus, %zero : {t}\n\
             %big = arith.cmpi uge, %in1, %width : {t}\n%shifted = {op} %in0, %in1 : {t}\n\
             %r = arith.select %big, {fill}, %shifted : {t}"
        )
    }))
}

pub fn is_nan(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "IsNaN's input")?;
    let x = imp.val(input)?;
    let t = x.dtype().mlir();
    tensor(imp.e.map(&[&x], x.ty.with_dtype(DType::Bool), &|a| {
        format!("%r = arith.cmpf uno, {0}, {0} : {t}", a[0])
    }))
}

pub fn is_inf(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "IsInf's input")?;
    let positive = node.int("detect_positive", 1)? != 0;
    let negative = node.int("detect_negative", 1)? != 0;
    let x = imp.val(input)?;
    let d = x.dtype();
    let t = d.mlir();
    let (plus, minus) = (
        float_literal(f64::INFINITY, d),
        float_literal(f64::NEG_INFINITY, d),
    );
    tensor(imp.e.map(&[&x], x.ty.with_dtype(DType::Bool), &|a| {
        format!(
            "%plus = arith.constant {plus} : {t}\n%minus = arith.constant {minus} : {t}\n\
             %p = arith.cmpf oeq, {0}, %plus : {t}\n%n = arith.cmpf oeq, {0}, %minus : {t}\n\
             %want_p = arith.constant {positive}\n%want_n = arith.constant {negative}\n\
             %pp = arith.andi %p, %want_p : i1\n%nn = arith.andi %n, %want_n : i1\n\
             %r = arith.ori %pp, %nn : i1",
            a[0]
        )
    }))
}

/// Shrink: `x + bias` below `-lambd`, `x - bias` above `lambd`, else 0.
pub fn shrink(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let lambd = node.float("lambd", 0.5)? as f64;
    let bias = node.float("bias", 0.0)? as f64;
    let x = imp.val(node.input(0)?)?;
    let d = x.dtype();
    let t = d.mlir();
    let body = if d.is_float() {
        let l = |v: f64| float_literal(v, d);
        format!(
            "%low = arith.constant {} : {t}\n%high = arith.constant {} : {t}\n\
             %bias = arith.constant {} : {t}\n%zero = arith.constant {} : {t}\n\
             %below = arith.cmpf olt, %in0, %low : {t}\n%above = arith.cmpf ogt, %in0, %high : {t}\n\
             %plus = arith.addf %in0, %bias : {t}\n%minus = arith.subf %in0, %bias : {t}\n\
             %upper = arith.select %above, %minus, %zero : {t}\n\
             %r = arith.select %below, %plus, %upper : {t}",
            l(-lambd),
            l(lambd),
            l(bias),
            l(0.0)
        )
    } else if d.is_int() {
        // Integers compare with the thresholds as numpy does (promoted):
        // x < -lambd is x < ceil(-lambd), x > lambd is x > floor(lambd).
        if bias.fract() != 0.0 {
            bail!("Shrink of {d} tensors with the fractional bias {bias}");
        }
        format!(
            "%low = arith.constant {} : {t}\n%high = arith.constant {} : {t}\n\
             %bias = arith.constant {} : {t}\n%zero = arith.constant 0 : {t}\n\
             %below = arith.cmpi slt, %in0, %low : {t}\n%above = arith.cmpi sgt, %in0, %high : {t}\n\
             %plus = arith.addi %in0, %bias : {t}\n%minus = arith.subi %in0, %bias : {t}\n\
             %upper = arith.select %above, %minus, %zero : {t}\n\
             %r = arith.select %below, %plus, %upper : {t}",
            (-lambd).ceil() as i64,
            lambd.floor() as i64,
            bias as i64
        )
    } else {
        bail!("Shrink of bool tensors");
    };
    tensor(imp.e.map(&[&x], x.ty.clone(), &|_| body.clone()))
}
