//! `tcc-hoist-parallel-dims`: reorders each linalg op's iteration
//! dimensions so that all parallel dimensions come before the reductions
//! (a reduction over the middle axis, an argmax, ...).
//!
//! Upstream's loop lowering turns only the *outermost run* of parallel
//! dimensions into an `scf.parallel`; a parallel dimension after a reduction
//! would become a sequential loop inside each work-item. With the parallel
//! dimensions outermost, every output dimension is mapped onto work-items
//! and each work-item reduces one output element. The kernel's
//! attributes (`tcc.kind`) survive the rewrite, and the op stays in its
//! kernel's `tcc.dispatch`.

use melior::Context;
use melior::ir::operation::{OperationLike, OperationRef};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{collect_ops, dialect_of, op_name};

pub struct HoistParallelDims;

impl TccPass for HoistParallelDims {
    const ARGUMENT: &'static str = "tcc-hoist-parallel-dims";
    const SUMMARY: &'static str =
        "Move the parallel iteration dimensions of linalg ops before their reductions";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Collect first: generalizing replaces ops.
        let ops: Vec<_> = collect_ops(root)
            .into_iter()
            .filter(|op| {
                dialect_of(&op_name(op)) == "linalg" && op.attribute("iterator_types").is_ok()
                    || is_named_reduction(op)
            })
            .collect();
        for op in ops {
            let location = op.location();
            if let tcc_dialects::Hoisted::NotPossible =
                unsafe { tcc_dialects::hoist_parallel_dims(op.to_raw()) }
            {
                return Err(PassError::at(
                    location,
                    format!(
                        "cannot move the parallel dimensions of '{}' outermost",
                        op_name(&op)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Named linalg ops whose reduction dimensions may precede parallel ones.
fn is_named_reduction(op: &OperationRef) -> bool {
    op_name(op) == "linalg.reduce"
}
