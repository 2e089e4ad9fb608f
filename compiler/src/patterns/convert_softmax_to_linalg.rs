//! `tcc.softmax` over the last axis → `linalg.softmax`, which tcc compiles
//! as one row-parallel kernel instead of the four kernels (max, exp, sum,
//! normalize) of its TOSA expansion.

use melior::Context;
use melior::ir::attribute::IntegerAttribute;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::IntegerType;
use melior::ir::{Identifier, Value, ValueLike};

use super::{empty_like, insert_before};
use crate::ir::error::PassError;

/// Builds `linalg.softmax` in front of `op` and returns its result.
pub fn rewrite<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = op.location();
    let input = op
        .operand(0)
        .map_err(|e| PassError::at(location, e.to_string()))?;
    // A leading dynamic dimension (a symbolic batch) is read back by the
    // destination's `tensor.dim`; the rows stay static.
    let rank = crate::ir::types::ranked_shape(input.r#type())
        .ok_or_else(|| PassError::at(location, "softmax of an unranked tensor"))?
        .len();
    let init = empty_like(context, op, input)?;
    let dimension = IntegerAttribute::new(IntegerType::new(context, 64).into(), rank as i64 - 1);
    insert_before(
        op,
        OperationBuilder::new("linalg.softmax", location)
            .add_operands(&[input, init])
            .add_results(&[input.r#type()])
            .add_attributes(&[(Identifier::new(context, "dimension"), dimension.into())]),
        "linalg.softmax",
    )
}
