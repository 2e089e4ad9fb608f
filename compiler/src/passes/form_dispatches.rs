//! `tcc-form-dispatches`: groups the linalg ops of each function into
//! kernels (one kernel per group) and names them after what they fuse.
//!
//! Runs on tensors after elementwise fusion, so a chain of elementwise ops
//! is already one `linalg.generic`. On top of that it groups:
//! - a `linalg.fill` whose only use is the init of a reduction (matmul,
//!   convolution, pooling, reduce) with that reduction, so the kernel starts
//!   its accumulator from the fill value instead of a separate launch;
//! - an elementwise `linalg.generic` that is the only user of a matmul,
//!   convolution (named, or a `tcc.conv` from
//!   `tcc-fold-conv-inputs`) or reduction result, with the same iteration
//!   space, as that kernel's epilogue (bias-add, activation, a mean's
//!   scaling). Every nest of a kernel maps its output elements onto
//!   work-items the same way, so the epilogue reads what its own
//!   work-item wrote.
//!
//! Each group moves into a `tcc.dispatch "<name>"` (the kernel boundary,
//! `ir::dispatch`) at the place of its last member, yielding the results
//! that ops outside it read; the group's root (the matmul/conv/reduction,
//! or the op itself) gets `tcc.kind`.

use melior::Context;
use melior::ir::attribute::StringAttribute;
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::{Block, BlockLike, Identifier, Region, RegionLike, TypeLike, Value, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::config::KernelKind;
use crate::ir::affine::{has_reduction_iterator, indexing_maps};
use crate::ir::attr_names;
use crate::ir::conv::is_linalg_or_conv;
use crate::ir::dispatch;
pub use crate::ir::operand::init_operands;
use crate::ir::util::{
    body_ops, op_name, ops_named, same_op, set_discardable_attribute, use_count, users,
};
use crate::patterns::form_dispatches::{is_contraction_or_conv, kernel_name, op_parts};
pub use crate::patterns::form_dispatches::{is_conv_op, kind_of};

pub struct FormDispatches;

/// Ops that run on the device: linalg ops and tcc's destination-style
/// ops (convolution, row layer norm, flash attention).
fn is_dispatchable(op: &OperationRef) -> bool {
    let name = op_name(op);
    is_linalg_or_conv(&name) || name == "tcc.layer_norm_rows" || name == "tcc.flash_attention"
}

fn is_all_parallel_generic(op: OperationRef) -> bool {
    op_name(&op) == "linalg.generic" && !has_reduction_iterator(op)
}

impl TccPass for FormDispatches {
    const ARGUMENT: &'static str = "tcc-form-dispatches";
    const SUMMARY: &'static str = "Group linalg ops into kernels (fill+reduction, matmul/conv+epilogue), name them, and move each into a tcc.dispatch region op";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let mut index = 0;
        let functions: Vec<_> = ops_named(module, "func.func");
        for function in &functions {
            unshare_fills(*function);
        }
        for function in functions {
            let ops: Vec<_> = body_ops(function)
                .into_iter()
                .filter(|op| is_dispatchable(op))
                .collect();
            let mut grouped: Vec<OperationRef> = Vec::new();
            let mut kernels: Vec<(String, Vec<OperationRef>)> = Vec::new();
            for &op in &ops {
                if grouped.iter().any(|g| same_op(g, &op)) {
                    continue;
                }
                let name = op_name(&op);
                // A fill (or an all-parallel generic such as a bias
                // broadcast) feeding exactly one reduction as its init joins
                // that reduction.
                if name == "linalg.fill" || is_all_parallel_generic(op) {
                    let result: Value = match op.result(0) {
                        Ok(r) => r.into(),
                        Err(_) => continue,
                    };
                    if use_count(result) == 1
                        && let Some(user) = users(result).into_iter().next()
                        && is_linalg_or_conv(&op_name(&user))
                        && kind_of(user) != KernelKind::Elementwise
                        && init_operands(user).contains(&result)
                    {
                        continue; // handled with its user
                    }
                }
                let mut members = Vec::new();
                // The fills initialising this op's outputs.
                for init in init_operands(op) {
                    if let Some(fill) = crate::ir::util::defining_op(init)
                        && (op_name(&fill) == "linalg.fill" || is_all_parallel_generic(fill))
                        && use_count(init) == 1
                        && kind_of(op) != KernelKind::Elementwise
                    {
                        members.push(fill);
                    }
                }
                members.push(op);
                let mut parts = op_parts(op);
                // An elementwise epilogue of a matmul, convolution (a
                // grouped one too: a generic of kind convolution) or
                // reduction (a mean's division, a norm's square root).
                if (is_contraction_or_conv(&name)
                    || is_conv_op(op)
                    || matches!(kind_of(op), KernelKind::Reduction | KernelKind::Convolution))
                    && op.result_count() == 1
                {
                    let result: Value = op
                        .result(0)
                        .map_err(|e| PassError::at(op.location(), e.to_string()))?
                        .into();
                    if use_count(result) == 1
                        && let Some(user) = users(result).into_iter().next()
                        && is_all_parallel_generic(user)
                        && user.result_count() == 1
                        && user.result(0).is_ok_and(|r| {
                            r.r#type() == result.r#type() || integer_accumulator(result)
                        })
                        && is_identity_input(user, result)
                    {
                        members.push(user);
                        parts.extend(op_parts(user));
                    }
                }
                let kernel = kernel_name(&parts, index);
                index += 1;
                grouped.extend(members.iter().copied());
                set_discardable_attribute(
                    op,
                    attr_names::KIND,
                    StringAttribute::new(context, kind_of(op).name()).into(),
                );
                kernels.push((kernel, members));
            }
            // After every group is known: wrapping changes the users the
            // grouping reads. An op two groups claim (an epilogue that is
            // also the next reduction's initial value) runs in the later.
            let mut owner: std::collections::HashMap<usize, usize> = Default::default();
            for (index, (_, members)) in kernels.iter().enumerate() {
                for member in members {
                    owner.insert(member.to_raw().ptr as usize, index);
                }
            }
            let kernels: Vec<(String, Vec<OperationRef>)> = kernels
                .into_iter()
                .enumerate()
                .map(|(index, (kernel, members))| {
                    let own = members
                        .into_iter()
                        .filter(|member| owner.get(&(member.to_raw().ptr as usize)) == Some(&index))
                        .collect();
                    (kernel, own)
                })
                .collect();
            for (kernel, members) in kernels {
                wrap_kernel(context, function, &kernel, &members)?;
            }
        }
        Ok(())
    }
}

/// Moves `members` (ops of `function`'s body, one kernel) into a new
/// `tcc.dispatch "<kernel>"` placed where the last of them was; the
/// results that ops outside the kernel read become the dispatch's.
fn wrap_kernel<'c>(
    context: &'c Context,
    function: OperationRef<'c, 'c>,
    kernel: &str,
    members: &[OperationRef<'c, 'c>],
) -> Result<(), PassError<'c>> {
    let mut members = members.to_vec();
    members.sort_by(|a, b| {
        if same_op(a, b) {
            std::cmp::Ordering::Equal
        } else if unsafe { mlir_sys::mlirOperationIsBeforeInBlock(a.to_raw(), b.to_raw()) } {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    let Some(&last) = members.last() else {
        return Ok(());
    };
    let is_member = |op: OperationRef| {
        let top = top_level_ancestor(function, op);
        members.iter().any(|m| top.is_some_and(|t| same_op(m, &t)))
    };
    // The results read outside the kernel, which must all be read after
    // its last op (where the kernel runs).
    let mut yielded: Vec<Value<'c, 'c>> = Vec::new();
    for member in &members {
        for result in member.results() {
            let value: Value = result.into();
            let outside: Vec<_> = users(value)
                .into_iter()
                .filter(|u| !is_member(*u))
                .collect();
            if outside.is_empty() {
                continue;
            }
            if let Some(early) = outside.iter().find(|u| {
                top_level_ancestor(function, **u).is_some_and(|t| unsafe {
                    mlir_sys::mlirOperationIsBeforeInBlock(t.to_raw(), last.to_raw())
                })
            }) {
                return Err(PassError::at(
                    early.location(),
                    format!(
                        "reads a result of kernel '{kernel}' before the kernel's last op: \
                         the kernel cannot run as one launch here"
                    ),
                ));
            }
            yielded.push(value);
        }
    }
    let location = members
        .iter()
        .find(|m| m.attribute(attr_names::KIND).is_ok())
        .unwrap_or(&last)
        .location();
    let block = Block::new(&[]);
    let region = Region::new();
    let body = region.append_block(block);
    let types: Vec<_> = yielded.iter().map(|v| v.r#type()).collect();
    let dispatch = OperationBuilder::new(dispatch::OP, location)
        .add_attributes(&[(
            Identifier::new(context, dispatch::KERNEL_NAME),
            StringAttribute::new(context, kernel).into(),
        )])
        .add_results(&types)
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, e.to_string()))?;
    let parent = last
        .block()
        .ok_or_else(|| PassError::at(last.location(), "a kernel op outside a block"))?;
    let dispatch = parent.insert_operation_before(last, dispatch);
    for member in &members {
        unsafe {
            mlir_sys::mlirOperationRemoveFromParent(member.to_raw());
            mlir_sys::mlirBlockAppendOwnedOperation(body.to_raw(), member.to_raw());
        }
    }
    body.append_operation(
        OperationBuilder::new(dispatch::YIELD, location)
            .add_operands(&yielded)
            .build()
            .map_err(|e| PassError::at(location, e.to_string()))?,
    );
    for (index, value) in yielded.iter().enumerate() {
        let result: Value = dispatch
            .result(index)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .into();
        replace_uses_outside(*value, result, dispatch);
    }
    Ok(())
}

/// The ancestor of `op` (or `op`) that sits directly in `function`'s body.
fn top_level_ancestor<'c>(
    function: OperationRef<'c, 'c>,
    op: OperationRef<'c, 'c>,
) -> Option<OperationRef<'c, 'c>> {
    let mut current = op;
    loop {
        let parent = current.parent_operation()?;
        if same_op(&parent, &function) {
            return Some(current);
        }
        current = unsafe { OperationRef::from_raw(parent.to_raw()) };
    }
}

/// Replaces the uses of `value` by `with` wherever the user is not nested
/// in `scope`.
fn replace_uses_outside<'c>(
    value: Value<'c, 'c>,
    with: Value<'c, 'c>,
    scope: OperationRef<'c, 'c>,
) {
    let mut uses = Vec::new();
    let mut use_ = unsafe { mlir_sys::mlirValueGetFirstUse(value.to_raw()) };
    while !use_.ptr.is_null() {
        let owner = unsafe { mlir_sys::mlirOpOperandGetOwner(use_) };
        let number = unsafe { mlir_sys::mlirOpOperandGetOperandNumber(use_) };
        uses.push((owner, number));
        use_ = unsafe { mlir_sys::mlirOpOperandGetNextUse(use_) };
    }
    for (owner, number) in uses {
        let mut inside = false;
        let mut current = owner;
        while !current.ptr.is_null() {
            if current.ptr == scope.to_raw().ptr {
                inside = true;
                break;
            }
            current = unsafe { mlir_sys::mlirOperationGetParentOperation(current) };
        }
        if !inside {
            unsafe { mlir_sys::mlirOperationSetOperand(owner, number as isize, with.to_raw()) };
        }
    }
}

/// Whether `op` initialises an accumulator from constants only: a
/// `linalg.fill`, or an all-parallel generic (a bias broadcast) whose
/// inputs are all constants.
fn is_constant_init(op: OperationRef) -> bool {
    match op_name(&op).as_str() {
        "linalg.fill" => true,
        "linalg.generic" if is_all_parallel_generic(op) => {
            let inits = init_operands(op);
            (0..op.operand_count())
                .filter_map(|i| op.operand(i).ok())
                .filter(|operand| !inits.contains(operand))
                .all(|operand| {
                    crate::ir::util::defining_op(operand)
                        .is_some_and(|p| op_name(&p) == "arith.constant")
                })
        }
        _ => false,
    }
}

/// Gives each reduction its own copy of a constant initialiser (a
/// `linalg.fill` or a bias broadcast) that CSE merged between several
/// reductions, placed right before it, so that every reduction kernel can
/// start its accumulator itself instead of copying from a shared
/// initialised buffer (and `tcc-concat-in-place` can point each copy at
/// its reduction's slot of a concat buffer). The shared one is erased.
pub(crate) fn unshare_fills(function: OperationRef) {
    let fills: Vec<_> = body_ops(function)
        .into_iter()
        .filter(|op| is_constant_init(*op))
        .collect();
    for fill in fills {
        let Ok(result) = fill.result(0) else { continue };
        let result: Value = result.into();
        let consumers = users(result);
        if consumers.len() < 2
            || !consumers.iter().all(|u| {
                kind_of(*u) != KernelKind::Elementwise && init_operands(*u).contains(&result)
            })
        {
            continue;
        }
        for consumer in consumers.iter() {
            let clone = unsafe { mlir_sys::mlirOperationClone(fill.to_raw()) };
            let Some(block) = consumer.block() else {
                continue;
            };
            let clone = block.insert_operation_before(*consumer, unsafe {
                melior::ir::operation::Operation::from_raw(clone)
            });
            let Ok(copy) = clone.result(0) else { continue };
            let mut consumer = unsafe { OperationRefMut::from_raw(consumer.to_raw()) };
            consumer.replace_uses_of_with(result, copy.into());
        }
        if use_count(result) == 0 {
            crate::ir::util::erase_op(fill);
        }
    }
}

/// Whether a contraction sums in integers (int8 products into int32,
/// `tcc-quantize-int8`): its epilogue (dequantize, activation, the next
/// quantize) changes the element type, and joins its loop-nest kernel all
/// the same (the GEMM template, which writes the epilogue's result in
/// place of the sum, takes only f32 contractions).
fn integer_accumulator(result: Value) -> bool {
    crate::ir::types::StaticTensor::of(result.r#type())
        .is_some_and(|t| t.element.is_integer() && !t.element.is_index())
}

/// Whether `generic` reads `value` through an identity indexing map (so
/// the epilogue reads the element its own work-item produced).
fn is_identity_input(generic: OperationRef, value: Value) -> bool {
    let Some(maps) = indexing_maps(generic) else {
        return false;
    };
    (0..generic.operand_count())
        .find(|&index| generic.operand(index).is_ok_and(|operand| operand == value))
        .and_then(|index| maps.get(index))
        .is_some_and(|map| map.is_identity())
}
