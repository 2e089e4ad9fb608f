//! Host back end: the host functions of the gpu phase → LLVM dialect →
//! LLVM IR (with the artifact's self-description) → optimized native object
//! → shared library.
//!
//! The shared library is self-contained: host code, the kernels' OpenCL C
//! source (and PTX for NVIDIA, when compiled) and the weights. The runtime loads it without LLVM.

mod builder;
mod launch;
mod lower;

pub use lower::lower_module;
mod weights;
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

pub use launch::launch_records;
pub use writer::{ABI_VERSION, FunctionDesc, TensorDesc};

use super::CodegenError;
use super::opencl_c::Program;

/// The host side of an artifact, in the forms `--emit` can write.
pub struct HostOutput {
    pub functions: Vec<FunctionDesc>,
    /// The module as LLVM IR text: empty unless [`HostOptions::llvm_ir`].
    pub llvm_ir: String,
    pub object: Vec<u8>,
}

/// How the host side is emitted beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct HostOptions {
    /// Prefix of every exported symbol (`tcc compile --name=NAME` gives
    /// `NAME_`): several models then link into one program.
    pub symbol_prefix: String,
    /// The JSON the artifact returns from `tcc_metadata_v1` (for `tcc
    /// inspect`).
    pub metadata: Option<String>,
    /// The LLVM target triple of the host code (`--host-triple`); `None`
    /// for the machine tcc runs on.
    pub triple: Option<String>,
    /// Write the constants into this ELF object (link it with the host
    /// object: [`link_library`]) instead of into the LLVM module:
    /// weights then reach the file without being copied into LLVM.
    pub weights_object: Option<std::path::PathBuf>,
    /// Print the module as LLVM IR into [`HostOutput::llvm_ir`] (costly:
    /// inline weights print as text).
    pub llvm_ir: bool,
    /// The kernel program as a binary of this `tcc_source_kind` (SPIR-V
    /// for `--target=vulkan`) instead of the program's OpenCL C.
    pub kernel_binary: Option<(u32, Vec<u8>)>,
}

/// The host triples `--host-triple` accepts: LLVM's x86 and AArch64 back
/// ends are linked into tcc.
pub const HOST_TRIPLES: &[&str] = &["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

fn target_machine(triple: Option<&str>) -> Result<TargetMachine, CodegenError> {
    let triple = match triple {
        None => {
            Target::initialize_native(&InitializationConfig::default())
                .map_err(CodegenError::new)?;
            TargetMachine::get_default_triple()
        }
        Some(text) => {
            if text.starts_with("aarch64") || text.starts_with("arm64") {
                Target::initialize_aarch64(&InitializationConfig::default());
            } else if text.starts_with("x86_64") {
                Target::initialize_x86(&InitializationConfig::default());
            } else {
                return Err(CodegenError::new(format!(
                    "--host-triple={text}: tcc's LLVM has the x86-64 and AArch64 back ends ({})",
                    HOST_TRIPLES.join(", ")
                )));
            }
            inkwell::targets::TargetTriple::create(text)
        }
    };
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
    emit_with(mlir, program, ptx, name, &HostOptions::default())
}

/// As [`emit`], with a symbol prefix, metadata and a target triple.
pub fn emit_with(
    mlir: &Module,
    program: &Program,
    ptx: Option<&str>,
    name: &str,
    options: &HostOptions,
) -> Result<HostOutput, CodegenError> {
    let context = LlvmContext::create();
    let mut writer = writer::HostWriter::new(&context, name)
        .with_prefix(&options.symbol_prefix)
        .with_kernel_binary(options.kernel_binary.clone());
    let weights = options
        .weights_object
        .as_deref()
        .map(|path| (path, options.triple.as_deref()));
    let functions = writer.write(mlir, program, ptx, options.metadata.as_deref(), weights)?;
    let module = writer.module;
    module
        .verify()
        .map_err(|e| CodegenError::new(format!("invalid host LLVM IR: {}", e.to_string())))?;
    let machine = target_machine(options.triple.as_deref())?;
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    module
        .run_passes("default<O2>", &machine, PassBuilderOptions::create())
        .map_err(|e| CodegenError::new(format!("LLVM optimization failed: {}", e.to_string())))?;
    let llvm_ir = if options.llvm_ir {
        module.print_to_string().to_string()
    } else {
        String::new()
    };
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

/// The host side as objects, every constant outside LLVM: the host object
/// (which declares the weights) and the weights object beside it (written
/// by [`weights`] from the attributes' bytes), in a temporary directory
/// that lives as long as this value. Every binary output is made of them:
/// a shared library ([`HostObjects::link`]), one relocatable object
/// ([`HostObjects::relocatable`], `--emit=obj`) or a static library of the
/// two ([`HostObjects::static_library`], `--emit=staticlib`).
pub struct HostObjects {
    pub functions: Vec<FunctionDesc>,
    pub object: Vec<u8>,
    weights: std::path::PathBuf,
    triple: Option<String>,
    directory: tempfile::TempDir,
}

/// As [`emit_with`], with the weights written into an object of their own
/// (`options.weights_object` is ignored: the object lives in a temporary
/// directory of the result).
pub fn emit_objects(
    mlir: &Module,
    program: &Program,
    ptx: Option<&str>,
    name: &str,
    options: &HostOptions,
) -> Result<HostObjects, CodegenError> {
    let directory = tempfile::tempdir()
        .map_err(|e| CodegenError::new(format!("cannot create a temporary directory: {e}")))?;
    let weights = directory.path().join("weights.o");
    let host = emit_with(
        mlir,
        program,
        ptx,
        name,
        &HostOptions {
            weights_object: Some(weights.clone()),
            ..options.clone()
        },
    )?;
    Ok(HostObjects {
        functions: host.functions,
        object: host.object,
        weights,
        triple: options.triple.clone(),
        directory,
    })
}

/// The LLVM 22 linker (`make deps` installs lld-22).
fn lld() -> String {
    ["/usr/lib/llvm-22/bin/ld.lld", "ld.lld-22"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map_or_else(|| "ld.lld".to_string(), |p| p.to_string())
}

impl HostObjects {
    /// The weights object's path.
    pub fn weights(&self) -> &Path {
        &self.weights
    }

    /// Links the two objects into a shared library in a temporary
    /// directory, for `output` (the driver writes it there:
    /// `driver::link`).
    /// `c_compiler` links a native library (the driver's `$CC`).
    pub fn link_library(
        &self,
        output: &Path,
        c_compiler: &str,
    ) -> Result<LinkedLibrary, CodegenError> {
        link_library(
            &self.object,
            &[&self.weights],
            output,
            self.triple.as_deref(),
            c_compiler,
        )
    }

    /// The two objects as one relocatable object: what `--emit=obj`
    /// writes ([`weights::merge_into_host`]). The weights never enter LLVM,
    /// and are mapped from the weights object rather than read; the result
    /// is a file in this value's temporary directory, which the driver
    /// copies to the output.
    pub fn relocatable(&self) -> Result<std::path::PathBuf, CodegenError> {
        let merged = self.directory.path().join("merged.o");
        let file = std::fs::File::open(&self.weights).map_err(|e| {
            CodegenError::new(format!("cannot read {}: {e}", self.weights.display()))
        })?;
        // SAFETY: a read-only mapping of a file in this value's own
        // temporary directory, which nothing writes while it is mapped.
        let constants = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| {
            CodegenError::new(format!("cannot map {}: {e}", self.weights.display()))
        })?;
        weights::merge_into_host(&self.object, &constants, &merged)?;
        Ok(merged)
    }

    /// A static library (GNU `ar` with a symbol index) of two members,
    /// `MEMBER.o` (the host code) and `MEMBER_weights.o`: a program linking
    /// it pulls the weights in through the host object's references. It is
    /// written to a file in this value's temporary directory (returned),
    /// the weights object mapped rather than read, so the weights are not
    /// copied into this process's memory.
    pub fn static_library(&self, member: &str) -> Result<std::path::PathBuf, CodegenError> {
        let cannot = |what: &str, path: &Path, e: std::io::Error| {
            CodegenError::new(format!("cannot {what} {}: {e}", path.display()))
        };
        let file =
            std::fs::File::open(&self.weights).map_err(|e| cannot("read", &self.weights, e))?;
        // SAFETY: a read-only private mapping of a file in this value's own
        // temporary directory, which nothing else writes while it is mapped.
        let weights =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| cannot("map", &self.weights, e))?;
        let library = self.directory.path().join("library.a");
        let out = std::fs::File::create(&library).map_err(|e| cannot("create", &library, e))?;
        archive(
            std::io::BufWriter::with_capacity(1 << 20, out),
            &[
                (&self.object, format!("{member}.o")),
                (&weights, format!("{member}_weights.o")),
            ],
        )
        .map_err(|e| cannot("write the static library", &library, e))?;
        Ok(library)
    }
}

/// Writes a GNU `ar` archive with a symbol index of `members` (bytes,
/// name) to `out`, by `ar_archive_writer`, so no `ar` tool is needed.
fn archive<W: std::io::Write + std::io::Seek>(
    mut out: W,
    members: &[(&[u8], String)],
) -> std::io::Result<()> {
    use ar_archive_writer::{ArchiveKind, DEFAULT_OBJECT_READER, NewArchiveMember};
    let members: Vec<_> = members
        .iter()
        .map(|(bytes, name)| NewArchiveMember::new(*bytes, &DEFAULT_OBJECT_READER, name.clone()))
        .collect();
    ar_archive_writer::write_archive_to_stream(&mut out, &members, ArchiveKind::Gnu, false, None)?;
    out.flush()
}

/// A shared library linked into a temporary directory (removed when this
/// is dropped); the driver writes it to its output (`driver::link`).
pub struct LinkedLibrary {
    directory: tempfile::TempDir,
}

impl LinkedLibrary {
    /// Where the library lies until this is dropped.
    pub fn path(&self) -> std::path::PathBuf {
        self.directory.path().join("model.so")
    }
}

/// Links a host object and more objects (the weights object of
/// [`HostOptions::weights_object`]) into a shared library for `triple`
/// (`None`: this machine, with `$CC`; another triple: with LLVM's
/// `ld.lld`, which links any ELF target, as the object needs no C
/// library). `output` names the library in errors.
pub fn link_library(
    object: &[u8],
    extra: &[&Path],
    output: &Path,
    triple: Option<&str>,
    c_compiler: &str,
) -> Result<LinkedLibrary, CodegenError> {
    let directory = tempfile::tempdir()
        .map_err(|e| CodegenError::new(format!("cannot create a temporary directory: {e}")))?;
    let object_path = directory.path().join("model.o");
    let library_path = directory.path().join("model.so");
    std::fs::write(&object_path, object)
        .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", object_path.display())))?;
    let native = triple.is_none();
    let compiler = if native {
        c_compiler.to_string()
    } else {
        lld()
    };
    let mut command = Command::new(&compiler);
    if native {
        command.arg("-nostdlib");
    }
    let result = command
        .arg("-shared")
        .arg("-o")
        .arg(&library_path)
        .arg(&object_path)
        .args(extra)
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
    Ok(LinkedLibrary { directory })
}
