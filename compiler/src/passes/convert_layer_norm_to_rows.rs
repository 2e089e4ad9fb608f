//! `tcc-convert-layer-norm-to-rows`: turns each `tcc.layer_norm` over the
//! last axis of an f32 tensor into `tcc.layer_norm_rows`, so that it is one
//! kernel (one work-group per row: mean, variance and normalization in
//! local memory) rather than the four of its TOSA expansion. Other layer
//! norms are left to `tcc-decompose-composites`.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, replace_each};
use crate::patterns::convert_layer_norm_to_rows::rewrite;
use crate::patterns::is_last_axis_f32;

pub struct ConvertLayerNormToRows;

impl TccPass for ConvertLayerNormToRows {
    const ARGUMENT: &'static str = "tcc-convert-layer-norm-to-rows";
    const SUMMARY: &'static str =
        "Turn last-axis tcc.layer_norm into tcc.layer_norm_rows (one row-parallel kernel)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc", "tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        replace_each(root, "tcc.layer_norm", is_last_axis_f32, |op| {
            rewrite(context, op)
        })
    }
}
