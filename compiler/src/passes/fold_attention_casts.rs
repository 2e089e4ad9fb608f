//! `tcc-fold-attention-casts`: a buffer-phase pass. A flash attention
//! whose key or value is a widening copy of a 16-bit buffer (a half graph's
//! key/value cache, cast to the f32 it computes in) reads that buffer
//! itself, widening as it loads; the copy kernels and their buffers
//! disappear (`patterns::fold_attention_casts`). It runs before
//! `tcc-fold-attention-transposes`, so that a transpose behind such a
//! cast folds too.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::ops_named;
use crate::patterns::fold_attention_casts::fold_attention_casts;

pub struct FoldAttentionCasts;

impl TccPass for FoldAttentionCasts {
    const ARGUMENT: &'static str = "tcc-fold-attention-casts";
    const SUMMARY: &'static str = "Read a flash attention's key and value from the 16-bit buffers they are widening copies of, instead of a copy kernel for each";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &[];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for function in ops_named(root, "func.func") {
            for attention in ops_named(function, "tcc.flash_attention") {
                fold_attention_casts(attention)?;
            }
        }
        Ok(())
    }
}
