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
//! Every member gets `tcc.kernel = "<name>"`; the group's root (the
//! matmul/conv/reduction, or the op itself) also gets `tcc.kind`.

use melior::Context;
use melior::ir::attribute::StringAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{BlockLike, TypeLike, Value, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::config::KernelKind;
use crate::ir::affine::{has_reduction_iterator, indexing_maps};
use crate::ir::attr_names;
use crate::ir::conv::is_linalg_or_conv;
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

fn set_kernel(context: &melior::Context, op: OperationRef, name: &str) {
    set_discardable_attribute(
        op,
        attr_names::KERNEL,
        StringAttribute::new(context, name).into(),
    );
}

impl TccPass for FormDispatches {
    const ARGUMENT: &'static str = "tcc-form-dispatches";
    const SUMMARY: &'static str =
        "Group linalg ops into kernels (fill+reduction, matmul/conv+epilogue) and name them";
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
                // An elementwise epilogue of a matmul, convolution or
                // reduction (a mean's division, a norm's square root).
                if (is_contraction_or_conv(&name)
                    || is_conv_op(op)
                    || kind_of(op) == KernelKind::Reduction)
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
                for member in &members {
                    set_kernel(context, *member, &kernel);
                    grouped.push(*member);
                }
                set_discardable_attribute(
                    op,
                    attr_names::KIND,
                    StringAttribute::new(context, kind_of(op).name()).into(),
                );
            }
        }
        Ok(())
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
