//! Results written straight into the caller's output buffer, used by
//! `tcc-elide-output-copies`.
//!
//! `buffer-results-to-out-params` turns a returned value into a copy into
//! the output argument. When the value is a reshape of a buffer the
//! function allocated (a softmax output reshaped to `[N, C, 1, 1]`, say),
//! that copy is a kernel of its own. Instead, the allocation becomes the
//! inverse reshape of the output argument, so the producer writes the
//! output in place and the copy disappears. Upstream forwards a plain
//! allocation only where its shape is static; one sized by a symbolic
//! dimension (`memref.alloc(%batch)`, issue 33) is forwarded here: the
//! runtime sizes the output from the same dimension.

use melior::Context;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::{BlockLike, Identifier, Value, ValueLike};

use crate::ir::error::PassError;
use crate::ir::util::{defining_op, erase_op, op_name, users};

/// Rewrites `memref.copy(reshape(%alloc), %out)` when `%out` is an argument
/// of the function used only by this copy and `%alloc` is an allocation
/// whose only other users come before the copy. Returns whether it did.
pub fn elide_output_copy<'c>(
    context: &'c Context,
    copy: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if op_name(&copy) != "memref.copy" || copy.operand_count() != 2 {
        return Ok(false);
    }
    let location = copy.location();
    let (Ok(source), Ok(target)) = (copy.operand(0), copy.operand(1)) else {
        return Ok(false);
    };
    // The target: a function argument written by this copy alone.
    if target.is_operation_result() || users(target).len() != 1 {
        return Ok(false);
    }
    let Some(reshape) = defining_op(source) else {
        return Ok(false);
    };
    if op_name(&reshape) == "memref.alloc" {
        return elide_dynamic_copy(copy, reshape, source, target);
    }
    let inverse = match op_name(&reshape).as_str() {
        "memref.expand_shape" => "memref.collapse_shape",
        "memref.collapse_shape" => "memref.expand_shape",
        _ => return Ok(false),
    };
    if users(source).len() != 1 {
        return Ok(false);
    }
    let Ok(allocated) = reshape.operand(0) else {
        return Ok(false);
    };
    let Some(alloc) = defining_op(allocated) else {
        return Ok(false);
    };
    if op_name(&alloc) != "memref.alloc" || alloc.operand_count() != 0 {
        return Ok(false);
    }
    let Ok(reassociation) = reshape.attribute("reassociation") else {
        return Ok(false);
    };
    let mut attributes = vec![(Identifier::new(context, "reassociation"), reassociation)];
    if inverse == "memref.expand_shape" {
        let Some(shape) = crate::ir::types::static_shape(allocated.r#type()) else {
            return Ok(false);
        };
        attributes.push((
            Identifier::new(context, "static_output_shape"),
            melior::ir::attribute::DenseI64ArrayAttribute::new(context, &shape).into(),
        ));
    }
    let view = OperationBuilder::new(inverse, location)
        .add_operands(&[target])
        .add_results(&[allocated.r#type()])
        .add_attributes(&attributes)
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build {inverse}: {e}")))?;
    // The output argument exists from the entry: the view replaces the
    // allocation where it stands.
    let block = alloc
        .block()
        .ok_or_else(|| PassError::at(location, "allocation outside a block"))?;
    let view = block.insert_operation_before(alloc, view);
    let view_value: Value = view
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into();
    erase_op(copy);
    erase_op(reshape);
    crate::ir::util::replace_and_erase(alloc, allocated, view_value);
    Ok(true)
}

/// `memref.copy %alloc, %out` where `%alloc` is `memref.alloc(%sizes)` of
/// the output argument's (dynamic) type and every other user of the
/// allocation comes before the copy in its block: the allocation is the
/// output argument (its extents are the call's, which the runtime sized
/// the output with), the copy and the allocation go.
fn elide_dynamic_copy<'c>(
    copy: OperationRef<'c, 'c>,
    alloc: OperationRef<'c, 'c>,
    allocated: Value<'c, 'c>,
    target: Value<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    // Static allocations are upstream's (`buffer-results-to-out-params`).
    if alloc.operand_count() == 0 || allocated.r#type() != target.r#type() {
        return Ok(false);
    }
    let Some(block) = copy.block() else {
        return Ok(false);
    };
    if alloc.block() != Some(block) {
        return Ok(false);
    }
    // The ops of the block up to the copy, each user's ancestor in the
    // block among them.
    let mut before = Vec::new();
    let mut next = block.first_operation();
    while let Some(op) = next {
        if op == copy {
            break;
        }
        before.push(op);
        next = op.next_in_block();
    }
    for user in users(allocated) {
        if user == copy {
            continue;
        }
        let mut ancestor = Some(user);
        while let Some(op) = ancestor {
            if op.block() == Some(block) {
                break;
            }
            ancestor = op.parent_operation();
        }
        let Some(ancestor) = ancestor else {
            return Ok(false);
        };
        if !before
            .iter()
            .any(|op| op.to_raw().ptr == ancestor.to_raw().ptr)
        {
            return Ok(false);
        }
    }
    erase_op(copy);
    crate::ir::util::replace_and_erase(alloc, allocated, target);
    Ok(true)
}
