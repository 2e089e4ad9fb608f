//! `tcc-collapse-contractions`: merges the reduction (and parallel)
//! dimensions a contraction generic reads contiguously into one, and gives the result
//! back its named form (`linalg.batch_matmul`).
//!
//! A fully connected layer after a flatten (VGG's, AlexNet's) reaches the
//! linalg phase as `collapse_shape` + `batch_matmul`; upstream's
//! elementwise fusion propagates the reshape by expanding the matmul's
//! iteration space, which leaves a generic reducing over C x H x W. The
//! GEMM template matches named matmuls only, so such a layer ran as a
//! plain reduction loop: one work-item per output column streaming the
//! whole weight, 0.26 TB/s for VGG-19's 411 MB layer on the H100. Merging
//! the three dimensions (both operands hold them contiguously, in the same
//! order) makes it a batch_matmul again, and with it a GEMM kernel with
//! its tiling and split-K. Runs of parallel dimensions merge the same
//! way: a classifier after a global pool reaches it with rows of 1 x 1
//! (the pooled map), which merge into one M. A generic whose reduction
//! dimensions are not contiguous in some operand, or whose body is more
//! than a multiply-add, is left as it is.

use melior::Context;
use melior::ir::operation::OperationLike;
use tcc_dialects::Collapsed;

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::ops_named;

pub struct CollapseContractions;

impl TccPass for CollapseContractions {
    const ARGUMENT: &'static str = "tcc-collapse-contractions";
    const SUMMARY: &'static str = "Merge the contiguous reduction (and parallel) dimensions of contraction generics and give them back their named form (batch_matmul), so a flatten or a pooled 1x1 map before a fully connected layer leaves a GEMM";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Collect first: collapsing replaces ops.
        let generics = ops_named(root, "linalg.generic");
        for op in generics {
            let location = op.location();
            if unsafe { tcc_dialects::collapse_contraction(op.to_raw()) } == Collapsed::Failed {
                return Err(PassError::at(
                    location,
                    "cannot merge this contraction's reduction dimensions",
                ));
            }
        }
        Ok(())
    }
}
