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
use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, op_name, use_count};

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

/// The new weights and bias of a producer that absorbs `factors` (one per
/// output channel) by `combine` (`name`: the folded op), or `None` where it
/// cannot: weights or bias not constant, channels not matching, a shift
/// into a matmul (no bias).
struct Folded {
    weights: Option<ConstTensor>,
    bias: Option<ConstTensor>,
}

fn plan_fold(
    producer: OperationRef,
    kind: Producer,
    name: &str,
    combine: fn(f32, f32) -> f32,
    factors: &[f32],
) -> Option<Folded> {
    if matches!(kind, Producer::Matmul) && name != "tosa.mul" {
        return None;
    }
    let weights = ConstTensor::of_value(producer.operand(1).ok()?)?;
    let channels = channel_count(kind, &weights)?;
    if channels != factors.len() as i64 {
        return None;
    }
    let scaled = match name {
        "tosa.mul" => Some(scale_weights(kind, &weights, factors)?),
        _ => None,
    };
    if matches!(kind, Producer::Matmul) {
        return Some(Folded {
            weights: scaled,
            bias: None,
        });
    }
    let bias = ConstTensor::of_value(producer.operand(2).ok()?)?.f32s()?;
    if bias.len() != 1 && bias.len() != factors.len() {
        return None;
    }
    let folded: Vec<f32> = (0..factors.len())
        .map(|ch| combine(bias[if bias.len() == 1 { 0 } else { ch }], factors[ch]))
        .collect();
    Some(Folded {
        weights: scaled,
        bias: Some(ConstTensor::from_f32s(vec![channels], &folded)),
    })
}

/// Gives `producer` the weights and bias of `folded`.
fn apply_fold<'c>(
    context: &'c Context,
    producer: OperationRef<'c, 'c>,
    folded: &Folded,
) -> Result<(), PassError<'c>> {
    let builder = TosaBuilder::before(context, producer)?;
    let mut producer_mut = unsafe { OperationRefMut::from_raw(producer.to_raw()) };
    for (index, value) in [(1, &folded.weights), (2, &folded.bias)] {
        if let Some(value) = value {
            let like = producer
                .operand(index)
                .map_err(|e| builder.error(e.to_string()))?;
            let constant = new_constant(&builder, like, value)?;
            producer_mut.set_operand(index, constant);
        }
    }
    Ok(())
}

/// The producers a per-channel affine on `produced` (of the op's result
/// type, used once) folds into, each with its first channel: the
/// convolution or matmul producing it, or every input of a channel
/// concatenation (`tosa.concat` along the last axis, used once) that is
/// itself such a producer used only there: an ONNX grouped convolution,
/// imported as one convolution per group and a concat.
fn fold_targets<'c>(
    produced: Value<'c, 'c>,
) -> Option<Vec<(OperationRef<'c, 'c>, Producer, usize)>> {
    if use_count(produced) != 1 {
        return None;
    }
    let op = defining_op(produced)?;
    if let Some(kind) = producer_kind(op) {
        return Some(vec![(op, kind, 0)]);
    }
    let rank = StaticTensor::of(produced.r#type())?.rank();
    if op_name(&op) != "tosa.concat" || !concat_along(op, rank - 1) {
        return None;
    }
    let mut first = 0;
    let mut targets = Vec::new();
    for index in 0..op.operand_count() {
        let input = op.operand(index).ok()?;
        let producer = defining_op(input)?;
        let kind = producer_kind(producer)?;
        if use_count(input) != 1 {
            return None;
        }
        targets.push((producer, kind, first));
        first += *StaticTensor::of(input.r#type())?.shape.last()? as usize;
    }
    Some(targets)
}

/// Whether the `tosa.concat` `op` joins along dimension `axis`.
fn concat_along(op: OperationRef, axis: usize) -> bool {
    op.attribute("axis")
        .ok()
        .and_then(|a| melior::ir::attribute::IntegerAttribute::try_from(a).ok())
        .is_some_and(|a| a.value() == axis as i64)
}

/// Folds `op` (a `tosa.mul`, `tosa.add` or `tosa.sub`) into the
/// convolution or matmul producing one of its operands, or into every
/// convolution of the channel concat producing it (a grouped
/// convolution's groups, each taking its channels). Returns whether it
/// rewrote.
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
    let Some(&channels) = tensor.shape.last() else {
        return Ok(false);
    };
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
        if produced.r#type() != result.r#type() {
            continue;
        }
        let Some(targets) = fold_targets(produced) else {
            continue;
        };
        let Some(factors) = per_channel(constant, tensor.rank(), channels) else {
            continue;
        };
        // Every target must fold before any is changed.
        let plans: Option<Vec<Folded>> = targets
            .iter()
            .enumerate()
            .map(|(i, &(producer, kind, first))| {
                let end = targets.get(i + 1).map_or(factors.len(), |t| t.2);
                plan_fold(producer, kind, &name, combine, factors.get(first..end)?)
            })
            .collect();
        let Some(plans) = plans else { continue };
        for ((producer, _, _), plan) in targets.iter().zip(&plans) {
            apply_fold(context, *producer, plan)?;
        }
        crate::ir::util::replace_and_erase(op, result, produced);
        return Ok(true);
    }
    Ok(false)
}

/// Moves a `tosa.clamp` (an activation) after a channel concat of
/// convolutions or matmuls into the concat's inputs, `clamp(concat(x,
/// ...)) = concat(clamp(x), ...)`, so that it becomes each producer's
/// epilogue instead of a kernel of its own: after a grouped convolution
/// whose BatchNorm folded into its groups, the ReLU is what remains.
/// Returns whether it rewrote.
pub fn sink_clamp_into_concat<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if op_name(&op) != "tosa.clamp" || op.operand_count() != 1 || op.result_count() != 1 {
        return Ok(false);
    }
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(0)) else {
        return Ok(false);
    };
    let result: Value = result.into();
    let Some(concat) = defining_op(input) else {
        return Ok(false);
    };
    if input.r#type() != result.r#type()
        || fold_targets(input).is_none_or(|t| t.len() < 2)
        || op_name(&concat) != "tosa.concat"
    {
        return Ok(false);
    }
    let attributes: Vec<(&str, melior::ir::Attribute)> = ["min_val", "max_val", "nan_mode"]
        .into_iter()
        .filter_map(|name| Some((name, op.attribute(name).ok()?)))
        .collect();
    let builder = TosaBuilder::before(context, concat)?;
    let mut concat_mut = unsafe { OperationRefMut::from_raw(concat.to_raw()) };
    for index in 0..concat.operand_count() {
        let part = concat
            .operand(index)
            .map_err(|e| builder.error(e.to_string()))?;
        let clamped = builder.insert("tosa.clamp", &[part], part.r#type(), &attributes)?;
        concat_mut.set_operand(index, clamped);
    }
    crate::ir::util::replace_and_erase(op, result, input);
    Ok(true)
}
