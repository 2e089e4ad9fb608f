//! `tcc-convert-softmax-to-linalg`: turns each `tcc.softmax` over the last
//! axis of an f32 tensor into `linalg.softmax`, so that the dispatch phase
//! makes it a single row-parallel kernel (a softmax over the last axis is
//! then one kernel rather than the four of its elementwise expansion).
//! Other softmaxes are left to `tcc-decompose-composites`.

use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{Value, ValueLike};

use super::pass::{NoOptions, PassError, TccPass};
use crate::ir::util::{collect_ops, op_name};
use crate::patterns::softmax_to_linalg::{is_last_axis_softmax, rewrite};

pub struct ConvertSoftmaxToLinalg;

impl TccPass for ConvertSoftmaxToLinalg {
    const ARGUMENT: &'static str = "tcc-convert-softmax-to-linalg";
    const SUMMARY: &'static str =
        "Turn last-axis tcc.softmax into linalg.softmax (one row-parallel kernel)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor"];
    type Options = NoOptions;

    fn run<'c>(
        &self,
        context: &'c melior::Context,
        root: &mut OperationRefMut<'c, 'c>,
        _options: &NoOptions,
    ) -> Result<(), PassError<'c>> {
        let root = unsafe { OperationRef::from_raw(root.to_raw()) };
        let targets: Vec<_> = collect_ops(root)
            .into_iter()
            .filter(|op| op_name(op) == "tcc.softmax" && is_last_axis_softmax(*op))
            .collect();
        for op in targets {
            let replacement = rewrite(context, op)?;
            let old: Value = op
                .result(0)
                .map_err(|e| PassError::at(op.location(), e.to_string()))?
                .into();
            unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), replacement.to_raw()) };
            let mut doomed = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            doomed.remove_from_parent();
            unsafe { mlir_sys::mlirOperationDestroy(op.to_raw()) };
        }
        Ok(())
    }
}
