//! Transposes that compose or vanish: two transposes in a row become one
//! ([`compose_transposes`]), a transpose that only moves unit dimensions
//! becomes a reshape ([`transpose_to_reshape`]), and a transpose feeding a
//! reshape that merges adjacent dimensions moves after it
//! ([`sink_through_reshape`]).

use melior::Context;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Value, ValueLike};

use super::{result_of, transpose_perm, transposed_operand};
use crate::ir::constant::ConstTensor;
use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, replace_and_erase, users};

/// `reshape(transpose(x, P), R)` where the reshape only merges dimensions
/// that lie next to each other, in order, in `x` (and adds or drops unit
/// dimensions): the same merge on `x` first, then a transpose of the
/// merged groups, then unit dimensions. A CNN's global pooling written as
/// transpose-to-NCHW, reshape to `[N, C, H*W]`, reduce is the case: after
/// this the reduction sees the channels-last data directly. Applies when
/// the reshape is the transpose's only user. Returns whether it rewrote.
pub(super) fn sink_through_reshape<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let Some((operand, producer, perm)) = transposed_operand(op)? else {
        return Ok(false);
    };
    if users(operand).len() != 1 {
        return Ok(false);
    }
    let source: Value = producer
        .operand(0)
        .map_err(|e| PassError::at(op.location(), e.to_string()))?;
    // A symbolic batch (`i64::MIN` in `ranked` shapes) is a group of its
    // own: the one `?` of the source must land on the one `?` of the
    // reshape, never merged with static dimensions.
    const DYNAMIC: i64 = i64::MIN;
    let (Some(x), Some(r)) = (
        StaticTensor::ranked(source.r#type()),
        StaticTensor::ranked(result_of(op)?.r#type()),
    ) else {
        return Ok(false);
    };
    let dynamic_count = |shape: &[i64]| shape.iter().filter(|&&d| d == DYNAMIC).count();
    if dynamic_count(&x.shape) > 1 || dynamic_count(&x.shape) != dynamic_count(&r.shape) {
        return Ok(false);
    }
    // The transpose's non-unit dimensions, as source dimensions in output
    // order, grouped into the reshape's non-unit dimensions.
    let moved: Vec<usize> = perm.iter().copied().filter(|&p| x.shape[p] != 1).collect();
    let targets: Vec<i64> = r.shape.iter().copied().filter(|&d| d != 1).collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index = 0;
    for &target in &targets {
        if target == DYNAMIC {
            if index >= moved.len() || x.shape[moved[index]] != DYNAMIC {
                return Ok(false);
            }
            groups.push(vec![moved[index]]);
            index += 1;
            continue;
        }
        let mut group = Vec::new();
        let mut product = 1i64;
        while product < target && index < moved.len() {
            if x.shape[moved[index]] == DYNAMIC {
                return Ok(false);
            }
            product *= x.shape[moved[index]];
            group.push(moved[index]);
            index += 1;
        }
        // Only merges of source dimensions adjacent and in order.
        if product != target || group.windows(2).any(|w| w[1] != w[0] + 1) {
            return Ok(false);
        }
        groups.push(group);
    }
    if index != moved.len() || groups.len() < 2 {
        return Ok(false);
    }
    let mut in_source_order: Vec<usize> = (0..groups.len()).collect();
    in_source_order.sort_by_key(|&g| groups[g][0]);
    // Output group g is the position_of[g]-th group in source order.
    let mut position_of = vec![0; groups.len()];
    for (position, &g) in in_source_order.iter().enumerate() {
        position_of[g] = position;
    }
    // The merge keeps the reshape's unit dimensions where they are; its
    // other positions hold the groups in source order, which the transpose
    // then puts in output order.
    let slots: Vec<usize> = (0..r.shape.len()).filter(|&i| r.shape[i] != 1).collect();
    let mut merged = r.shape.clone();
    for (k, &g) in in_source_order.iter().enumerate() {
        merged[slots[k]] = match groups[g].as_slice() {
            [one] => x.shape[*one],
            group => group.iter().map(|&d| x.shape[d]).product(),
        };
    }
    let mut order: Vec<usize> = (0..r.shape.len()).collect();
    for (g, &slot) in slots.iter().enumerate() {
        order[slot] = slots[position_of[g]];
    }
    let builder = TosaBuilder::before(context, op)?;
    let reshaped = builder.reshape(source, &merged)?;
    let replacement = builder.transpose(reshaped, &order)?;
    let result = result_of(op)?;
    replace_and_erase(op, result, replacement);
    Ok(true)
}

/// Composes `transpose(transpose(x, P1), P2)` into one transpose of `x`
/// (or `x` itself when the composition is the identity), and folds a
/// transpose of a constant, so that operands meeting at an op show one
/// permutation or a constant and sinking goes on within the pass.
pub fn compose_transposes<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let Some(outer) = transpose_perm(op) else {
        return Ok(false);
    };
    if crate::patterns::fold_constants::fold(context, op)? {
        return Ok(true);
    }
    let input: Value = op
        .operand(0)
        .map_err(|e| PassError::at(op.location(), e.to_string()))?;
    let Some(producer) = defining_op(input) else {
        return Ok(false);
    };
    let Some(inner) = transpose_perm(producer) else {
        return Ok(false);
    };
    let source: Value = producer
        .operand(0)
        .map_err(|e| PassError::at(op.location(), e.to_string()))?;
    let composed: Vec<usize> = outer.iter().map(|&o| inner[o]).collect();
    let result = result_of(op)?;
    let replacement = if composed.iter().enumerate().all(|(i, &p)| i == p) {
        source
    } else {
        TosaBuilder::before(context, op)?.transpose(source, &composed)?
    };
    replace_and_erase(op, result, replacement);
    Ok(true)
}

/// Replaces a transpose that only moves size-1 dimensions (the other
/// dimensions keep their order, so the data's order is unchanged) by a
/// reshape. Returns whether it rewrote.
pub fn transpose_to_reshape<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let Some(perm) = transpose_perm(op) else {
        return Ok(false);
    };
    let input: Value = op
        .operand(0)
        .map_err(|e| PassError::at(op.location(), e.to_string()))?;
    // A transpose of a constant or of a transpose is composed instead.
    if ConstTensor::is_constant(input) || defining_op(input).and_then(transpose_perm).is_some() {
        return Ok(false);
    }
    let Some(tensor) = StaticTensor::of(input.r#type()) else {
        return Ok(false);
    };
    let moved: Vec<usize> = perm
        .iter()
        .copied()
        .filter(|&p| tensor.shape[p] != 1)
        .collect();
    if moved.windows(2).any(|w| w[0] > w[1]) {
        return Ok(false);
    }
    let shape: Vec<i64> = perm.iter().map(|&p| tensor.shape[p]).collect();
    let result = result_of(op)?;
    let reshaped = TosaBuilder::before(context, op)?.reshape(input, &shape)?;
    replace_and_erase(op, result, reshaped);
    Ok(true)
}
