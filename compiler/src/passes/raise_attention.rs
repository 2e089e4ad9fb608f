//! `tcc-raise-attention`: finds scaled dot-product attention written as
//! matmuls and a softmax and replaces it by `tcc.attention`, which the
//! linalg phase compiles as one flash-attention kernel instead of two
//! batched GEMMs, a softmax and the mask and scale kernels between them
//! (the scores never reach memory).
//!
//! The anchor is `tosa.matmul(P, V)` whose `P` is (through reshapes) a
//! last-axis `tcc.softmax` of the scores: `tosa.matmul(Q, Kᵀ)` (any right
//! operand: its transpose is K), reshaped between the rank-3 products and
//! the `[B, H, S, S]` view, with any of, in the orders exporters emit
//! them:
//! - multiplications by a scalar constant (`1/sqrt(d)`; a division by
//!   `sqrt(d)` arrives as one after import and constant folding), on the
//!   product, on Q or on Kᵀ (torch's `scaled_dot_product_attention`
//!   export scales both by `sqrt(scale)`); a scale after a mask scales the
//!   mask too;
//! - an additive mask that broadcasts to the scores (a padding mask from
//!   an `attention_mask` input); a constant one that is 0 on and below
//!   the diagonal and `-1e30` or less above it becomes `causal`, and an
//!   all-zero one disappears;
//! - a `tosa.select` of a constant lower triangle between the scores and
//!   a fill of `-1e30` or less (GPT-2's `torch.where(causal_mask, w,
//!   mask_value)`), or of the upper triangle with the operands swapped
//!   (`masked_fill`): `causal`.
//!
//! Between the softmax and `·V` it takes one guard of the rows a mask
//! leaves without any key (all scores `-inf`, softmax NaN), which
//! `tcc.attention` defines as 0: the `where(isnan(P), 0, P)` torch
//! writes after the softmax of `scaled_dot_product_attention`
//! (transformers' `sdpa` attention: BERT, GPT-2), with IsNaN as the
//! importer's `cmpf uno` generic (of `P`, or in a half chain of `P` cast
//! up to f32) or as `not(equal(P, P))`; or ONNX
//! `Attention`'s `where(no key allowed, 0, P)`, accepted only when its
//! condition is computed from the very mask added to the scores (or is a
//! constant equal to that mask's all-`-inf` rows).
//!
//! The chain is f32, or half (f16 or bf16; one half type): Q, K, V, the
//! mask and the output of that type (or, in f32, casts up from it, a
//! constant mask it holds exactly, and the cast down to it that stores the
//! output), and between them the scores
//! and probabilities in that type or in f32 with casts between the two:
//! the ONNX importer's form of a half model (each op computed in f32
//! between casts, its result rounded to half) and exporters' upcast
//! softmax (`softmax(x.float()).half()`) alike. The raised op has the half
//! type; its kernel computes in f32 from the half operands, so dropping
//! the intermediate roundings is exact or better. In an f16 chain a causal
//! fill of f16's lowest value (`-65504`, `finfo(float16).min`) or less
//! masks a key out too. A value of another type (an f32 V in an f16
//! chain, a cast to the other half type) leaves the chain alone.
//!
//! Every intermediate from the scores to `P` must have one use (a model
//! that also returns the scores or the probabilities keeps its chain),
//! the softmax must be over the last axis, the scale a scalar, the mask
//! additive, and V the matmul's right operand; anything else is left
//! alone. ONNX `Attention` (opset 23) is imported as `tcc.attention`
//! directly unless it has a softcap or returns its scores; those reach
//! this pass as the same chain.
//! Runs in the graph phase after `tcc-raise-composites` (which raises
//! softmaxes written in primitive ops) and constant folding.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::ops_named;
use crate::patterns::attention::{match_attention, rewrite_attention};

pub struct RaiseAttention;

impl TccPass for RaiseAttention {
    const ARGUMENT: &'static str = "tcc-raise-attention";
    const SUMMARY: &'static str =
        "Replace scaled dot-product attention written as matmuls and softmax by tcc.attention";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc", "tosa"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for anchor in ops_named(root, "tosa.matmul") {
            // A rewrite erases only its anchor, which no later anchor is.
            if let Some(found) = match_attention(anchor) {
                rewrite_attention(context, &found)?;
            }
        }
        Ok(())
    }
}
