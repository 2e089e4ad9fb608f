//! `tcc-fold-pad-slices`: folds a constant pad read through shifted
//! slices into the elementwise generic that consumes the slices, so that
//! neither the padded tensor nor the elementwise producer of its source
//! becomes a kernel (see `patterns/fold_pad_slices.rs`).
//!
//! Runs in the dispatch phase before `tcc-form-dispatches`. ONNX's LRN is
//! the case in the models tcc meets: in Inception v1 each LRN was four
//! kernels (the squares, a fill and a copy for the channel padding, the
//! sum and scaling) and is now one. A pad with another user, a slice used
//! elsewhere, a strided or rank-reducing slice and a non-constant pad
//! value are left alone.

use melior::Context;
use melior::ir::operation::OperationLike;
use melior::ir::{Value, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{collect_ops, erase_op, is_unused, op_name};
use crate::patterns::fold_pad_slices::{plan, rewrite};

pub struct FoldPadSlices;

impl TccPass for FoldPadSlices {
    const ARGUMENT: &'static str = "tcc-fold-pad-slices";
    const SUMMARY: &'static str =
        "Fold constant padding read through shifted slices into the elementwise op that reads them";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // One rewrite at a time: a rewrite erases ops another plan holds.
        // Rewritten generics read no slices any more, so this ends.
        while let Some(plan) = collect_ops(root).into_iter().find_map(plan) {
            let replacements = rewrite(context, &plan)?;
            for (index, new) in replacements.into_iter().enumerate() {
                let old: Value = plan
                    .op
                    .result(index)
                    .map_err(|e| PassError::at(plan.op.location(), e.to_string()))?
                    .into();
                unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), new.to_raw()) };
            }
            erase_op(plan.op);
            // Slices before their pads, pads before the producers.
            let (slices, pads): (Vec<_>, Vec<_>) = plan
                .dead
                .iter()
                .partition(|op| op_name(*op) == "tensor.extract_slice");
            for op in slices
                .into_iter()
                .chain(pads)
                .chain(plan.producers().iter())
            {
                if is_unused(*op) {
                    erase_op(*op);
                }
            }
        }
        Ok(())
    }
}
