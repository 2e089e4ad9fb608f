//! Host back end: the host functions of the gpu phase → LLVM dialect →
//! LLVM IR (with the artifact's self-description) → optimized native object
//! → shared library.
//!
//! The shared library is self-contained: host code, the kernels' OpenCL C
//! source (and PTX for NVIDIA, when compiled) and the weights. The runtime loads it without LLVM.

mod lower;
mod writer;

use std::path::Path;
use std::process::Command;

use inkwell::OptimizationLevel;
use inkwell::context::Context as LlvmContext;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use melior::ir::Module;

pub use writer::{ABI_VERSION, FunctionDesc, TensorDesc};

use super::CodegenError;
use super::opencl_c::Program;

/// The host side of an artifact, in the forms `--emit` can write.
pub struct HostOutput {
    pub functions: Vec<FunctionDesc>,
    pub llvm_ir: String,
    pub object: Vec<u8>,
}

fn target_machine() -> Result<TargetMachine, CodegenError> {
    Target::initialize_native(&InitializationConfig::default()).map_err(CodegenError::new)?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple)
        .map_err(|e| CodegenError::new(format!("no LLVM target for {triple}: {e}")))?;
    target
        .create_target_machine(
            &triple,
            "generic",
            "",
            OptimizationLevel::Default,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| CodegenError::new(format!("cannot create a target machine for {triple}")))
}

/// Translates the host functions, optimizes (`default<O2>`) and emits an
/// object for the machine tcc runs on.
/// `ptx`, when given, is stored beside the OpenCL C (`tcc_kernel_ptx_v1`).
pub fn emit(
    mlir: &Module,
    program: &Program,
    ptx: Option<&str>,
    name: &str,
) -> Result<HostOutput, CodegenError> {
    let context = LlvmContext::create();
    let mut writer = writer::HostWriter::new(&context, name);
    let functions = writer.write(mlir, program, ptx)?;
    let module = writer.module;
    module
        .verify()
        .map_err(|e| CodegenError::new(format!("invalid host LLVM IR: {}", e.to_string())))?;
    let machine = target_machine()?;
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    module
        .run_passes("default<O2>", &machine, PassBuilderOptions::create())
        .map_err(|e| CodegenError::new(format!("LLVM optimization failed: {}", e.to_string())))?;
    let llvm_ir = module.print_to_string().to_string();
    let object = machine
        .write_to_memory_buffer(&module, FileType::Object)
        .map_err(|e| CodegenError::new(format!("object emission failed: {}", e.to_string())))?
        .as_slice()
        .to_vec();
    Ok(HostOutput {
        functions,
        llvm_ir,
        object,
    })
}

/// Links an object into a shared library with the system C compiler driver
/// (`$CC`, else `cc`).
pub fn link_shared(object: &[u8], output: &Path) -> Result<(), CodegenError> {
    let directory = tempfile::tempdir()
        .map_err(|e| CodegenError::new(format!("cannot create a temporary directory: {e}")))?;
    let object_path = directory.path().join("model.o");
    let library_path = directory.path().join("model.so");
    std::fs::write(&object_path, object)
        .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", object_path.display())))?;
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let result = Command::new(&compiler)
        .arg("-shared")
        .arg("-nostdlib")
        .arg("-o")
        .arg(&library_path)
        .arg(&object_path)
        .output()
        .map_err(|e| {
            CodegenError::new(format!(
                "cannot run the linker driver '{compiler}': {e} (install gcc or clang, or set CC)"
            ))
        })?;
    if !result.status.success() {
        return Err(CodegenError::new(format!(
            "linking {} failed:\n{}",
            output.display(),
            String::from_utf8_lossy(&result.stderr)
        )));
    }
    let bytes = std::fs::read(&library_path)
        .map_err(|e| CodegenError::new(format!("cannot read the linked library: {e}")))?;
    crate::driver::write_atomically(output, &bytes).map_err(|e| CodegenError::new(format!("{e:#}")))
}
