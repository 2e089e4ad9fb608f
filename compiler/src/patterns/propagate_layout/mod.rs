//! Rewrites that move `tosa.transpose` ops out of the way of everything
//! that does not care about layout, used by `tcc-propagate-layout`.
//!
//! - **Sinking:** an elementwise op (or a concat or reduction) whose tensor
//!   operands are all transposes by the same permutation `P`, or constants,
//!   is computed on the untransposed values and followed by one transpose
//!   by `P`: `add(T(a), T(b)) -> T(add(a, b))`. Constants are transposed
//!   the other way at compile time (a `tosa.transpose` of a constant, which
//!   `tcc-fold-constants` folds); axis attributes follow the permutation.
//! - **Transposes that only move unit dimensions** keep the order of the
//!   data, so they become `tosa.reshape`s (free views) instead of kernels.
//!   The converse holds too: an operand that is such a reshape (a
//!   squeeze-and-excitation block's `[1,1,1,C] -> [1,C,1,1]` scale) is a
//!   transpose by whichever permutation moves those unit dimensions, so it
//!   sinks like one ([`reshape_as_transpose`]).
//!
//! Transposes meeting after sinking (`T^-1(T(x))`) cancel by TOSA's own
//! canonicalization.
//!
//! Here: the op-by-op sinking; [`cluster`] sinks a whole cluster of
//! layout-agnostic ops at once; [`compose`] composes transposes, turns
//! unit-dimension transposes into reshapes and sinks through reshapes;
//! [`chain`] collapses chains of reshapes and transposes and moves a
//! permutation of a matmul's rows after it.

use melior::Context;
use melior::ir::attribute::{AttributeLike, IntegerAttribute};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{BlockLike, Type, TypeLike, Value, ValueLike};

use crate::ir::constant::ConstTensor;
use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;

use crate::ir::util::{defining_op, op_name, replace_and_erase, users};

mod chain;
mod cluster;
mod compose;

pub use chain::{collapse_view_chains, sink_row_permutations, slice_before_split};
pub use cluster::sink_cluster;
use compose::sink_through_reshape;
pub use compose::{compose_transposes, transpose_to_reshape};

/// Elementwise TOSA (and tcc) ops: the result's shape is the broadcast of
/// the operands of the result's rank; lower-rank operands (`tosa.mul`'s
/// shift, zero points) are not tensors of the data and pass unchanged.
const ELEMENTWISE: &[&str] = &[
    "tosa.add",
    "tosa.sub",
    "tosa.mul",
    "tosa.maximum",
    "tosa.minimum",
    "tosa.pow",
    "tosa.intdiv",
    "tosa.equal",
    "tosa.greater",
    "tosa.greater_equal",
    "tosa.logical_and",
    "tosa.logical_or",
    "tosa.logical_xor",
    "tosa.logical_not",
    "tosa.bitwise_and",
    "tosa.bitwise_or",
    "tosa.bitwise_xor",
    "tosa.bitwise_not",
    "tosa.abs",
    "tosa.ceil",
    "tosa.floor",
    "tosa.clz",
    "tosa.cos",
    "tosa.sin",
    "tosa.exp",
    "tosa.log",
    "tosa.negate",
    "tosa.reciprocal",
    "tosa.rsqrt",
    "tosa.sigmoid",
    "tosa.tanh",
    "tosa.erf",
    "tosa.cast",
    "tosa.clamp",
    "tosa.select",
    "tcc.gelu",
    "tcc.silu",
];

/// Ops with an `axis` attribute over a rank-preserving result.
const AXIS_OPS: &[&str] = &[
    "tosa.concat",
    "tosa.reduce_sum",
    "tosa.reduce_max",
    "tosa.reduce_min",
    "tosa.reduce_prod",
    "tosa.reduce_all",
    "tosa.reduce_any",
];

/// The permutation of a `tosa.transpose` (`None` for any other op).
pub fn transpose_perm(op: OperationRef) -> Option<Vec<usize>> {
    if op_name(&op) != "tosa.transpose" {
        return None;
    }
    let perms = op.attribute("perms").ok()?;
    let raw = perms.to_raw();
    if !unsafe { mlir_sys::mlirAttributeIsADenseI32Array(raw) } {
        return None;
    }
    let count = unsafe { mlir_sys::mlirDenseArrayGetNumElements(raw) };
    (0..count)
        .map(|i| usize::try_from(unsafe { mlir_sys::mlirDenseI32ArrayGetElement(raw, i) }).ok())
        .collect()
}

fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inverse = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    inverse
}

/// `op`'s first operand, the transpose producing it and its permutation;
/// `None` when no transpose produces it.
fn transposed_operand<'c>(
    op: OperationRef<'c, 'c>,
) -> Result<Option<(Value<'c, 'c>, OperationRef<'c, 'c>, Vec<usize>)>, PassError<'c>> {
    let operand: Value = op
        .operand(0)
        .map_err(|e| PassError::at(op.location(), e.to_string()))?;
    Ok(defining_op(operand)
        .and_then(|producer| Some((operand, producer, transpose_perm(producer)?))))
}

/// The rank of a ranked tensor value, static or with dynamic dimensions
/// (a symbolic batch moves with the transposes like any other).
fn rank_of(value: Value) -> Option<usize> {
    if !value.r#type().is_ranked_tensor() {
        return None;
    }
    crate::ir::types::ranked_shape(value.r#type()).map(|s| s.len())
}

/// `op`'s operand `index`, or an error at `op`.
fn operand_of<'c>(op: OperationRef<'c, 'c>, index: usize) -> Result<Value<'c, 'c>, PassError<'c>> {
    op.operand(index)
        .map_err(|e| PassError::at(op.location(), e.to_string()))
}

fn result_of<'c>(op: OperationRef<'c, 'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
    op.result(0)
        .map(Into::into)
        .map_err(|e| PassError::at(op.location(), e.to_string()))
}

/// What sinking would do with each operand of an op.
enum Operand<'c> {
    /// Not a tensor of the data (shift, zero point): kept.
    Keep,
    /// A transpose's input, used instead of the transpose.
    Untransposed,
    /// A constant, transposed back at compile time.
    Constant,
    /// A reshape that only moves unit dimensions as the permutation does:
    /// its input, used instead of the reshape.
    Unreshaped(Value<'c, 'c>),
}

/// When `operand` is a `tosa.reshape` of a static tensor that only moves
/// size-1 dimensions, exactly as a transpose by `perm` would (the input's
/// shape permuted by `perm` is the result's, and the dimensions of other
/// sizes keep their order), the reshape's input: the operand is then
/// `transpose(input, perm)` and sinks like one. `None` otherwise.
fn reshape_as_transpose<'c>(operand: Value<'c, 'c>, perm: &[usize]) -> Option<Value<'c, 'c>> {
    let producer = defining_op(operand)?;
    if op_name(&producer) != "tosa.reshape" {
        return None;
    }
    let input: Value = producer.operand(0).ok()?;
    let from = crate::ir::types::StaticTensor::of(input.r#type())?;
    let to = crate::ir::types::StaticTensor::of(operand.r#type())?;
    if from.shape.len() != perm.len() || to.shape.len() != perm.len() {
        return None;
    }
    let permuted: Vec<i64> = perm.iter().map(|&p| from.shape[p]).collect();
    let moved: Vec<usize> = perm
        .iter()
        .copied()
        .filter(|&p| from.shape[p] != 1)
        .collect();
    (permuted == to.shape && moved.windows(2).all(|w| w[0] < w[1])).then_some(input)
}

/// The one permutation of the transposes among `op`'s data operands of
/// rank `rank` (`Some(None)` when there is none, `None` when two differ).
fn operand_perm(op: OperationRef, rank: usize) -> Option<Option<Vec<usize>>> {
    let mut perm: Option<Vec<usize>> = None;
    for operand in op.operands() {
        if rank_of(operand) != Some(rank) {
            continue;
        }
        if let Some(p) = defining_op(operand).and_then(transpose_perm) {
            if perm.as_ref().is_some_and(|q| *q != p) {
                return None;
            }
            perm = Some(p);
        }
    }
    Some(perm)
}

/// The permutation `op` could be computed under: `Some(P)` when `op` is
/// layout-agnostic and every data operand is a transpose by `P` or a
/// constant (for slices and pads: the sliced or padded operand is a
/// transpose by `P`). This is the structural half of the sinking rule.
fn sink_perm(op: OperationRef) -> Option<Vec<usize>> {
    let name = op_name(&op);
    if op.result_count() != 1 {
        return None;
    }
    if matches!(name.as_str(), "tosa.slice" | "tosa.pad") {
        return transpose_perm(defining_op(op.operand(0).ok()?)?);
    }
    if !(ELEMENTWISE.contains(&name.as_str()) || AXIS_OPS.contains(&name.as_str())) {
        return None;
    }
    let rank = rank_of(op.result(0).ok()?.into()).filter(|&r| r >= 2)?;
    let perm = operand_perm(op, rank)??;
    for operand in op.operands() {
        if rank_of(operand) != Some(rank)
            || defining_op(operand).and_then(transpose_perm).is_some()
            || ConstTensor::is_constant(operand)
            || reshape_as_transpose(operand, &perm).is_some()
        {
            continue;
        }
        return None;
    }
    Some(perm)
}

/// Whether the transpose producing `operand` dies once its users are
/// rewritten: every user can be computed under the same permutation.
fn transpose_dies(operand: Value, perm: &[usize]) -> bool {
    users(operand)
        .iter()
        .all(|u| sink_perm(*u).is_some_and(|p| p == perm))
}

/// Moves the transposes feeding `op` below it when every data operand is
/// a transpose by one permutation or a constant, and when this does not
/// add a transpose: some transposed operand must die (all its users can
/// be computed under the same permutation, `op` among them) or every user
/// of `op` must be a transpose (which then cancels).
/// Returns whether it rewrote.
pub fn sink_transposes<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    sink(context, op, false, None)
}

/// [`sink_transposes`], or with `force` without its no-more-transposes
/// rule (for the members of a cluster that pays off as a whole; `cluster`
/// is the cluster's permutation, for a member whose only data operands
/// are unit-dimension reshapes).
fn sink<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    force: bool,
    cluster: Option<&[usize]>,
) -> Result<bool, PassError<'c>> {
    let name = op_name(&op);
    if matches!(name.as_str(), "tosa.slice" | "tosa.pad") {
        return sink_through_window(context, op, force);
    }
    if name == "tosa.reshape" {
        return sink_through_reshape(context, op);
    }
    let axis_op = AXIS_OPS.contains(&name.as_str());
    if !(ELEMENTWISE.contains(&name.as_str()) || axis_op) || op.result_count() != 1 {
        return Ok(false);
    }
    let result = result_of(op)?;
    let Some(rank) = rank_of(result).filter(|&r| r >= 2) else {
        return Ok(false);
    };
    let Some(perm) = operand_perm(op, rank)
        .flatten()
        .or_else(|| cluster.map(<[usize]>::to_vec))
    else {
        return Ok(false);
    };
    let mut plan = Vec::new();
    let mut frees_a_transpose = false;
    for index in 0..op.operand_count() {
        let operand = op
            .operand(index)
            .map_err(|e| PassError::at(op.location(), e.to_string()))?;
        if rank_of(operand) != Some(rank) {
            plan.push(Operand::Keep);
            continue;
        }
        if let Some(p) = defining_op(operand).and_then(transpose_perm) {
            if p != perm {
                return Ok(false);
            }
            frees_a_transpose |= transpose_dies(operand, &p);
            plan.push(Operand::Untransposed);
        } else if ConstTensor::is_constant(operand) {
            plan.push(Operand::Constant);
        } else if let Some(input) = reshape_as_transpose(operand, &perm) {
            plan.push(Operand::Unreshaped(input));
        } else {
            return Ok(false);
        }
    }
    let result_users = users(result);
    let feeds_transposes =
        !result_users.is_empty() && result_users.iter().all(|u| transpose_perm(*u).is_some());
    if !(force || frees_a_transpose || feeds_transposes) {
        return Ok(false);
    }
    let back = inverse(&perm);
    let builder = TosaBuilder::before(context, op)?;
    let mut operands = Vec::with_capacity(plan.len());
    for (index, action) in plan.iter().enumerate() {
        let operand: Value = op
            .operand(index)
            .map_err(|e| PassError::at(op.location(), e.to_string()))?;
        operands.push(match action {
            Operand::Keep => operand,
            Operand::Untransposed => {
                let producer = defining_op(operand).expect("checked above");
                producer
                    .operand(0)
                    .map_err(|e| PassError::at(op.location(), e.to_string()))?
            }
            Operand::Constant => builder.transpose(operand, &back)?,
            Operand::Unreshaped(input) => *input,
        });
    }
    // The same op on the untransposed values: a clone with new operands,
    // result type and axis.
    let clone = unsafe {
        melior::ir::operation::Operation::from_raw(mlir_sys::mlirOperationClone(op.to_raw()))
    };
    let block = op
        .block()
        .ok_or_else(|| PassError::at(op.location(), "op outside a block"))?;
    let clone = block.insert_operation_before(op, clone);
    let mut clone_mut = unsafe { OperationRefMut::from_raw(clone.to_raw()) };
    for (index, operand) in operands.into_iter().enumerate() {
        clone_mut.set_operand(index, operand);
    }
    let untransposed = crate::ir::types::permuted_tensor_type(result.r#type(), &back)
        .ok_or_else(|| PassError::at(op.location(), "unranked result"))?;
    let new_result = result_of(clone)?;
    unsafe { mlir_sys::mlirValueSetType(new_result.to_raw(), untransposed.to_raw()) };
    if axis_op {
        let axis = op
            .attribute("axis")
            .ok()
            .and_then(crate::ir::util::integer_value)
            .and_then(|a| usize::try_from(a).ok())
            .filter(|&a| a < rank)
            .ok_or_else(|| PassError::at(op.location(), format!("{name} without a valid axis")))?;
        let i32_type: Type = melior::ir::r#type::IntegerType::new(context, 32).into();
        clone_mut.set_attribute(
            "axis",
            IntegerAttribute::new(i32_type, perm[axis] as i64).into(),
        );
    }
    let transposed = builder.transpose(new_result, &perm)?;
    replace_and_erase(op, result, transposed);
    Ok(true)
}

/// `tosa.slice` / `tosa.pad` of a transpose: the same window on the
/// untransposed value, its start/size (or padding pairs) permuted, then
/// the transpose. Applies under the same no-more-transposes rule as
/// [`sink_transposes`].
fn sink_through_window<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    force: bool,
) -> Result<bool, PassError<'c>> {
    let location = op.location();
    let name = op_name(&op);
    let Some((operand, producer, perm)) = transposed_operand(op)? else {
        return Ok(false);
    };
    let result = result_of(op)?;
    let result_users = users(result);
    let frees = transpose_dies(operand, &perm);
    let feeds =
        !result_users.is_empty() && result_users.iter().all(|u| transpose_perm(*u).is_some());
    if !(force || frees || feeds) {
        return Ok(false);
    }
    let rank = perm.len();
    let builder = TosaBuilder::before(context, op)?;
    let source: Value = producer
        .operand(0)
        .map_err(|e| PassError::at(location, e.to_string()))?;
    let mut operands = vec![source];
    if name == "tosa.slice" {
        for index in [1, 2] {
            let Some(values) = crate::patterns::fold_constants::shape_operand(op, index) else {
                return Ok(false);
            };
            if values.len() != rank {
                return Ok(false);
            }
            let mut moved = vec![0; rank];
            for (i, &p) in perm.iter().enumerate() {
                moved[p] = values[i];
            }
            operands.push(builder.const_shape(&moved)?);
        }
    } else {
        let Some(values) = crate::patterns::fold_constants::shape_operand(op, 1) else {
            return Ok(false);
        };
        if values.len() != 2 * rank {
            return Ok(false);
        }
        let mut moved = vec![0; 2 * rank];
        for (i, &p) in perm.iter().enumerate() {
            moved[2 * p] = values[2 * i];
            moved[2 * p + 1] = values[2 * i + 1];
        }
        operands.push(builder.const_shape(&moved)?);
        for index in 2..op.operand_count() {
            operands.push(
                op.operand(index)
                    .map_err(|e| PassError::at(location, e.to_string()))?,
            );
        }
    }
    let back = inverse(&perm);
    let untransposed = crate::ir::types::permuted_tensor_type(result.r#type(), &back)
        .ok_or_else(|| PassError::at(location, "unranked window"))?;
    let window = builder.insert(&name, &operands, untransposed, &[])?;
    let transposed = builder.transpose(window, &perm)?;
    replace_and_erase(op, result, transposed);
    Ok(true)
}
