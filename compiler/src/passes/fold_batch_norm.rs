//! `tcc-fold-batch-norm`: folds per-channel scales and shifts by constants
//! (an inference BatchNormalization, or any `x * s + t` with `s`, `t`
//! constant per output channel) into the weights and bias of the
//! convolution or matmul that produces `x` (`patterns::batch_norm`), so the
//! BatchNorm costs nothing at run time and the convolution's epilogue is
//! only what really remains (activation, residual add).
//!
//! Runs after `tcc-propagate-layout`: the scale must lie along the last
//! (channel) dimension of the convolution's channels-last result. A scale
//! that is not constant, a producer with other users, or a shift before a
//! matmul are left alone (and compile unfused).

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, for_each_body_op};
use crate::patterns::batch_norm::fold_into_producer;

pub struct FoldBatchNorm;

impl TccPass for FoldBatchNorm {
    const ARGUMENT: &'static str = "tcc-fold-batch-norm";
    const SUMMARY: &'static str = "Fold constant per-channel scale/shift after a convolution or matmul into its weights and bias";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // In program order: after `mul` folds, the `add` behind it sees the
        // convolution directly and folds too.
        for_each_body_op(root, |op| fold_into_producer(context, op).map(|_| ()))
    }
}
