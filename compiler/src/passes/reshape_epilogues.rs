//! `tcc-reshape-epilogues`: the dispatch phase's step before
//! `tcc-form-dispatches`. An elementwise op that reads a matmul's product
//! through reshapes (what an ONNX `MatMul` of a 3-D activation leaves at
//! any batch above 1) is rewritten into the product's shape, so that it
//! becomes the GEMM's epilogue instead of a kernel of its own
//! (`patterns::reshape_epilogues`). So is one reading a grouped
//! convolution's output (`ir::grouped_conv`) through the reshape that
//! elementwise fusion propagates into it from a channel shuffle
//! (ShuffleNet's ReLU before its `[.., G, C/G]` transpose).

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::collect_ops;
use crate::patterns::reshape_epilogues::reshape_epilogue;

pub struct ReshapeEpilogues;

impl TccPass for ReshapeEpilogues {
    const ARGUMENT: &'static str = "tcc-reshape-epilogues";
    const SUMMARY: &'static str = "Give an elementwise op that reads a matmul's (or a grouped convolution's) product through reshapes the product's shape, so that tcc-form-dispatches makes it the GEMM's epilogue";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let contractions: Vec<_> = collect_ops(root)
            .into_iter()
            .filter(|op| {
                matches!(
                    crate::ir::util::op_name(op).as_str(),
                    "linalg.batch_matmul" | "linalg.matmul"
                ) || crate::ir::grouped_conv::of(*op).is_some()
            })
            .collect();
        for contraction in contractions {
            reshape_epilogue(context, contraction)?;
        }
        Ok(())
    }
}
