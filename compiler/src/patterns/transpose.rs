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
//!
//! Transposes meeting after sinking (`T^-1(T(x))`) cancel by TOSA's own
//! canonicalization.

use melior::Context;
use melior::ir::attribute::{AttributeLike, IntegerAttribute};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{BlockLike, Type, TypeLike, Value, ValueLike};

use crate::ir::constant::ConstTensor;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, op_name, replace_and_erase, same_op, users};
use crate::passes::PassError;

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

fn rank_of(value: Value) -> Option<usize> {
    StaticTensor::of(value.r#type()).map(|t| t.rank())
}

fn result_of<'c>(op: OperationRef<'c, 'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
    op.result(0)
        .map(Into::into)
        .map_err(|e| PassError::at(op.location(), e.to_string()))
}

/// What sinking would do with each operand of an op.
enum Operand {
    /// Not a tensor of the data (shift, zero point): kept.
    Keep,
    /// A transpose's input, used instead of the transpose.
    Untransposed,
    /// A constant, transposed back at compile time.
    Constant,
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
    let mut perm: Option<Vec<usize>> = None;
    for index in 0..op.operand_count() {
        let operand = op.operand(index).ok()?;
        if rank_of(operand) != Some(rank) {
            continue;
        }
        if let Some(p) = defining_op(operand).and_then(transpose_perm) {
            if perm.as_ref().is_some_and(|q| *q != p) {
                return None;
            }
            perm = Some(p);
        } else if !ConstTensor::is_constant(operand) {
            return None;
        }
    }
    perm
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
    sink(context, op, false)
}

/// [`sink_transposes`], or with `force` without its no-more-transposes
/// rule (for the members of a cluster that pays off as a whole).
fn sink<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    force: bool,
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
    let mut perm: Option<Vec<usize>> = None;
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
        if let Some(producer) = defining_op(operand)
            && let Some(p) = transpose_perm(producer)
        {
            if perm.as_ref().is_some_and(|q| *q != p) {
                return Ok(false);
            }
            frees_a_transpose |= transpose_dies(operand, &p);
            perm = Some(p);
            plan.push(Operand::Untransposed);
        } else if ConstTensor::is_constant(operand) {
            plan.push(Operand::Constant);
        } else {
            return Ok(false);
        }
    }
    let Some(perm) = perm else { return Ok(false) };
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
    let tensor = StaticTensor::of(result.r#type()).expect("ranked result");
    let untransposed = StaticTensor {
        shape: back.iter().map(|&b| tensor.shape[b]).collect(),
        element: tensor.element,
    }
    .to_type();
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
    let operand: Value = op
        .operand(0)
        .map_err(|e| PassError::at(location, e.to_string()))?;
    let Some(producer) = defining_op(operand) else {
        return Ok(false);
    };
    let Some(perm) = transpose_perm(producer) else {
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
            let Some(values) = crate::patterns::constant_fold::shape_operand(op, index) else {
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
        let Some(values) = crate::patterns::constant_fold::shape_operand(op, 1) else {
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
    let tensor = StaticTensor::of(result.r#type())
        .ok_or_else(|| PassError::at(location, "unranked window"))?;
    let back = inverse(&perm);
    let untransposed = StaticTensor {
        shape: back.iter().map(|&b| tensor.shape[b]).collect(),
        element: tensor.element,
    }
    .to_type();
    let window = builder.insert(&name, &operands, untransposed, &[])?;
    let transposed = builder.transpose(window, &perm)?;
    replace_and_erase(op, result, transposed);
    Ok(true)
}

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
/// must be a constant or a transpose by `P` (anything else would need a
/// new transpose: the cluster is left alone). Sinking the cluster removes
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
            if ConstTensor::is_constant(operand) {
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
        if !sink(context, member, true)? {
            return Err(PassError::at(
                member.location(),
                "internal error: a layout cluster member could not be sunk",
            ));
        }
    }
    Ok(true)
}

/// `reshape(transpose(x, P), R)` where the reshape only merges dimensions
/// that lie next to each other, in order, in `x` (and adds or drops unit
/// dimensions): the same merge on `x` first, then a transpose of the
/// merged groups, then unit dimensions. A CNN's global pooling written as
/// transpose-to-NCHW, reshape to `[N, C, H*W]`, reduce is the case: after
/// this the reduction sees the channels-last data directly. Applies when
/// the reshape is the transpose's only user. Returns whether it rewrote.
fn sink_through_reshape<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let location = op.location();
    let operand: Value = op
        .operand(0)
        .map_err(|e| PassError::at(location, e.to_string()))?;
    let Some(producer) = defining_op(operand) else {
        return Ok(false);
    };
    let Some(perm) = transpose_perm(producer) else {
        return Ok(false);
    };
    if users(operand).len() != 1 {
        return Ok(false);
    }
    let source: Value = producer
        .operand(0)
        .map_err(|e| PassError::at(location, e.to_string()))?;
    let (Some(x), Some(r)) = (
        StaticTensor::of(source.r#type()),
        StaticTensor::of(result_of(op)?.r#type()),
    ) else {
        return Ok(false);
    };
    // The transpose's non-unit dimensions, as source dimensions in output
    // order, grouped into the reshape's non-unit dimensions.
    let moved: Vec<usize> = perm.iter().copied().filter(|&p| x.shape[p] != 1).collect();
    let targets: Vec<i64> = r.shape.iter().copied().filter(|&d| d != 1).collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index = 0;
    for &target in &targets {
        let mut group = Vec::new();
        let mut product = 1i64;
        while product < target && index < moved.len() {
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
        merged[slots[k]] = groups[g].iter().map(|&d| x.shape[d]).product();
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
    if let Some(value) = crate::patterns::constant_fold::evaluate(op) {
        crate::patterns::constant_fold::replace_with_constant(context, op, &value)?;
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
