//! `tcc-elide-output-copies`: the last pass of the buffer phase. A result
//! that is a reshape of a buffer the function allocated reaches its output
//! argument through a `memref.copy` (`buffer-results-to-out-params` only
//! forwards plain allocations); that copy is a kernel of its own. This
//! pass makes the allocation a view of the output argument instead
//! (`patterns::elide_output_copies`), so the producer writes the output in place.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, for_each_body_op};
use crate::patterns::elide_output_copies::elide_output_copy;

pub struct ElideOutputCopies;

impl TccPass for ElideOutputCopies {
    const ARGUMENT: &'static str = "tcc-elide-output-copies";
    const SUMMARY: &'static str = "Write results that are reshapes of an allocation straight into the output argument (no copy kernel)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["memref"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for_each_body_op(root, |op| elide_output_copy(context, op).map(|_| ()))
    }
}
