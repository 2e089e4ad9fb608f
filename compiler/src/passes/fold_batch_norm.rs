//! `tcc-fold-batch-norm`: folds per-channel scales and shifts by constants
//! (an inference BatchNormalization, or any `x * s + t` with `s`, `t`
//! constant per output channel) into the weights and bias of the
//! convolution or matmul that produces `x` (`patterns::fold_batch_norm`), so the
//! BatchNorm costs nothing at run time and the convolution's epilogue is
//! only what really remains (activation, residual add).
//!
//! A grouped convolution is imported as one convolution per group joined
//! by a channel concat; a BatchNorm after it folds into each group's
//! weights (its channels' slice), and a clamp (ReLU) after such a concat
//! moves into the concat's inputs (`patterns::fold_batch_norm::
//! sink_clamp_into_concat`), where it becomes each group's epilogue:
//! ShuffleNet's grouped 1x1 convolutions then have no kernel of their own
//! behind them.
//!
//! Runs after `tcc-propagate-layout`: the scale must lie along the last
//! (channel) dimension of the convolution's channels-last result. A scale
//! that is not constant, a producer with other users, or a shift before a
//! matmul are left alone (and compile unfused).

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, for_each_body_op};
use crate::patterns::fold_batch_norm::{fold_into_producer, sink_clamp_into_concat};

pub struct FoldBatchNorm;

impl TccPass for FoldBatchNorm {
    const ARGUMENT: &'static str = "tcc-fold-batch-norm";
    const SUMMARY: &'static str = "Fold constant per-channel scale/shift after a convolution or matmul (or a channel concat of them) into its weights and bias; move a clamp after such a concat into its inputs";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // In program order: after `mul` folds, the `add` behind it sees the
        // convolution directly and folds too.
        for_each_body_op(root, |op| {
            if !fold_into_producer(context, op)? {
                sink_clamp_into_concat(context, op)?;
            }
            Ok(())
        })
    }
}
