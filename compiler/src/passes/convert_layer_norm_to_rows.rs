//! `tcc-convert-layer-norm-to-rows`: turns each `tcc.layer_norm` over the
//! last axis of an f32 tensor into `tcc.layer_norm_rows`, so that it is one
//! kernel (one work-group per row: mean, variance and normalization in
//! local memory) rather than the four of its TOSA expansion. Other layer
//! norms are left to `tcc-decompose-composites`.

use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{Value, ValueLike};

use super::pass::{NoOptions, PassError, TccPass};
use crate::ir::util::{collect_ops, op_name};
use crate::patterns::layer_norm_to_rows::{is_last_axis_layer_norm, rewrite};

pub struct ConvertLayerNormToRows;

impl TccPass for ConvertLayerNormToRows {
    const ARGUMENT: &'static str = "tcc-convert-layer-norm-to-rows";
    const SUMMARY: &'static str =
        "Turn last-axis tcc.layer_norm into tcc.layer_norm_rows (one row-parallel kernel)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc", "tensor"];
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
            .filter(|op| op_name(op) == "tcc.layer_norm" && is_last_axis_layer_norm(*op))
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
