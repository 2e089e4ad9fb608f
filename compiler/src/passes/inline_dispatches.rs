//! `tcc-inline-dispatches`: takes the ops of every `tcc.dispatch` (the
//! kernel boundary, docs/dialect.md) out into the function body where the
//! kernel was, the values each kernel yields standing for its results. The
//! default pipeline never runs it (outlining takes the kernels apart
//! itself); it lets upstream pipelines, which know no `tcc.dispatch`, take
//! over IR that tcc stopped after the dispatch phase or later (the
//! dynamic-shapes tests lower `--compile-to=dispatch` output with upstream
//! passes alone).

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::dispatch;
use crate::ir::util::ops_named;

pub struct InlineDispatches;

impl TccPass for InlineDispatches {
    const ARGUMENT: &'static str = "tcc-inline-dispatches";
    const SUMMARY: &'static str = "Take the ops of every tcc.dispatch out into the function body, its yields standing for its results";
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for kernel in ops_named(root, dispatch::OP) {
            dispatch::inline(kernel);
        }
        Ok(())
    }
}
