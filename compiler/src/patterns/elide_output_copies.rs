//! Results written straight into the caller's output buffer, used by
//! `tcc-elide-output-copies`.
//!
//! `buffer-results-to-out-params` turns a returned value into a copy into
//! the output argument. When the value is a reshape of a buffer the
//! function allocated (a softmax output reshaped to `[N, C, 1, 1]`, say),
//! that copy is a kernel of its own. Instead, the allocation becomes the
//! inverse reshape of the output argument, so the producer writes the
//! output in place and the copy disappears.

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
