//! `tcc-generalize-reductions`: rewrites every `linalg.reduce` as the
//! equivalent `linalg.generic`.
//!
//! TOSA's reductions (`reduce_sum`, `reduce_max`, ...) lower to the named
//! `linalg.reduce`, which upstream's elementwise fusion, tcc's row
//! templates and its reduction epilogues do not see: they all work on
//! generics. A `reduce_sum(exp(x))` stayed two kernels, the exponential
//! written to memory and read back, and the sum ran as a scalar loop per
//! output. As a generic the exponential fuses into the reduction and the
//! reduction qualifies for the row template. Contractions and
//! convolutions stay named: the GEMM template matches them by name.

use melior::Context;
use melior::ir::operation::OperationLike;

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::ops_named;

pub struct GeneralizeReductions;

impl TccPass for GeneralizeReductions {
    const ARGUMENT: &'static str = "tcc-generalize-reductions";
    const SUMMARY: &'static str = "Rewrite linalg.reduce as linalg.generic, so elementwise fusion and the row templates see it";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // `ops_named` collects them first: generalizing replaces ops.
        for op in ops_named(root, "linalg.reduce") {
            let location = op.location();
            if !unsafe { tcc_dialects::generalize(op.to_raw()) } {
                return Err(PassError::at(
                    location,
                    "cannot rewrite this linalg.reduce as a linalg.generic",
                ));
            }
        }
        Ok(())
    }
}
