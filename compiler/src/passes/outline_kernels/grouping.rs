//! Grouping for `tcc-outline-kernels`: which ops run on the device, and
//! which of them form one kernel (the ops of one `tcc.dispatch`, split
//! again where fusing them would race).

use std::collections::HashMap;

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{TypeLike, Value, ValueLike};

use super::capture::{raw_key, view_chain};
use crate::ir::dispatch;
use crate::ir::util::{body_ops, op_name};
use crate::patterns::form_dispatches::{kernel_name, op_parts};

pub(super) use crate::ir::memref::VIEW_OPS;

/// Whether the op runs on the device (as, or as part of, a kernel).
pub(in crate::passes) fn is_kernel_op(op: OperationRef) -> bool {
    let name = op_name(&op);
    crate::ir::conv::is_linalg_or_conv(&name)
        || name == "memref.copy"
        || name == "tcc.layer_norm_rows"
        || name == "tcc.flash_attention"
}

/// A whole-buffer copy stays on the host (the runtime's buffer copy).
pub(in crate::passes) fn is_host_copy(op: OperationRef) -> bool {
    op_name(&op) == "memref.copy"
        && op.operands().all(|v| {
            crate::ir::memref::has_identity_layout(v.r#type())
                && crate::ir::util::defining_op(v)
                    .is_none_or(|d| !VIEW_OPS.contains(&op_name(&d).as_str()))
        })
}

pub(super) struct Group<'c> {
    pub(super) name: String,
    pub(super) members: Vec<OperationRef<'c, 'c>>,
}

/// The kernel groups of a function body, in the order their last member
/// appears; `kernels` names the kernel of each op that was in a
/// `tcc.dispatch` (by the op's address: [`dissolve_dispatches`]).
pub(super) fn kernel_groups<'c>(
    function: OperationRef<'c, 'c>,
    kernels: &HashMap<usize, String>,
    next_index: &mut usize,
) -> Vec<Group<'c>> {
    let mut groups: Vec<Group<'c>> = Vec::new();
    for op in body_ops(function) {
        if !is_kernel_op(op) || is_host_copy(op) {
            continue;
        }
        if let Some(name) = kernels.get(&(op.to_raw().ptr as usize)).cloned() {
            if let Some(group) = groups.iter_mut().find(|g| g.name == name) {
                group.members.push(op);
                continue;
            }
            groups.push(Group {
                name,
                members: vec![op],
            });
            continue;
        }
        let name = kernel_name(&op_parts(op), *next_index);
        *next_index += 1;
        groups.push(Group {
            name,
            members: vec![op],
        });
    }
    groups
}

/// Takes the ops of every `tcc.dispatch` of `function` out in front of it
/// (in order) and erases the dispatch, and returns which kernel each of
/// those ops belonged to, by the op's address. Ops that bufferization put
/// in a kernel but do not run on the device (host copies, views) are then
/// in the host function where the kernel ran, as the launch will be.
pub(super) fn dissolve_dispatches(function: OperationRef) -> HashMap<usize, String> {
    let mut kernels = HashMap::new();
    for dispatch in body_ops(function).into_iter().filter(dispatch::is_dispatch) {
        let name = dispatch::name_of(dispatch).unwrap_or_default();
        for member in dispatch::inline(dispatch) {
            kernels.insert(member.to_raw().ptr as usize, name.clone());
        }
    }
    kernels
}

/// Buffers (roots) a kernel op writes and reads.
fn written_and_read<'c>(op: OperationRef<'c, 'c>) -> (Vec<usize>, Vec<usize>) {
    let root = |v: Value<'c, 'c>| raw_key(view_chain(v).0);
    if op_name(&op) == "memref.copy" {
        let read = op.operand(0).map(|v| vec![root(v)]).unwrap_or_default();
        let written = op.operand(1).map(|v| vec![root(v)]).unwrap_or_default();
        return (written, read);
    }
    let inits: Vec<usize> = crate::passes::form_dispatches::init_operands(op)
        .into_iter()
        .map(root)
        .collect();
    let reads: Vec<usize> = op
        .operands()
        .filter(|v| v.r#type().is_mem_ref())
        .map(root)
        .filter(|r| !inits.contains(r))
        .collect();
    (inits, reads)
}

/// Splits a fused group whose later op overwrites a buffer an earlier op
/// of the group reads (write after read). Bufferization may reuse a dead
/// input's buffer for a later op's output — correct op by op, but a race
/// once both run in one kernel, where other work-items may still be
/// reading. Such groups run as one kernel per op instead.
pub(super) fn split_hazardous<'c>(
    groups: Vec<Group<'c>>,
    next_index: &mut usize,
) -> Vec<Group<'c>> {
    let mut result = Vec::new();
    for group in groups {
        let accesses: Vec<_> = group.members.iter().map(|m| written_and_read(*m)).collect();
        let hazard = (0..accesses.len()).any(|later| {
            (0..later).any(|earlier| {
                accesses[later]
                    .0
                    .iter()
                    .any(|w| accesses[earlier].1.contains(w))
            })
        });
        if !hazard || group.members.len() == 1 {
            result.push(group);
            continue;
        }
        for member in group.members {
            let name = kernel_name(&op_parts(member), *next_index);
            *next_index += 1;
            result.push(Group {
                name,
                members: vec![member],
            });
        }
    }
    result
}
