//! Expansions of the tcc dialect's composite ops into TOSA.
//!
//! Each function builds the expansion in front of the composite op and
//! returns the value that replaces its result. The expansions are the
//! numerically careful forms: softmax subtracts the row maximum before
//! exponentiating; layer norm computes the variance of centred values.

use melior::ir::attribute::{FloatAttribute, IntegerAttribute, StringAttribute};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Value, ValueLike};

use crate::ir::error::PassError;
use crate::ir::operand::operand_at;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::{StaticTensor, normalize_axis};

type Result<'c, T> = std::result::Result<T, PassError<'c>>;

fn int_attr<'c>(op: OperationRef<'c, 'c>, name: &str) -> Result<'c, i64> {
    op.attribute(name)
        .ok()
        .and_then(|a| IntegerAttribute::try_from(a).ok())
        .map(|a| a.value())
        .ok_or_else(|| PassError::at(op.location(), format!("missing integer attribute '{name}'")))
}

fn axis_of<'c>(op: OperationRef<'c, 'c>, tensor: &StaticTensor<'c>) -> Result<'c, usize> {
    let axis = int_attr(op, "axis")?;
    normalize_axis(axis, tensor.rank()).ok_or_else(|| {
        PassError::at(
            op.location(),
            format!("axis {axis} out of range for rank {}", tensor.rank()),
        )
    })
}

/// The pieces softmax and log-softmax share: `x - max(x)`, `exp` of it and
/// the sum of the exponentials along the axis.
struct ShiftedExp<'c> {
    shifted: Value<'c, 'c>,
    exp: Value<'c, 'c>,
    sum: Value<'c, 'c>,
}

fn shifted_exp<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, ShiftedExp<'c>> {
    let x = operand_at(op, 0)?;
    let axis = axis_of(op, &b.tensor(x)?)?;
    let max = b.reduce("tosa.reduce_max", x, axis)?;
    let shifted = b.binary("tosa.sub", x, max)?;
    let exp = b.unary("tosa.exp", shifted)?;
    let sum = b.reduce("tosa.reduce_sum", exp, axis)?;
    Ok(ShiftedExp { shifted, exp, sum })
}

/// `tcc.softmax` → `exp(x - max) * reciprocal(sum(exp(x - max)))`.
pub fn softmax<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let parts = shifted_exp(b, op)?;
    let inverse = b.unary("tosa.reciprocal", parts.sum)?;
    b.mul(parts.exp, inverse)
}

/// `tcc.log_softmax` → `(x - max) - log(sum(exp(x - max)))`.
pub fn log_softmax<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let parts = shifted_exp(b, op)?;
    let log_sum = b.unary("tosa.log", parts.sum)?;
    b.binary("tosa.sub", parts.shifted, log_sum)
}

/// `tcc.gelu` → the erf form or the tanh approximation.
pub fn gelu<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let x = operand_at(op, 0)?;
    // Elementwise: a symbolic batch passes through.
    let t = StaticTensor::ranked(x.r#type()).ok_or_else(|| b.error("expected a ranked tensor"))?;
    let (rank, element) = (t.rank(), t.element);
    let approximate = op
        .attribute("approximate")
        .ok()
        .and_then(|a| StringAttribute::try_from(a).ok())
        .map(|a| a.value().to_string())
        .unwrap_or_else(|| "none".into());
    let inner = match approximate.as_str() {
        "none" => {
            let scaled = b.mul(x, b.scalar(std::f64::consts::FRAC_1_SQRT_2, rank, element)?)?;
            b.unary("tosa.erf", scaled)?
        }
        "tanh" => {
            let cube = b.mul(b.mul(x, x)?, x)?;
            let cubic = b.mul(cube, b.scalar(0.044715, rank, element)?)?;
            let sum = b.binary("tosa.add", x, cubic)?;
            let sqrt_2_over_pi = (2.0 / std::f64::consts::PI).sqrt();
            b.unary(
                "tosa.tanh",
                b.mul(sum, b.scalar(sqrt_2_over_pi, rank, element)?)?,
            )?
        }
        other => return Err(b.error(format!("unknown gelu approximation '{other}'"))),
    };
    let one_plus = b.binary("tosa.add", inner, b.scalar(1.0, rank, element)?)?;
    let half_x = b.mul(x, b.scalar(0.5, rank, element)?)?;
    b.mul(half_x, one_plus)
}

/// `tcc.silu` → `x * sigmoid(x)`.
pub fn silu<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let x = operand_at(op, 0)?;
    b.mul(x, b.unary("tosa.sigmoid", x)?)
}

/// `tcc.layer_norm` → mean and variance over the trailing dimensions by
/// successive reductions, then `(x - mean) * rsqrt(var + eps) * scale + bias`.
pub fn layer_norm<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let (x, scale, bias) = (operand_at(op, 0)?, operand_at(op, 1)?, operand_at(op, 2)?);
    let t = b.tensor(x)?;
    let (rank, element) = (t.rank(), t.element);
    let axis = axis_of(op, &t)?;
    let epsilon = op
        .attribute("epsilon")
        .ok()
        .and_then(|a| FloatAttribute::try_from(a).ok())
        .map(|a| a.value())
        .ok_or_else(|| b.error("missing float attribute 'epsilon'"))?;
    let count: i64 = t.shape[axis..].iter().product();
    let inverse_count = b.scalar(1.0 / count as f64, rank, element)?;

    let sum_trailing = |v: Value<'c, 'c>| -> Result<'c, Value<'c, 'c>> {
        (axis..rank).try_fold(v, |acc, dim| b.reduce("tosa.reduce_sum", acc, dim))
    };
    let mean = b.mul(sum_trailing(x)?, inverse_count)?;
    let centred = b.binary("tosa.sub", x, mean)?;
    let variance = b.mul(sum_trailing(b.mul(centred, centred)?)?, inverse_count)?;
    let inv_std = b.unary(
        "tosa.rsqrt",
        b.binary("tosa.add", variance, b.scalar(epsilon, rank, element)?)?,
    )?;
    let normalized = b.mul(centred, inv_std)?;

    // scale and bias have the normalized shape; give them x's rank.
    let mut full_shape = vec![1; axis];
    full_shape.extend_from_slice(&t.shape[axis..]);
    let (scale, bias) = if axis == 0 {
        (scale, bias)
    } else {
        (
            b.reshape(scale, &full_shape)?,
            b.reshape(bias, &full_shape)?,
        )
    };
    let scaled = b.mul(normalized, scale)?;
    let result = b.binary("tosa.add", scaled, bias)?;
    debug_assert_eq!(result.r#type(), x.r#type());
    Ok(result)
}
