//! Elementwise ops: math, activations, arithmetic with numpy (and, before
//! opset 7, legacy axis) broadcasting, comparisons, logic, casts.

use super::super::dtype::{DType, TType};
use super::super::emit::{Attr, Body, FPred, IPred, Sv, Val, broadcast_shapes};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::{narrow, tensor};

/// The first input, materialized, required to be a float tensor.
fn float_input(imp: &mut Importer, node: &Node) -> Result<Val> {
    let x = node.input(0)?;
    require_float(x, &format!("{}'s input", node.op()))?;
    imp.val(x)
}

pub fn float_unary(imp: &mut Importer, node: &Node, name: &str) -> Result<Vec<Value>> {
    let x = float_input(imp, node)?;
    tensor(imp.e.unary(name, &x))
}

pub fn abs(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    if x.dtype() == DType::Bool {
        bail!("Abs of a bool tensor");
    }
    tensor(imp.e.unary("tosa.abs", &x))
}

pub fn neg(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    if x.dtype() == DType::Bool {
        bail!("Neg of a bool tensor");
    }
    tensor(imp.e.negate(&x))
}

/// Ops TOSA lacks, as a `linalg.generic` over `math` ops.
pub fn math_unary(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = float_input(imp, node)?;
    let op = match node.op() {
        "Sqrt" => "math.sqrt",
        "Floor" => "math.floor",
        "Ceil" => "math.ceil",
        "Round" => "math.roundeven",
        "Sin" => "math.sin",
        "Cos" => "math.cos",
        other => bail!("no math op for {other}"),
    };
    tensor(imp.e.map(&[&x], x.ty.clone(), &|b, a| b.op(op, &[a[0]])))
}

pub fn sign(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    let d = x.dtype();
    let zero = imp.e.scalar(d, x.rank(), 0.0);
    let plus = imp.e.scalar(d, x.rank(), 1.0);
    let minus = imp.e.scalar(d, x.rank(), -1.0);
    let positive = imp.e.binary_to("tosa.greater", &x, &zero, DType::Bool)?;
    let negative = imp.e.binary_to("tosa.greater", &zero, &x, DType::Bool)?;
    let low = imp.e.select(&negative, &minus, &zero)?;
    tensor(imp.e.select(&positive, &plus, &low)?)
}

pub fn relu(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    if x.dtype() == DType::Bool {
        bail!("Relu of a bool tensor");
    }
    tensor(imp.e.clamp(&x, 0.0, f64::INFINITY))
}

/// `alpha * (exp(x) - 1)`.
fn exp_minus_one(imp: &mut Importer, x: &Val, alpha: f64) -> Result<Val> {
    let e = imp.e.unary("tosa.exp", x);
    let em1 = imp.e.offset(&e, -1.0)?;
    imp.e.scale(&em1, alpha)
}

/// `log(1 + exp(x))` computed as `max(x, 0) + log(1 + exp(-|x|))`.
fn softplus(imp: &mut Importer, x: &Val) -> Result<Val> {
    let positive = imp.e.clamp(x, 0.0, f64::INFINITY);
    let a = imp.e.unary("tosa.abs", x);
    let na = imp.e.negate(&a);
    let e = imp.e.unary("tosa.exp", &na);
    let e1 = imp.e.offset(&e, 1.0)?;
    let l = imp.e.unary("tosa.log", &e1);
    imp.e.add(&positive, &l)
}

/// `x * sigmoid(alpha * x)` (Swish, opset 24; SwiGLU's gate).
fn swish(imp: &mut Importer, x: &Val, alpha: f64) -> Result<Val> {
    let ax = imp.e.scale(x, alpha)?;
    let s = imp.e.unary("tosa.sigmoid", &ax);
    imp.e.mul(x, &s)
}

/// SwiGLU (opset 28): `Swish_alpha(A) * B` of two inputs of one shape.
pub fn swiglu(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let a = float_input(imp, node)?;
    let b = node.input(1)?;
    require_float(b, "SwiGLU's input B")?;
    let b = imp.val(b)?;
    if a.shape() != b.shape() || a.dtype() != b.dtype() {
        bail!(
            "SwiGLU's inputs must have one type and shape (no broadcasting), not {} and {}",
            a.ty,
            b.ty
        );
    }
    let alpha = node.float("alpha", 1.0)? as f64;
    let gate = swish(imp, &a, alpha)?;
    tensor(imp.e.mul(&gate, &b)?)
}

pub fn activation(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = float_input(imp, node)?;
    let d = x.dtype();
    let rank = x.rank();
    let bool_ty = x.ty.with_dtype(DType::Bool);
    let y = match node.op() {
        "LeakyRelu" => {
            let alpha = node.float("alpha", 0.01)? as f64;
            let ax = imp.e.scale(&x, alpha)?;
            if (0.0..=1.0).contains(&alpha) {
                imp.e.binary("tosa.maximum", &x, &ax)?
            } else {
                let zero = imp.e.scalar(d, rank, 0.0);
                let keep = imp.e.op("tosa.greater_equal", &[&x, &zero], &[], bool_ty);
                imp.e.select(&keep, &x, &ax)?
            }
        }
        "Elu" | "Selu" => {
            let (alpha, gamma) = if node.op() == "Elu" {
                (node.float("alpha", 1.0)? as f64, 1.0)
            } else {
                (
                    node.float("alpha", 1.673_263_2)? as f64,
                    node.float("gamma", 1.050_701)? as f64,
                )
            };
            let zero = imp.e.scalar(d, rank, 0.0);
            let positive = imp.e.op("tosa.greater", &[&x, &zero], &[], bool_ty);
            let negative = exp_minus_one(imp, &x, alpha)?;
            let y = imp.e.select(&positive, &x, &negative)?;
            imp.e.scale(&y, gamma)?
        }
        "Celu" => {
            let alpha = node.float("alpha", 1.0)? as f64;
            let scaled = imp.e.scale(&x, 1.0 / alpha)?;
            let negative = exp_minus_one(imp, &scaled, alpha)?;
            let low = imp.e.clamp(&negative, f64::NEG_INFINITY, 0.0);
            let high = imp.e.clamp(&x, 0.0, f64::INFINITY);
            imp.e.add(&high, &low)?
        }
        "ThresholdedRelu" => {
            let alpha = node.float("alpha", 1.0)? as f64;
            let threshold = imp.e.scalar(d, rank, alpha);
            let zero = imp.e.scalar(d, rank, 0.0);
            let keep = imp.e.op("tosa.greater", &[&x, &threshold], &[], bool_ty);
            imp.e.select(&keep, &x, &zero)?
        }
        "HardSigmoid" => {
            let alpha = node.float("alpha", 0.2)? as f64;
            let beta = node.float("beta", 0.5)? as f64;
            let ax = imp.e.scale(&x, alpha)?;
            let axb = imp.e.offset(&ax, beta)?;
            imp.e.clamp(&axb, 0.0, 1.0)
        }
        "HardSwish" => {
            let ax = imp.e.scale(&x, 1.0 / 6.0)?;
            let axb = imp.e.offset(&ax, 0.5)?;
            let h = imp.e.clamp(&axb, 0.0, 1.0);
            imp.e.mul(&x, &h)?
        }
        "Softplus" => softplus(imp, &x)?,
        "Softsign" => {
            let a = imp.e.unary("tosa.abs", &x);
            let a1 = imp.e.offset(&a, 1.0)?;
            imp.e.div(&x, &a1)?
        }
        "Swish" => {
            let alpha = node.float("alpha", 1.0)? as f64;
            swish(imp, &x, alpha)?
        }
        "Mish" => {
            let sp = softplus(imp, &x)?;
            let t = imp.e.unary("tosa.tanh", &sp);
            imp.e.mul(&x, &t)?
        }
        "Gelu" => {
            let approximate = node.string("approximate", "none")?;
            if approximate != "none" && approximate != "tanh" {
                bail!("Gelu approximate='{approximate}' is not one of none, tanh");
            }
            let ty = x.ty.clone();
            imp.e.op(
                "tcc.gelu",
                &[&x],
                &[("approximate", Attr::Str(approximate))],
                ty,
            )
        }
        other => bail!("no activation {other}"),
    };
    tensor(y)
}

pub fn prelu(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = float_input(imp, node)?;
    let slope_value = node.input(1)?;
    let mut slope = imp.val(slope_value)?;
    if broadcast_shapes(slope.shape(), x.shape()).as_deref() != Some(x.shape()) {
        // Before opset 7 (and in models exported for it) a 1-D slope of C
        // elements applies along the channel axis 1.
        if slope.rank() == 1 && x.rank() >= 2 && slope.shape()[0] == x.shape()[1] {
            let mut shape = vec![1; x.rank() - 1];
            shape[0] = slope.shape()[0];
            slope = imp.e.reshape(&slope, &shape);
        } else {
            bail!(
                "PRelu slope {:?} does not broadcast to the input {:?}",
                slope.shape(),
                x.shape()
            );
        }
    }
    let zero = imp.e.scalar(x.dtype(), x.rank(), 0.0);
    let keep = imp.e.op(
        "tosa.greater_equal",
        &[&x, &zero],
        &[],
        x.ty.with_dtype(DType::Bool),
    );
    let scaled = imp.e.mul(&x, &slope)?;
    tensor(imp.e.select(&keep, &x, &scaled)?)
}

pub fn clip(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    let (low, high) = if node.opset < 11 {
        (
            Some(node.float("min", f32::MIN)? as f64),
            Some(node.float("max", f32::MAX)? as f64),
        )
    } else {
        let bound = |i: usize| -> Result<Option<f64>> {
            match node.opt(i) {
                None => Ok(None),
                Some(Value::Const(c)) if c.numel() == 1 => Ok(Some(c.f64_at(0))),
                Some(Value::Const(_)) => bail!("Clip bound #{i} must be a scalar"),
                Some(Value::Tensor(_)) => Err(ImportError::new("")),
            }
        };
        match (bound(1), bound(2)) {
            (Ok(lo), Ok(hi)) => (lo, hi),
            _ => {
                // Bounds computed at run time: maximum/minimum.
                let mut y = x.clone();
                if let Some(lo) = node.opt(1) {
                    let lo = imp.val(lo)?;
                    y = imp.e.binary("tosa.maximum", &y, &lo)?;
                }
                if let Some(hi) = node.opt(2) {
                    let hi = imp.val(hi)?;
                    y = imp.e.binary("tosa.minimum", &y, &hi)?;
                }
                return tensor(y);
            }
        }
    };
    let (low, high) = (
        low.unwrap_or(f64::NEG_INFINITY),
        high.unwrap_or(f64::INFINITY),
    );
    if low > high {
        // ONNX: every element becomes max; clamp would reject min > max.
        let c = imp.e.splat(x.dtype(), x.shape().to_vec(), high);
        return tensor(c);
    }
    tensor(imp.e.clamp(&x, low, high))
}

/// Before opset 7, `broadcast=1` with `axis` aligns B's dims at `axis` of A.
fn legacy_broadcast(imp: &mut Importer, node: &Node, a: &Val, b: Val) -> Result<Val> {
    if node.opset >= 7 || node.int("broadcast", 0)? == 0 {
        return Ok(b);
    }
    let Some(axis) = node.int_opt("axis")? else {
        return Ok(b);
    };
    let axis = node.axis(axis, a.rank(), "axis")?;
    if axis + b.rank() > a.rank() {
        bail!(
            "legacy broadcast of {:?} at axis {axis} of {:?}",
            b.shape(),
            a.shape()
        );
    }
    let mut shape = vec![1; a.rank()];
    shape[axis..axis + b.rank()].copy_from_slice(b.shape());
    Ok(imp.e.reshape(&b, &shape))
}

fn pair(imp: &mut Importer, node: &Node) -> Result<(Val, Val)> {
    let a = imp.val(node.input(0)?)?;
    let b = imp.val(node.input(1)?)?;
    let b = legacy_broadcast(imp, node, &a, b)?;
    if a.dtype() != b.dtype() && node.op() != "Pow" {
        bail!(
            "{} of {} and {}: element types differ",
            node.op(),
            a.dtype(),
            b.dtype()
        );
    }
    Ok((a, b))
}

pub fn arithmetic(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    if node.op() == "Pow" {
        return pow(imp, node);
    }
    let (a, b) = pair(imp, node)?;
    if a.dtype() == DType::Bool {
        bail!("{} of bool tensors", node.op());
    }
    let y = match node.op() {
        "Add" => imp.e.add(&a, &b)?,
        "Sub" => imp.e.sub(&a, &b)?,
        "Mul" => imp.e.mul(&a, &b)?,
        "Div" if a.dtype().is_float() => {
            // Division by a constant multiplies by its reciprocal (folded).
            if let Some(Value::Const(c)) = node.opt(1)
                && node.opset >= 7
                && c.numel() as i64 <= super::super::fold::FOLD_LIMIT
            {
                let reciprocal: Vec<f64> = c.f64s().iter().map(|v| 1.0 / v).collect();
                let r =
                    super::super::tensor::Const::from_f64(c.dtype, c.shape.clone(), &reciprocal);
                let r = imp.e.constant(&r, "reciprocal")?;
                imp.e.mul(&a, &r)?
            } else {
                imp.e.div(&a, &b)?
            }
        }
        "Div" => {
            // Integer division truncating toward zero.
            let Some(shape) = broadcast_shapes(a.shape(), b.shape()) else {
                bail!(
                    "shapes {:?} and {:?} do not broadcast",
                    a.shape(),
                    b.shape()
                );
            };
            // uint64 (not widened) divides unsigned.
            let op = if a.dtype() == DType::U64 {
                "arith.divui"
            } else {
                "arith.divsi"
            };
            let ty = TType::new(a.dtype(), shape);
            imp.e
                .map(&[&a, &b], ty, &|body, x| body.op(op, &[x[0], x[1]]))
        }
        other => bail!("no arithmetic op {other}"),
    };
    tensor(y)
}

fn pow(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let base = node.input(0)?;
    if base.dtype().is_int() {
        return integer_pow(imp, node);
    }
    require_float(base, "Pow's base")?;
    let x = imp.val(base)?;
    if let Some(Value::Const(c)) = node.opt(1)
        && c.uniform()
        && c.numel() > 0
        && broadcast_shapes(x.shape(), &c.shape).as_deref() == Some(x.shape())
    {
        match c.f64_at(0) {
            1.0 => return tensor(x),
            2.0 => return tensor(imp.e.mul(&x, &x)?),
            0.5 => return math_unary_of(imp, &x, "math.sqrt"),
            _ => {}
        }
    }
    let y = imp.val(node.input(1)?)?;
    let y = legacy_broadcast(imp, node, &x, y)?;
    let y = if y.dtype() == DType::U64 {
        // uint64 (not widened) converts unsigned.
        let to = x.dtype();
        imp.e.map(&[&y], y.ty.with_dtype(to), &|b, a| {
            b.cast("arith.uitofp", a[0], to)
        })
    } else {
        imp.e.cast(&y, x.dtype())
    };
    tensor(imp.e.binary("tosa.pow", &x, &y)?)
}

/// Pow of an integer base (the result has the base's type): by repeated
/// squaring over the exponent's bits, exact with the wrap-around of the
/// type's multiplication; a negative exponent gives the truncated
/// `1 / base^-e` (1 for a base of 1, +-1 for -1, else 0). A float
/// exponent with an integral value takes the same path, any other is
/// `pow` in the exponent's float type truncated toward zero.
fn integer_pow(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    let y = imp.val(node.input(1)?)?;
    let y = legacy_broadcast(imp, node, &x, y)?;
    let Some(shape) = broadcast_shapes(x.shape(), y.shape()) else {
        bail!(
            "Pow: shapes {:?} and {:?} do not broadcast",
            x.shape(),
            y.shape()
        );
    };
    let (t, e_dtype) = (x.dtype(), y.dtype());
    // The exponent's bits to multiply in, and whether it is signed.
    let (bits, signed) = if e_dtype.is_float() {
        (63, true)
    } else if e_dtype.is_int() {
        let width = e_dtype.size() * 8;
        let signed = e_dtype != DType::U64;
        (if signed { width - 1 } else { width }, signed)
    } else {
        bail!("Pow's exponent must be a number, not {e_dtype}");
    };
    let body = |b: &mut Body, a: &[Sv]| -> Sv {
        let (base, exponent) = (a[0], a[1]);
        let z64 = b.int(0, DType::I64);
        let c1 = b.int(1, DType::I64);
        // The exponent as i64, and with a float exponent the float result
        // and whether the exponent is integral.
        let (e, float) = if e_dtype.is_float() {
            let bf = b.cast("arith.sitofp", base, e_dtype);
            let pf = b.op("math.powf", &[bf, exponent]);
            let fr = b.cast("arith.fptosi", pf, t);
            let e = b.cast("arith.fptosi", exponent, DType::I64);
            let eb = b.cast("arith.sitofp", e, e_dtype);
            let integral = b.cmpf(FPred::Oeq, eb, exponent);
            (e, Some((fr, integral)))
        } else if e_dtype.size() == 8 {
            (exponent, None)
        } else {
            (b.cast("arith.extsi", exponent, DType::I64), None)
        };
        let one = b.int(1, t);
        let zero = b.int(0, t);
        let (mut acc, mut power) = (one, base);
        let mut bit0 = None;
        for i in 0..bits {
            let shift = b.int(i as i64, DType::I64);
            let shifted = b.op("arith.shrui", &[e, shift]);
            let bit = b.op("arith.andi", &[shifted, c1]);
            bit0.get_or_insert(bit);
            let on = b.cmpi(IPred::Ne, bit, z64);
            let m = b.op("arith.muli", &[acc, power]);
            acc = b.select(on, m, acc);
            power = b.op("arith.muli", &[power, power]);
        }
        let result = match bit0 {
            Some(bit0) if signed => {
                let minus = b.int(-1, t);
                let odd = b.cmpi(IPred::Ne, bit0, z64);
                let sign = b.select(odd, minus, one);
                let is_minus = b.cmpi(IPred::Eq, base, minus);
                let is_one = b.cmpi(IPred::Eq, base, one);
                let n1 = b.select(is_minus, sign, zero);
                let nv = b.select(is_one, one, n1);
                let negative = b.cmpi(IPred::Slt, e, z64);
                b.select(negative, nv, acc)
            }
            _ => acc,
        };
        match float {
            Some((fr, integral)) => b.select(integral, result, fr),
            None => result,
        }
    };
    let ty = TType::new(x.dtype(), shape);
    tensor(imp.e.map(&[&x, &y], ty, &body))
}

fn math_unary_of(imp: &mut Importer, x: &Val, op: &'static str) -> Result<Vec<Value>> {
    tensor(imp.e.map(&[x], x.ty.clone(), &|b, a| b.op(op, &[a[0]])))
}

pub fn compare(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = pair(imp, node)?;
    let (name, swap) = match node.op() {
        "Equal" => ("tosa.equal", false),
        "Greater" => ("tosa.greater", false),
        "Less" => ("tosa.greater", true),
        "GreaterOrEqual" => ("tosa.greater_equal", false),
        "LessOrEqual" => ("tosa.greater_equal", true),
        other => bail!("no comparison {other}"),
    };
    let (a, b) = if swap { (b, a) } else { (a, b) };
    tensor(imp.e.binary_to(name, &a, &b, DType::Bool)?)
}

pub fn logical(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = pair(imp, node)?;
    if a.dtype() != DType::Bool {
        bail!("{} needs bool tensors, not {}", node.op(), a.dtype());
    }
    let y = match node.op() {
        "And" => imp.e.binary("tosa.logical_and", &a, &b)?,
        "Or" => imp.e.binary("tosa.logical_or", &a, &b)?,
        _ => {
            let either = imp.e.binary("tosa.logical_or", &a, &b)?;
            let both = imp.e.binary("tosa.logical_and", &a, &b)?;
            let not_both = imp.e.unary("tosa.logical_not", &both);
            imp.e.binary("tosa.logical_and", &either, &not_both)?
        }
    };
    tensor(y)
}

/// BitwiseAnd, BitwiseOr, BitwiseXor (numpy broadcasting) and
/// BitwiseNot of integer tensors (opset 18).
pub fn bitwise(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    if !x.dtype().is_int() {
        bail!("{} needs integer tensors, not {}", node.op(), x.dtype());
    }
    let t = x.dtype();
    if node.op() == "BitwiseNot" {
        return tensor(imp.e.map(&[&x], x.ty.clone(), &|b, a| {
            let ones = b.int(-1, t);
            b.op("arith.xori", &[a[0], ones])
        }));
    }
    let y = imp.val(node.input(1)?)?;
    if y.dtype() != x.dtype() {
        bail!(
            "{}'s inputs have different element types ({} and {})",
            node.op(),
            x.dtype(),
            y.dtype()
        );
    }
    let op = match node.op() {
        "BitwiseAnd" => "arith.andi",
        "BitwiseOr" => "arith.ori",
        "BitwiseXor" => "arith.xori",
        other => bail!("no bitwise op {other}"),
    };
    let shape = broadcast_shapes(x.shape(), y.shape()).ok_or_else(|| {
        ImportError::new(format!(
            "{}: shapes {:?} and {:?} do not broadcast",
            node.op(),
            x.shape(),
            y.shape()
        ))
    })?;
    let ty = x.ty.with_shape(shape);
    tensor(imp.e.map(&[&x, &y], ty, &|b, a| b.op(op, &[a[0], a[1]])))
}

/// BitCast (opset 26): the input's bits as another type of the same
/// width, little endian (a bool is the byte 0 or 1).
pub fn bit_cast(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let to_code = node
        .int_opt("to")?
        .ok_or_else(|| ImportError::new("BitCast needs the attribute 'to'"))?;
    let to = DType::from_onnx(to_code as i32).ok_or_else(|| {
        ImportError::new(format!(
            "BitCast to {} is not supported",
            DType::onnx_code_name(to_code as i32)
        ))
    })?;
    let from = input.dtype();
    if from.size() != to.size() {
        bail!(
            "BitCast from {from} ({} bytes) to {to} ({} bytes): the widths must agree",
            from.size(),
            to.size()
        );
    }
    if let Value::Const(c) = input {
        let bytes = c.full_bytes();
        if to == DType::Bool {
            // ONNX's bool is one byte, 0 or 1; any other byte is not a bool.
            if bytes.iter().any(|&b| b > 1) {
                bail!("BitCast of bytes other than 0 and 1 to bool");
            }
        }
        let c = super::super::tensor::Const {
            dtype: to,
            shape: c.shape.clone(),
            bytes: bytes.into(),
            splat: false,
        };
        return super::one(Value::constant(c));
    }
    let x = imp.val(input)?;
    let ty = x.ty.with_dtype(to);
    if from.mlir() == to.mlir() {
        return tensor(x.relabeled(to));
    }
    let y = match (from, to) {
        (DType::Bool, _) => imp
            .e
            .map(&[&x], ty, &|b, a| b.cast("arith.extui", a[0], to)),
        (_, DType::Bool) => bail!(
            "BitCast of {from} to bool at run time is not supported (a byte other than 0 and 1 is no bool)"
        ),
        _ => imp
            .e
            .map(&[&x], ty, &|b, a| b.cast("arith.bitcast", a[0], to)),
    };
    tensor(y)
}

pub fn not(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    if x.dtype() != DType::Bool {
        bail!("Not needs a bool tensor, not {}", x.dtype());
    }
    tensor(imp.e.unary("tosa.logical_not", &x))
}

pub fn variadic(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let count = node.inputs.iter().flatten().count();
    if count == 0 {
        bail!("{} needs at least one input", node.op());
    }
    let mut values = Vec::new();
    for v in node.inputs.iter().flatten() {
        values.push(imp.val(v)?);
    }
    if values.iter().any(|v| v.dtype() != values[0].dtype()) {
        bail!("{}: inputs have different element types", node.op());
    }
    let name = match node.op() {
        "Max" => "tosa.maximum",
        "Min" => "tosa.minimum",
        _ => "tosa.add",
    };
    let mut acc = values[0].clone();
    for v in &values[1..] {
        acc = imp.e.binary(name, &acc, v)?;
    }
    if node.op() == "Mean" {
        if !acc.dtype().is_float() {
            bail!("Mean of {} tensors", acc.dtype());
        }
        acc = imp.e.scale(&acc, 1.0 / values.len() as f64)?;
    }
    tensor(acc)
}

pub fn where_(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let cond = imp.val(node.input(0)?)?;
    let a = imp.val(node.input(1)?)?;
    let b = imp.val(node.input(2)?)?;
    if cond.dtype() != DType::Bool {
        bail!("Where's condition must be bool, not {}", cond.dtype());
    }
    if a.dtype() != b.dtype() {
        bail!(
            "Where of {} and {}: element types differ",
            a.dtype(),
            b.dtype()
        );
    }
    tensor(imp.e.select(&cond, &a, &b)?)
}

pub fn cast(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let target = if node.op() == "CastLike" {
        node.input(1)?.dtype()
    } else {
        let to = if node.opset < 6 {
            // Cast-1 names the type (`to = "FLOAT"`).
            let name = node.string("to", "")?;
            if name.is_empty() {
                bail!("Cast needs the attribute 'to'");
            }
            DType::onnx_code_of_name(&name)
                .ok_or_else(|| ImportError::new(format!("Cast to '{name}': no such type")))?
                as i64
        } else {
            node.int_opt("to")?
                .ok_or_else(|| ImportError::new("Cast needs the attribute 'to'"))?
        };
        match DType::from_onnx(to as i32) {
            Some(d) => imp.graph_dtype(d),
            None => bail!(
                "Cast to {} is not supported",
                DType::onnx_code_name(to as i32)
            ),
        }
    };
    if !target.in_graph() {
        bail!("Cast to {target} is not supported (tcc has no {target} tensors)");
    }
    // Opset 19: out-of-range values to float8 saturate unless `saturate = 0`.
    let saturate = node.opset < 19 || node.int("saturate", 1)? != 0;
    // CastLike of a constant to the type of a run-time tensor (exported
    // functions write `CastLike(-inf, x)`) is a constant: only the target's
    // element type matters.
    if let Value::Const(c) = input
        && node.op() == "CastLike"
        && (saturate || !target.is_minifloat())
        && c.numel() as i64 <= crate::front::onnx::fold::FOLD_LIMIT
    {
        return Ok(vec![Value::constant(c.cast(target))]);
    }
    let x = imp.val(input)?;
    tensor(convert(imp, x, target, saturate)?)
}

/// `x` converted to `target` as ONNX's Cast does (`saturate` for the
/// float8 targets).
pub fn convert(imp: &mut Importer, x: Val, target: DType, saturate: bool) -> Result<Val> {
    if x.dtype() == target {
        return Ok(x);
    }
    if x.dtype().is_narrow() || target.is_narrow() {
        let x = narrow::widen(imp, &x);
        if target.is_minifloat() {
            let x = match x.dtype() {
                DType::F32 => x,
                DType::F16 | DType::BF16 | DType::F64 => imp.e.cast(&x, DType::F32),
                _ => convert(imp, x, DType::F32, saturate)?,
            };
            return narrow::encode(imp, &x, target, saturate);
        }
        if target.is_narrow() {
            let x = convert(imp, x, DType::I64, saturate)?;
            return narrow::wrap(imp, &x, target);
        }
        return convert(imp, x, target, saturate);
    }
    let mut x = x;
    if x.dtype().is_unsigned() {
        // Unsigned: zero-extend (to int64, exact), or straight to a float.
        let (op, wide) = match (target.is_float(), x.dtype()) {
            (true, _) => ("arith.uitofp", target),
            (false, DType::U64) => ("", DType::I64),
            (false, _) => ("arith.extui", DType::I64),
        };
        if op.is_empty() {
            x = x.relabeled(DType::I64);
        } else {
            x = imp
                .e
                .map(&[&x], x.ty.with_dtype(wide), &|b, a| b.cast(op, a[0], wide));
        }
        if x.dtype() == target {
            return Ok(x);
        }
    }
    if x.dtype().is_float() && target.is_unsigned() {
        // Through int64 (ONNX truncates toward zero; out-of-range values
        // are undefined), then wrapped to the width; uint64 directly.
        let (op, wide) = if target == DType::U64 {
            ("arith.fptoui", target)
        } else {
            ("arith.fptosi", DType::I64)
        };
        let ty = x.ty.with_dtype(wide);
        let y = imp.e.map(&[&x], ty, &|b, a| b.cast(op, a[0], wide));
        return Ok(imp.e.cast(&y, target));
    }
    if x.dtype().is_float() && target.is_int() {
        // ONNX truncates toward zero (tosa.cast rounds to nearest).
        let ty = x.ty.with_dtype(target);
        return Ok(imp
            .e
            .map(&[&x], ty, &|b, a| b.cast("arith.fptosi", a[0], target)));
    }
    Ok(imp.e.cast(&x, target))
}
