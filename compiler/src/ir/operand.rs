//! Checked access to an op's operands and results: a missing one is an
//! [`IrError`] at the op's location, so that the diagnostic points at the
//! malformed op rather than at the pass's root.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Location, Value};

use crate::ir::dense::operand_segment_sizes;
use crate::ir::util::op_name;

/// A malformed op met while reading IR: the op's location and what is
/// wrong. Passes turn it into their `PassError` with `?`.
#[derive(Debug)]
pub struct IrError<'c> {
    pub location: Location<'c>,
    pub message: String,
}

impl<'c> IrError<'c> {
    /// An error at `op`'s location.
    pub fn at(op: OperationRef<'c, 'c>, message: impl Into<String>) -> Self {
        Self {
            location: op.location(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for IrError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Operand `index` of `op`, or an error at `op`'s location naming the op
/// and how many operands it has.
pub fn operand_at<'c>(
    op: OperationRef<'c, 'c>,
    index: usize,
) -> Result<Value<'c, 'c>, IrError<'c>> {
    op.operand(index).map_err(|_| {
        IrError::at(
            op,
            format!(
                "'{}' has {} operand(s), expected operand #{index}",
                super::util::op_name(&op),
                op.operand_count()
            ),
        )
    })
}

/// Result `index` of `op`, or an error at `op`'s location.
pub fn result_at<'c>(op: OperationRef<'c, 'c>, index: usize) -> Result<Value<'c, 'c>, IrError<'c>> {
    op.result(index).map(Into::into).map_err(|_| {
        IrError::at(
            op,
            format!(
                "'{}' has {} result(s), expected result #{index}",
                super::util::op_name(&op),
                op.result_count()
            ),
        )
    })
}

/// The DPS init operands of a linalg op or a `tcc.conv` (its `outs`).
pub fn init_operands<'c>(op: OperationRef<'c, 'c>) -> Vec<Value<'c, 'c>> {
    let Some(sizes) = operand_segment_sizes(op) else {
        // Linalg ops with a single init and no operand segments
        // (linalg.map, transpose, broadcast, softmax, and `tcc.conv`):
        // the init is last.
        if super::conv::is_linalg_or_conv(&op_name(&op)) && op.operand_count() > 0 {
            return op.operand(op.operand_count() - 1).into_iter().collect();
        }
        return Vec::new();
    };
    let (Some(&ins), Some(&outs)) = (sizes.first(), sizes.get(1)) else {
        return Vec::new();
    };
    let (Ok(ins), Ok(outs)) = (usize::try_from(ins), usize::try_from(outs)) else {
        return Vec::new();
    };
    (ins..ins + outs)
        .filter_map(|i| op.operand(i).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{first_op, parse};

    #[test]
    fn reports_a_missing_operand_at_the_op() {
        let context = tcc_dialects::new_context();
        let module = parse(
            &context,
            r#"
            func.func @f(%a: f32, %b: f32) -> f32 {
              %0 = arith.addf %a, %b : f32 loc("model.mlir":7:3)
              return %0 : f32
            }
            "#,
        );
        let add = first_op(&module, "arith.addf");
        let second = operand_at(add, 1).unwrap();
        assert_eq!(second, add.operand(1).unwrap());
        assert!(result_at(add, 0).is_ok());
        let error = operand_at(add, 2).unwrap_err();
        assert_eq!(
            error.message,
            "'arith.addf' has 2 operand(s), expected operand #2"
        );
        assert_eq!(
            crate::diagnostics::location_string(error.location.to_raw()).as_deref(),
            Some("model.mlir:7:3")
        );
        let error = result_at(add, 1).unwrap_err();
        assert_eq!(
            error.message,
            "'arith.addf' has 1 result(s), expected result #1"
        );
    }
}
