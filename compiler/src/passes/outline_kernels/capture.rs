//! Capture for `tcc-outline-kernels`: what a kernel group uses from
//! outside it. Buffers become the kernel's arguments (through the views
//! of them, which are rebuilt inside); host `index` values (a view's
//! dynamic sizes, a symbolic extent the ops read) arguments after them;
//! scalar constants are cloned in.

use std::collections::HashMap;

use melior::ir::operation::{OperationLike, OperationRef, WalkOrder, WalkResult};
use melior::ir::{Block, BlockLike, Location, RegionLike, TypeLike, Value, ValueLike};

use super::grouping::VIEW_OPS;
use crate::ir::util::{collect_ops, op_name};
use crate::passes::pass::PassError;

/// Follows view ops back to the buffer they view. Returns the root and the
/// view ops from the root outwards.
pub(super) fn view_chain<'c>(value: Value<'c, 'c>) -> (Value<'c, 'c>, Vec<OperationRef<'c, 'c>>) {
    let mut chain = Vec::new();
    let mut current = value;
    while let Some(op) = crate::ir::util::defining_op(current)
        && VIEW_OPS.contains(&op_name(&op).as_str())
    {
        chain.push(op);
        match op.operand(0) {
            Ok(source) => current = source,
            Err(_) => break,
        }
    }
    chain.reverse();
    (current, chain)
}

pub(super) fn raw_key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// Clones `op` before the end of `block`, rewriting operands through `map`,
/// and records the clone's results in `map`.
pub(super) fn clone_into<'c>(
    block: &Block<'c>,
    op: OperationRef<'c, 'c>,
    map: &mut HashMap<usize, mlir_sys::MlirValue>,
) {
    let raw_clone = unsafe { mlir_sys::mlirOperationClone(op.to_raw()) };
    let clone = unsafe { melior::ir::operation::Operation::from_raw(raw_clone) };
    let clone = block.append_operation(clone);
    clone.walk(WalkOrder::PreOrder, |nested| {
        let raw = nested.to_raw();
        let count = unsafe { mlir_sys::mlirOperationGetNumOperands(raw) };
        for index in 0..count {
            let operand = unsafe { mlir_sys::mlirOperationGetOperand(raw, index) };
            if let Some(replacement) = map.get(&(operand.ptr as usize)) {
                unsafe { mlir_sys::mlirOperationSetOperand(raw, index, *replacement) };
            }
        }
        WalkResult::Advance
    });
    for index in 0..op.result_count() {
        if let (Ok(old), Ok(new)) = (op.result(index), clone.result(index)) {
            map.insert(raw_key(old.into()), Value::from(new).to_raw());
        }
    }
}

/// Values used by the group's ops (nested ops included) that are defined
/// outside the group, in first-use order.
fn captured_values<'c>(members: &[OperationRef<'c, 'c>]) -> Vec<Value<'c, 'c>> {
    let mut inside: Vec<usize> = Vec::new();
    for member in members {
        for op in collect_ops(*member) {
            for index in 0..op.result_count() {
                if let Ok(result) = op.result(index) {
                    inside.push(raw_key(result.into()));
                }
            }
            for region in op.regions() {
                let mut block = region.first_block();
                while let Some(b) = block {
                    for index in 0..b.argument_count() {
                        if let Ok(argument) = b.argument(index) {
                            inside.push(raw_key(argument.into()));
                        }
                    }
                    block = b.next_in_region();
                }
            }
        }
    }
    let mut captured: Vec<Value> = Vec::new();
    for member in members {
        for op in collect_ops(*member) {
            for operand in op.operands() {
                let key = raw_key(operand);
                if !inside.contains(&key) && !captured.iter().any(|c| raw_key(*c) == key) {
                    captured.push(operand);
                }
            }
        }
    }
    captured
}

/// What a kernel group captures: the root buffers (its arguments, in
/// first-use order), the view ops to rebuild on them (in program order)
/// and the scalar constants to clone.
pub(super) struct Captures<'c> {
    pub(super) roots: Vec<Value<'c, 'c>>,
    pub(super) views: Vec<OperationRef<'c, 'c>>,
    pub(super) constants: Vec<OperationRef<'c, 'c>>,
}

/// The captures of a group named `name`; fails on a captured value that
/// is neither a buffer, an index nor a constant.
pub(super) fn captures<'c>(
    members: &[OperationRef<'c, 'c>],
    name: &str,
    location: Location<'c>,
) -> Result<Captures<'c>, PassError<'c>> {
    let mut roots: Vec<Value> = Vec::new();
    let mut views: Vec<OperationRef> = Vec::new();
    let mut constants: Vec<OperationRef> = Vec::new();
    // Host index values the kernel's ops read themselves (a symbolic
    // extent a gather wraps its indices with): `index` arguments after
    // the buffers, as a view's sizes are.
    let mut extents: Vec<Value> = Vec::new();
    for value in captured_values(members) {
        if value.r#type().is_mem_ref() {
            let (root_value, chain) = view_chain(value);
            if !roots.iter().any(|r| raw_key(*r) == raw_key(root_value)) {
                roots.push(root_value);
            }
            for view in chain {
                if !views.iter().any(|v| v.to_raw().ptr == view.to_raw().ptr) {
                    views.push(view);
                }
            }
        } else if let Some(definition) = crate::ir::util::defining_op(value)
            && op_name(&definition) == "arith.constant"
        {
            constants.push(definition);
        } else if value.r#type().is_index() {
            extents.push(value);
        } else {
            return Err(PassError::at(
                location,
                format!(
                    "kernel {name} uses a value that is neither a buffer, an index nor a constant: {value}"
                ),
            ));
        }
    }
    // A view's dynamic sizes (a symbolic batch, issue 33: `output_shape`
    // of an expand_shape) are host values: the kernel takes each as an
    // `index` argument after the buffers; constants are cloned.
    for view in &views {
        for operand in view.operands() {
            if operand.r#type().is_mem_ref() {
                continue;
            }
            if let Some(definition) = crate::ir::util::defining_op(operand)
                && op_name(&definition) == "arith.constant"
            {
                if !constants
                    .iter()
                    .any(|c| c.to_raw().ptr == definition.to_raw().ptr)
                {
                    constants.push(definition);
                }
            } else if operand.r#type().is_index() {
                if !roots.iter().any(|r| raw_key(*r) == raw_key(operand)) {
                    roots.push(operand);
                }
            } else {
                return Err(PassError::at(
                    location,
                    format!(
                        "kernel {name} rebuilds a view of a value that is neither an index nor a constant: {operand}"
                    ),
                ));
            }
        }
    }
    for extent in extents {
        if !roots.iter().any(|r| raw_key(*r) == raw_key(extent)) {
            roots.push(extent);
        }
    }
    // View ops must be rebuilt in program order.
    views.sort_by(|a, b| {
        if a.is_before_in_block(*b) {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    Ok(Captures {
        roots,
        views,
        constants,
    })
}

/// Maps every captured value into a new kernel body whose arguments are
/// `roots`: constants and views cloned in, roots to the arguments.
pub(super) fn clone_captures<'c>(
    body: &Block<'c>,
    captures: &Captures<'c>,
) -> HashMap<usize, mlir_sys::MlirValue> {
    let mut map: HashMap<usize, mlir_sys::MlirValue> = HashMap::new();
    for (index, root_value) in captures.roots.iter().enumerate() {
        let argument: Value = body.argument(index).expect("argument exists").into();
        map.insert(raw_key(*root_value), argument.to_raw());
    }
    for op in captures.constants.iter().chain(captures.views.iter()) {
        clone_into(body, *op, &mut map);
    }
    map
}
