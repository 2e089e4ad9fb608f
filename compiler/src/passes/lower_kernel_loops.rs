//! `tcc-lower-kernel-loops`: lowers the linalg ops (and `tcc.conv`s, which
//! implement linalg's structured-op interface) inside each kernel
//! (`gpu.func`) to `scf.parallel`/`scf.for` loop nests with upstream's
//! `linalgOpToParallelLoops`, op by op. Only kernels whose strategy is
//! `#tcc.loops` are lowered: the others are instantiated from a template
//! by the back end and keep their linalg ops. The mapping pass then
//! places the parallel nests onto work-items.

use melior::Context;
use melior::ir::operation::OperationLike;

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::strategy::{self, KernelStrategy};
use crate::ir::util::{collect_ops, op_name};

pub struct LowerKernelLoops;

impl TccPass for LowerKernelLoops {
    const ARGUMENT: &'static str = "tcc-lower-kernel-loops";
    const SUMMARY: &'static str = "Lower the linalg ops inside kernels to parallel loop nests";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["scf", "arith", "memref", "affine"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Kernels instantiated from a template keep their linalg ops.
        let kernels: Vec<_> = collect_ops(module)
            .into_iter()
            .filter(|op| {
                op_name(op) == "gpu.func"
                    && matches!(strategy::of(op), None | Some(KernelStrategy::Loops { .. }))
            })
            .collect();
        for kernel in kernels {
            let ops: Vec<_> = collect_ops(kernel)
                .into_iter()
                .skip(1)
                .filter(|op| {
                    crate::ir::conv::is_linalg_or_conv(&op_name(op))
                        && op
                            .parent_operation()
                            .is_some_and(|p| p.to_raw().ptr == kernel.to_raw().ptr)
                })
                .collect();
            for op in ops {
                let (location, name) = (op.location(), op_name(&op));
                if !unsafe { tcc_dialects::lower_to_parallel_loops(op.to_raw()) } {
                    return Err(PassError::at(
                        location,
                        format!("cannot lower '{name}' to loops inside a kernel"),
                    ));
                }
            }
        }
        Ok(())
    }
}
