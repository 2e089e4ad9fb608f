//! `tcc-convert-softmax-to-linalg`: turns each `tcc.softmax` over the last
//! axis of an f32 tensor (of any length, a symbolic one included) into
//! `linalg.softmax`, so that the dispatch phase
//! makes it a single row-parallel kernel (a softmax over the last axis is
//! then one kernel rather than the four of its elementwise expansion).
//! Other softmaxes are left to `tcc-decompose-composites`.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, replace_each};
use crate::patterns::convert_softmax_to_linalg::rewrite;
use crate::patterns::is_last_axis_f32_any_row;

pub struct ConvertSoftmaxToLinalg;

impl TccPass for ConvertSoftmaxToLinalg {
    const ARGUMENT: &'static str = "tcc-convert-softmax-to-linalg";
    const SUMMARY: &'static str =
        "Turn last-axis tcc.softmax into linalg.softmax (one row-parallel kernel)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        replace_each(root, "tcc.softmax", is_last_axis_f32_any_row, |op| {
            rewrite(context, op)
        })
    }
}
