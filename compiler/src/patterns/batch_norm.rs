//! Folding of a per-channel affine (an inference BatchNormalization after
//! import: `x * scale + shift`) into the convolution or matmul before it
//! (Glow's "BN fusion"), used by `tcc-fold-batch-norm`.
//!
//! `mul(conv(x, W, b), s)` becomes `conv(x, W * s, b * s)`,
//! `add(conv(x, W, b), t)` becomes `conv(x, W, b + t)` (and `sub` likewise)
//! when `s`/`t` are constants that vary only along the output channels
//! (the last dimension, channels-last), `W` and `b` are constants and the
//! convolution's result has no other user. For `tosa.matmul` only the
//! multiply folds (into the right-hand matrix's columns): a matmul has no
//! bias, and its add stays an epilogue of the matmul kernel.

use melior::Context;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{Value, ValueLike};

use crate::ir::constant::ConstTensor;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, op_name, use_count};
use crate::passes::PassError;

/// Which operand holds the weights and how output channels lie in them.
#[derive(Clone, Copy)]
enum Producer {
    /// `tosa.conv2d` / `tosa.transpose_conv2d`: OHWI weights (channel is
    /// dimension 0), bias operand 2.
    Conv,
    /// `tosa.depthwise_conv2d`: HWCM weights (channel `c * M + m` is the
    /// flattened last two dimensions), bias operand 2.
    Depthwise,
    /// `tosa.matmul`: `[B, K, N]` right-hand side (channel is the last
    /// dimension), no bias.
    Matmul,
}

fn producer_kind(op: OperationRef) -> Option<Producer> {
    match op_name(&op).as_str() {
        "tosa.conv2d" | "tosa.transpose_conv2d" => Some(Producer::Conv),
        "tosa.depthwise_conv2d" => Some(Producer::Depthwise),
        "tosa.matmul" => Some(Producer::Matmul),
        _ => None,
    }
}

/// A constant broadcast along every dimension but the last, as one value
/// per channel (`channels` of them); `None` if it varies elsewhere.
fn per_channel(value: Value, rank: usize, channels: i64) -> Option<Vec<f32>> {
    let constant = ConstTensor::of_value(value)?;
    let shape = &constant.shape;
    if shape.len() != rank || shape[..rank - 1].iter().any(|&d| d != 1) {
        return None;
    }
    let last = *shape.last()?;
    if last != channels && last != 1 {
        return None;
    }
    let values = constant.f32s()?;
    Some(if last == 1 {
        vec![values[0]; channels as usize]
    } else {
        values
    })
}

/// Scales the weights' output channels: `W[.., ch, ..] *= scale[ch]`.
fn scale_weights(kind: Producer, weights: &ConstTensor, scale: &[f32]) -> Option<ConstTensor> {
    let values = weights.f32s()?;
    let channels = scale.len();
    let scaled: Vec<f32> = match kind {
        Producer::Conv => {
            let per = values.len() / channels;
            (values.len() == per * channels).then_some(())?;
            values
                .iter()
                .enumerate()
                .map(|(i, &w)| w * scale[i / per])
                .collect()
        }
        Producer::Depthwise | Producer::Matmul => {
            (values.len() % channels == 0).then_some(())?;
            values
                .iter()
                .enumerate()
                .map(|(i, &w)| w * scale[i % channels])
                .collect()
        }
    };
    Some(ConstTensor::from_f32s(weights.shape.clone(), &scaled))
}

fn channel_count(kind: Producer, weights: &ConstTensor) -> Option<i64> {
    let shape = &weights.shape;
    match kind {
        Producer::Conv => shape.first().copied(),
        Producer::Depthwise => Some(shape.get(2)? * shape.get(3)?),
        Producer::Matmul => shape.last().copied(),
    }
}

fn new_constant<'c>(
    builder: &TosaBuilder<'c>,
    like: Value<'c, 'c>,
    value: &ConstTensor,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let element = StaticTensor::of(like.r#type())
        .ok_or_else(|| builder.error("expected a static tensor"))?
        .element;
    let ty = StaticTensor {
        shape: value.shape.clone(),
        element,
    }
    .to_type();
    let attribute = value
        .to_attribute(ty)
        .map_err(|message| builder.error(message))?;
    builder.constant(attribute, ty)
}

/// Folds `op` (a `tosa.mul`, `tosa.add` or `tosa.sub`) into the
/// convolution or matmul producing one of its operands. Returns whether
/// it rewrote.
pub fn fold_into_producer<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let name = op_name(&op);
    let combine: fn(f32, f32) -> f32 = match name.as_str() {
        "tosa.mul" => |b, s| b * s,
        "tosa.add" => |b, t| b + t,
        "tosa.sub" => |b, t| b - t,
        _ => return Ok(false),
    };
    if op.result_count() != 1 {
        return Ok(false);
    }
    let result: Value = op
        .result(0)
        .map_err(|e| PassError::at(op.location(), e.to_string()))?
        .into();
    let Some(tensor) = StaticTensor::of(result.r#type()) else {
        return Ok(false);
    };
    if !melior::ir::TypeLike::is_f32(&tensor.element) {
        return Ok(false);
    }
    if name == "tosa.mul"
        && op.operand_count() > 2
        && !op
            .operand(2)
            .ok()
            .and_then(ConstTensor::of_value)
            .is_some_and(|shift| shift.bytes.iter().all(|&b| b == 0))
    {
        return Ok(false);
    }
    // The producer operand (either side for the commutative ops).
    let sides: &[(usize, usize)] = if name == "tosa.sub" {
        &[(0, 1)]
    } else {
        &[(0, 1), (1, 0)]
    };
    for &(p, c) in sides {
        let (Ok(produced), Ok(constant)) = (op.operand(p), op.operand(c)) else {
            continue;
        };
        let Some(producer) = defining_op(produced) else {
            continue;
        };
        let Some(kind) = producer_kind(producer) else {
            continue;
        };
        if use_count(produced) != 1 || produced.r#type() != result.r#type() {
            continue;
        }
        if matches!(kind, Producer::Matmul) && name != "tosa.mul" {
            continue;
        }
        let Ok(weights_value) = producer.operand(1) else {
            continue;
        };
        let Some(weights) = ConstTensor::of_value(weights_value) else {
            continue;
        };
        let Some(channels) = channel_count(kind, &weights) else {
            continue;
        };
        if tensor.shape.last() != Some(&channels) {
            continue;
        }
        let Some(factors) = per_channel(constant, tensor.rank(), channels) else {
            continue;
        };
        let builder = TosaBuilder::before(context, producer)?;
        let mut producer_mut = unsafe { OperationRefMut::from_raw(producer.to_raw()) };
        if !matches!(kind, Producer::Matmul) {
            let Ok(bias_value) = producer.operand(2) else {
                continue;
            };
            let Some(bias) = ConstTensor::of_value(bias_value) else {
                continue;
            };
            let Some(bias) = bias.f32s() else { continue };
            if bias.len() != 1 && bias.len() != channels as usize {
                continue;
            }
            let folded: Vec<f32> = (0..channels as usize)
                .map(|ch| combine(bias[if bias.len() == 1 { 0 } else { ch }], factors[ch]))
                .collect();
            if name == "tosa.mul" {
                let Some(scaled) = scale_weights(kind, &weights, &factors) else {
                    continue;
                };
                let w = new_constant(&builder, weights_value, &scaled)?;
                producer_mut.set_operand(1, w);
            }
            let b = new_constant(
                &builder,
                bias_value,
                &ConstTensor::from_f32s(vec![channels], &folded),
            )?;
            producer_mut.set_operand(2, b);
        } else {
            let Some(scaled) = scale_weights(kind, &weights, &factors) else {
                continue;
            };
            let w = new_constant(&builder, weights_value, &scaled)?;
            producer_mut.set_operand(1, w);
        }
        crate::ir::util::replace_and_erase(op, result, produced);
        return Ok(true);
    }
    Ok(false)
}
