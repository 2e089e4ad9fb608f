//! The kernel boundary, `tcc.dispatch` (docs/dialect.md): a region op
//! holding the ops of one kernel from `tcc-form-dispatches` until
//! `tcc-outline-kernels`. These helpers give the passes between them the
//! views they need: which kernel an op belongs to and a kernel's ops.

use melior::ir::ValueLike;
use melior::ir::operation::{OperationLike, OperationRef};

use super::util::{body_ops, op_name, string_value};

/// The kernel boundary op.
pub const OP: &str = "tcc.dispatch";
/// Its terminator.
pub const YIELD: &str = "tcc.yield";
/// The attribute naming the kernel (a C identifier).
pub const KERNEL_NAME: &str = "kernel";

/// Whether `op` is a `tcc.dispatch`.
pub fn is_dispatch(op: &OperationRef) -> bool {
    op_name(op) == OP
}

/// The kernel name of a `tcc.dispatch`.
pub fn name_of(dispatch: OperationRef) -> Option<String> {
    dispatch.attribute(KERNEL_NAME).ok().and_then(string_value)
}

/// The `tcc.dispatch` directly holding `op`, if any.
pub fn enclosing<'c>(op: OperationRef<'c, 'c>) -> Option<OperationRef<'c, 'c>> {
    let parent = op.parent_operation()?;
    let parent = unsafe { OperationRef::from_raw(parent.to_raw()) };
    is_dispatch(&parent).then_some(parent)
}

/// The name of the kernel `op` belongs to: its `tcc.dispatch`'s.
pub fn kernel_of(op: OperationRef) -> Option<String> {
    enclosing(op).and_then(name_of)
}

/// The ops of a kernel, in order, its terminator left out.
pub fn members<'c>(dispatch: OperationRef<'c, 'c>) -> Vec<OperationRef<'c, 'c>> {
    body_ops(dispatch)
        .into_iter()
        .filter(|op| op_name(op) != YIELD)
        .collect()
}

/// Takes the ops of `dispatch` out in front of it, in order, the values it
/// yields replacing its results, and erases it. Returns the ops moved.
pub fn inline<'c>(dispatch: OperationRef<'c, 'c>) -> Vec<OperationRef<'c, 'c>> {
    let members = members(dispatch);
    let yielded: Vec<_> = body_ops(dispatch)
        .into_iter()
        .filter(|op| op_name(op) == YIELD)
        .flat_map(|terminator| terminator.operands().collect::<Vec<_>>())
        .collect();
    for member in &members {
        unsafe { mlir_sys::mlirOperationMoveBefore(member.to_raw(), dispatch.to_raw()) };
    }
    for (index, value) in yielded.iter().enumerate() {
        if let Ok(result) = dispatch.result(index) {
            unsafe {
                mlir_sys::mlirValueReplaceAllUsesOfWith(result.to_raw(), value.to_raw());
            }
        }
    }
    super::util::erase_op(dispatch);
    members
}
