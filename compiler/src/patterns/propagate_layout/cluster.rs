//! Sinking a transpose through a whole cluster of layout-agnostic ops at
//! once ([`sink_cluster`]), where op-by-op sinking stops because an op
//! reads the transposed value both at its start and its end.

use melior::Context;
use melior::ir::BlockLike;
use melior::ir::Value;
use melior::ir::operation::{OperationLike, OperationRef};

use super::{
    AXIS_OPS, ELEMENTWISE, inverse, rank_of, reshape_as_transpose, result_of, sink, transpose_perm,
};
use crate::ir::constant::ConstTensor;
use crate::ir::error::PassError;
use crate::ir::util::{defining_op, op_name, same_op, users};

/// The most ops a layout cluster may hold (a bound on the analysis; the
/// clusters between two convolutions are a few dozen ops).
const MAX_CLUSTER_OPS: usize = 512;

/// Whether `op` can be computed under a permutation of rank `rank`: an
/// elementwise or axis op of that result rank, or a slice or pad.
fn layout_agnostic(op: OperationRef, rank: usize) -> bool {
    let name = op_name(&op);
    op.result_count() == 1
        && (matches!(name.as_str(), "tosa.slice" | "tosa.pad")
            || ELEMENTWISE.contains(&name.as_str())
            || AXIS_OPS.contains(&name.as_str()))
        && op.result(0).is_ok_and(|r| rank_of(r.into()) == Some(rank))
}

/// The data operands of a layout-agnostic op: the sliced or padded tensor,
/// or the operands of the result's rank.
fn data_operands<'c>(op: OperationRef<'c, 'c>, rank: usize) -> Vec<Value<'c, 'c>> {
    if matches!(op_name(&op).as_str(), "tosa.slice" | "tosa.pad") {
        return op.operand(0).into_iter().collect();
    }
    op.operands()
        .filter(|v| rank_of(*v) == Some(rank))
        .collect()
}

/// Sinks the transpose `op` (by `P`) through the whole cluster of
/// layout-agnostic ops connected to its result, when that removes more
/// transposes than it adds.
///
/// [`sink_transposes`] decides op by op and stops where an op's operands
/// are not all transposes yet. A local response normalization written in
/// primitive ops is such a case: `x * pow(k + a * sum(slices(pad(x * x))),
/// -b)` reads `x` (a transpose) both at its start and its end, so neither
/// end can move first. Here the cluster is the closure of `op`'s users
/// under "layout-agnostic producer or user"; every operand entering it
/// must be a constant, a transpose by `P` or a reshape that moves unit
/// dimensions as `P` does (a squeeze-and-excitation block's channel
/// scale; anything else would need a new transpose: the cluster is left
/// alone). Sinking the cluster removes
/// the transposes by `P` all of whose users are inside and cancels the
/// transposes by `P^-1` of its results; it costs one transpose per result
/// used outside otherwise. On a gain, every member is sunk in program
/// order (its operands are transposes or constants by then).
pub fn sink_cluster<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let Some(perm) = transpose_perm(op) else {
        return Ok(false);
    };
    let rank = perm.len();
    let back = inverse(&perm);
    let start = result_of(op)?;
    let mut members: Vec<OperationRef<'c, 'c>> = Vec::new();
    let mut feeding: Vec<OperationRef<'c, 'c>> = vec![op];
    let mut work: Vec<OperationRef<'c, 'c>> = users(start);
    let contains =
        |list: &[OperationRef<'c, 'c>], o: &OperationRef| list.iter().any(|m| same_op(m, o));
    while let Some(candidate) = work.pop() {
        if contains(&members, &candidate) {
            continue;
        }
        if !layout_agnostic(candidate, rank) || members.len() >= MAX_CLUSTER_OPS {
            return Ok(false);
        }
        members.push(candidate);
        for operand in data_operands(candidate, rank) {
            // Constants and unit-dimension reshapes that move as `P` would
            // enter for free.
            if ConstTensor::is_constant(operand) || reshape_as_transpose(operand, &perm).is_some() {
                continue;
            }
            let Some(producer) = defining_op(operand) else {
                return Ok(false); // a function argument
            };
            if transpose_perm(producer).as_deref() == Some(perm.as_slice()) {
                if !contains(&feeding, &producer) {
                    feeding.push(producer);
                }
            } else if layout_agnostic(producer, rank) {
                work.push(producer);
            } else {
                return Ok(false);
            }
        }
        for user in users(result_of(candidate)?) {
            if layout_agnostic(user, rank) && !contains(&members, &user) {
                work.push(user);
            }
        }
    }
    // Gains and costs, in transposes.
    let mut gain = 0usize;
    let mut cost = 0usize;
    for transpose in &feeding {
        if users(result_of(*transpose)?)
            .iter()
            .all(|u| contains(&members, u))
        {
            gain += 1;
        }
    }
    for member in &members {
        let mut outside = false;
        for user in users(result_of(*member)?) {
            if contains(&members, &user) {
                continue;
            }
            if transpose_perm(user).as_deref() == Some(back.as_slice()) {
                gain += 1;
            } else {
                outside = true;
            }
        }
        cost += usize::from(outside);
    }
    if gain <= cost {
        return Ok(false);
    }
    let block = op
        .block()
        .ok_or_else(|| PassError::at(op.location(), "transpose outside a block"))?;
    let mut order = Vec::new();
    let mut next = block.first_operation();
    while let Some(candidate) = next {
        next = candidate.next_in_block();
        let candidate = unsafe { OperationRef::from_raw(candidate.to_raw()) };
        if contains(&members, &candidate) {
            order.push(candidate);
        }
    }
    for member in order {
        if !sink(context, member, true, Some(&perm))? {
            return Err(PassError::at(
                member.location(),
                "internal error: a layout cluster member could not be sunk",
            ));
        }
    }
    Ok(true)
}
