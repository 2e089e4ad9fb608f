//! `tcc.layer_norm` over the last axis → `tcc.layer_norm_rows`, the
//! destination-style form that bufferizes and that the OpenCL C back end
//! compiles as one row kernel instead of the four kernels (sum, centre,
//! sum of squares, normalize) of its TOSA expansion.

use melior::Context;
use melior::ir::attribute::FloatAttribute;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::{Identifier, Value, ValueLike};

use super::{empty_like, insert_before};
use crate::ir::error::PassError;

/// Builds `tcc.layer_norm_rows` in front of `op` and returns its result.
pub fn rewrite<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = op.location();
    let operand = |index: usize| {
        op.operand(index)
            .map_err(|e| PassError::at(location, e.to_string()))
    };
    let (input, scale, bias) = (operand(0)?, operand(1)?, operand(2)?);
    let epsilon = op
        .attribute("epsilon")
        .ok()
        .and_then(|a| FloatAttribute::try_from(a).ok())
        .ok_or_else(|| PassError::at(location, "layer norm without a float epsilon"))?;
    let init = empty_like(context, op, input)?;
    insert_before(
        op,
        OperationBuilder::new("tcc.layer_norm_rows", location)
            .add_operands(&[input, scale, bias, init])
            .add_results(&[input.r#type()])
            .add_attributes(&[(Identifier::new(context, "epsilon"), epsilon.into())]),
        "tcc.layer_norm_rows",
    )
}
