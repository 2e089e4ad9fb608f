//! `tcc-fold-constants`: evaluates at compile time every TOSA op whose
//! operands are all constants (`patterns::fold_constants`: transposes,
//! reshapes, slices, concats, f32 arithmetic and activations), whatever
//! the constants' attribute kind (`dense` or an importer's
//! `dense_resource` blob, which upstream folders cannot read). No kernel
//! then reads only constants: weight layout changes, BatchNorm parameter
//! arithmetic and the constants other graph passes transpose all happen
//! here. Results above `FOLD_ELEMENT_LIMIT` elements stay ops. It runs in
//! the graph phase on TOSA and again in the linalg phase after
//! tosa-to-linalg-named, whose filter transposes it folds into
//! `arith.constant`s.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, for_each_body_op};
use crate::patterns::fold_constants::fold;

pub struct FoldConstants;

impl TccPass for FoldConstants {
    const ARGUMENT: &'static str = "tcc-fold-constants";
    const SUMMARY: &'static str =
        "Evaluate TOSA ops on constants (dense or dense_resource) at compile time";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Program order: a folded op's constant is seen by its users.
        for_each_body_op(root, |op| fold(context, op).map(|_| ()))
    }
}
