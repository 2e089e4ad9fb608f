//! `tcc-convert-attention-to-kernel`: turns each `tcc.attention` of f32,
//! f16 or bf16 tensors (one element type: a half graph's attention keeps
//! its halves) into `tcc.flash_attention`, its destination-style form, which
//! bufferizes like a linalg op and compiles as one flash-attention kernel
//! (`#tcc.attention`: one pass over K and V per block of query rows, the
//! scores kept in registers) rather than the two batched GEMMs, masks and
//! softmax of its TOSA expansion. Other attentions (head
//! dimensions above `KERNEL_MAX_HEAD_DIM`, f64) are left to
//! `tcc-decompose-composites`.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass, replace_each};
use crate::patterns::attention::{fits_kernel, to_kernel};

pub struct ConvertAttentionToKernel;

impl TccPass for ConvertAttentionToKernel {
    const ARGUMENT: &'static str = "tcc-convert-attention-to-kernel";
    const SUMMARY: &'static str =
        "Turn f32, f16 or bf16 tcc.attention into tcc.flash_attention (one flash-attention kernel)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc", "tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        replace_each(root, "tcc.attention", fits_kernel, |op| {
            to_kernel(context, op)
        })
    }
}
