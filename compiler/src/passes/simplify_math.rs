//! `tcc-simplify-math`: upstream's algebraic simplification of math ops,
//! which MLIR ships as patterns without a pass.
//!
//! `powf` by a constant exponent becomes multiplications, a division,
//! `sqrt` or `rsqrt` (x^2, x^-1, x^0.5, x^-0.5, x^0.75, ...). A general
//! `pow` is the slowest scalar function a kernel can call: on PoCL it
//! does not vectorize and costs about 100 ns per element, so the LRN of
//! Inception v1 (`(1 + a * sum)^-0.75`) spent 67 of its 72 ms in it.
//! Exponents with no cheaper form are left alone.

use melior::Context;
use melior::ir::operation::OperationLike;

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};

pub struct SimplifyMath;

impl TccPass for SimplifyMath {
    const ARGUMENT: &'static str = "tcc-simplify-math";
    const SUMMARY: &'static str =
        "Strength-reduce math ops (powf by constant exponents to multiplications, sqrt, rsqrt)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["math", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        if unsafe { tcc_dialects::simplify_math(root.to_raw()) } {
            Ok(())
        } else {
            Err(PassError::at(
                root.location(),
                "the algebraic simplification of math ops did not converge",
            ))
        }
    }
}
