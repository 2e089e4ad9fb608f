//! `tcc-fold-attention-transposes`: a buffer-phase pass. The transposes
//! that bring Q, K and V into the `[batch, heads, tokens, head_dim]` order
//! of a `tcc.flash_attention`, and the one that takes its output back,
//! are copy kernels after bufferization; the attention kernel reads and
//! writes through strides, so each becomes a `memref.transpose` view and
//! the copies and their buffers disappear
//! (`patterns::fold_attention_transposes`).

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::ops_named;
use crate::patterns::fold_attention_transposes::fold_attention_transposes;

pub struct FoldAttentionTransposes;

impl TccPass for FoldAttentionTransposes {
    const ARGUMENT: &'static str = "tcc-fold-attention-transposes";
    const SUMMARY: &'static str = "Read a flash attention's Q, K and V through their transposes and write its output through the one after it (memref.transpose views), instead of a copy kernel for each";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["memref"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for function in ops_named(root, "func.func") {
            for attention in ops_named(function, "tcc.flash_attention") {
                fold_attention_transposes(context, attention)?;
            }
        }
        Ok(())
    }
}
