//! `tcc-lower-host-to-llvm`: lowers the host functions of the gpu phase to
//! the LLVM dialect, as the host back end does before translating them to
//! LLVM IR (see `back/host_llvm/lower.rs`).
//!
//! Each host `func.func @f` becomes `llvm.func internal @tcc_entry_f(%rt,
//! %inputs, %outputs) -> i32`, calling the runtime's function table
//! (`tcc_runtime_api`) for every allocation, constant, view, launch and
//! copy. Kernels are numbered as the OpenCL C writer numbers them (module
//! order of the `gpu.func`s), constants in module order of the
//! `memref.global`s. The kernel module and the globals stay: the host back
//! end reads them for the artifact's tables. The pass exists to lit-test
//! the lowering on its own; its errors are located at the op they are
//! about.

use melior::Context;
use melior::ir::operation::OperationLike;

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};

pub struct LowerHostToLlvm;

impl TccPass for LowerHostToLlvm {
    const ARGUMENT: &'static str = "tcc-lower-host-to-llvm";
    const SUMMARY: &'static str =
        "Lower the host functions to LLVM-dialect entries calling the runtime's function table";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["llvm"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        crate::back::host_llvm::lower_module(context, module)
            .map(|_| ())
            .map_err(|(op, e)| PassError::at(op.location(), e.message))
    }
}
