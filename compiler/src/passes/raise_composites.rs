//! `tcc-raise-composites`: finds softmax and layer normalization written in
//! primitive TOSA ops and replaces them by `tcc.softmax` and
//! `tcc.layer_norm`.
//!
//! Producers other than tcc's ONNX importer (TensorFlow, torch-mlir, hand
//! written TOSA) spell these as chains of reductions and elementwise ops:
//! softmax as `exp(x - reduce_max(x)) * reciprocal(reduce_sum(...))` (TOSA
//! has no float division; the shift by the maximum may be missing), layer
//! norm as `reduce_sum * 1/N` means, `mul(d, d)` or `pow(d, 2)` for the
//! square, `rsqrt(var + epsilon)`, then an optional `gamma` product and
//! `beta` sum. Compiled op by op each is four or more kernels; as a
//! composite, the later phases compile a last-axis one into a single
//! one-work-group-per-row kernel. Runs in the graph phase after constant
//! folding, so that `1/N` and epsilon are constants by then.
//!
//! Only exact matches are raised (see `patterns::raise_composites`): f32,
//! the composite's axis, the right constants, and intermediates used
//! nowhere else. The unshifted softmax `exp(x) / sum(exp(x))` is raised too:
//! it is the same function, and the composite computes it in the
//! overflow-safe shifted form.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::ops_named;
use crate::patterns::raise_composites::{
    match_layer_norm, match_softmax, rewrite_layer_norm, rewrite_softmax,
};

pub struct RaiseComposites;

impl TccPass for RaiseComposites {
    const ARGUMENT: &'static str = "tcc-raise-composites";
    const SUMMARY: &'static str = "Replace softmax and layer norm written in primitive TOSA ops by tcc.softmax and tcc.layer_norm";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc", "tosa"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Layer norms first: their mean/variance reductions never look like
        // a softmax, but rewriting one erases ops, so each kind is matched
        // on a fresh walk.
        let anchors = ops_named(root, "tosa.rsqrt");
        for anchor in anchors {
            if let Some(found) = match_layer_norm(anchor) {
                rewrite_layer_norm(context, &found)?;
            }
        }
        let anchors = ops_named(root, "tosa.mul");
        for anchor in anchors {
            if let Some(found) = match_softmax(anchor) {
                rewrite_softmax(context, &found)?;
            }
        }
        Ok(())
    }
}
