//! `tcc-concat-in-place`: concatenations without copy kernels
//! (`patterns::concat_in_place`). Concats that repeat a larger concat's first parts
//! (DenseNet's dense blocks) become views of one buffer that each part is
//! inserted into once, and a part's producer writes straight into its slice
//! of that buffer instead of a buffer of its own. Runs on tensors, before
//! kernels are formed, so bufferization decides what stays in place and
//! copies only where a later read needs the old value.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::ops_named;
use crate::patterns::concat_in_place::concat_in_place;

pub struct ConcatInPlace;

impl TccPass for ConcatInPlace {
    const ARGUMENT: &'static str = "tcc-concat-in-place";
    const SUMMARY: &'static str = "Concatenate without copies: shared buffers for prefix concats, producers writing into their slice";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for function in ops_named(module, "func.func") {
            // CSE merges the identical zero fills that start equal-shaped
            // convolutions; each producer needs its own to be pointed at
            // its slot of the concat buffer.
            super::form_dispatches::unshare_fills(function);
            concat_in_place(context, function)?;
        }
        Ok(())
    }
}
