//! OpenCL C program → LLVM bitcode (clang, libclc linked) → PTX (inkwell,
//! NVPTX).

use std::process::Command;

use inkwell::OptimizationLevel;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Linkage;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple,
};

use super::{PtxOptions, Toolchain};
use crate::back::CodegenError;
use crate::back::opencl_c::Program;

/// The triple clang and libclc use for NVIDIA's OpenCL.
const TRIPLE: &str = "nvptx64-unknown-nvidiacl";
/// Prefix clang gives the body of a kernel it wraps in a callable stub.
const KERNEL_BODY_PREFIX: &str = "__clang_ocl_kern_imp_";

/// The work-item functions libclc's generic NVPTX library leaves to the
/// platform, on the PTX special registers. Global offsets are always 0:
/// the runtime launches without them.
const WORK_ITEM_FUNCTIONS: &str = "\
/* tcc: OpenCL work-item functions on PTX special registers */
size_t __attribute__((overloadable)) get_local_id(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_tid_x() : d == 1 ? __nvvm_read_ptx_sreg_tid_y() : d == 2 ? __nvvm_read_ptx_sreg_tid_z() : 0;
}
size_t __attribute__((overloadable)) get_group_id(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_ctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_ctaid_y() : d == 2 ? __nvvm_read_ptx_sreg_ctaid_z() : 0;
}
size_t __attribute__((overloadable)) get_local_size(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_ntid_x() : d == 1 ? __nvvm_read_ptx_sreg_ntid_y() : d == 2 ? __nvvm_read_ptx_sreg_ntid_z() : 1;
}
size_t __attribute__((overloadable)) get_num_groups(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_nctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_nctaid_y() : d == 2 ? __nvvm_read_ptx_sreg_nctaid_z() : 1;
}
size_t __attribute__((overloadable)) get_global_offset(uint d) { return 0; }
/* bar.sync orders the CTA's shared and global memory accesses too. */
void __attribute__((overloadable)) barrier(cl_mem_fence_flags flags) { __nvvm_bar_sync(0); }
";

/// Compiles `program` (all kernels, one module) to PTX text.
pub fn write_ptx(
    program: &Program,
    options: &PtxOptions,
    toolchain: &Toolchain,
) -> Result<String, CodegenError> {
    let options = &super::toolchain::options_for(options, &program.source);
    let bitcode = clang_to_bitcode(program, options, toolchain)?;
    let ptx = declare_dynamic_local(
        bitcode_to_ptx(&bitcode, program, options)?,
        program,
        options,
    )?;
    // The driver links nothing: a function left external fails in ptxas.
    let unresolved: Vec<&str> = ptx
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix(".extern .func"))
        .map(|rest| rest.trim())
        .collect();
    if !unresolved.is_empty() {
        return Err(CodegenError::new(format!(
            "the kernels' PTX calls functions nothing defines: {}",
            unresolved.join("; ")
        )));
    }
    for kernel in &program.kernels {
        if !ptx.contains(&format!(".entry {}(", kernel.name)) {
            return Err(CodegenError::new(format!(
                "the PTX has no entry for kernel `{}`",
                kernel.name
            )));
        }
    }
    Ok(ptx)
}

/// The declaration of the dynamic local memory the kernels' sm_90a bodies
/// address (`.extern .shared` of [`tcc_kernels::gemm::DYNAMIC_LOCAL_SYMBOL`]).
fn dynamic_local_declaration() -> String {
    format!(
        ".extern .shared .align 16 .b8 {}[];\n",
        tcc_kernels::gemm::DYNAMIC_LOCAL_SYMBOL
    )
}

/// Whether `ptx` (as [`write_ptx`] wrote it) declares dynamic local
/// memory: then the kernels whose sm_90a bodies use it need it at launch,
/// which their launch records say (`back::host_llvm::launch_records`);
/// NVIDIA's OpenCL cannot launch them, and the runtime builds the OpenCL C
/// there instead.
pub fn declares_dynamic_local(ptx: &str) -> bool {
    ptx.contains(&dynamic_local_declaration())
}

/// Declares the dynamic local memory the kernels' sm_90a bodies address
/// after the module's `.address_size`, where a kernel of `program` needs
/// any. Only sm_90a programs compile those bodies; other PTX is returned
/// as it is. (How much each kernel needs is its launch record's, not the
/// PTX's.)
fn declare_dynamic_local(
    ptx: String,
    program: &Program,
    options: &PtxOptions,
) -> Result<String, CodegenError> {
    let needed = program
        .kernels
        .iter()
        .any(|k| k.dynamic_local_bytes.is_some());
    if !needed || !options.arch.ends_with('a') {
        return Ok(ptx);
    }
    let Some(at) = ptx.find(".address_size") else {
        return Err(CodegenError::new(
            "the kernels' PTX has no .address_size directive to declare dynamic local memory after",
        ));
    };
    let line_end = ptx[at..].find('\n').map_or(ptx.len(), |n| at + n + 1);
    let header = format!("\n{}", dynamic_local_declaration());
    Ok(format!("{}{header}{}", &ptx[..line_end], &ptx[line_end..]))
}

/// Runs clang's OpenCL C front end and optimizer with libclc linked in.
fn clang_to_bitcode(
    program: &Program,
    options: &PtxOptions,
    toolchain: &Toolchain,
) -> Result<Vec<u8>, CodegenError> {
    let directory = tempfile::tempdir()
        .map_err(|e| CodegenError::new(format!("cannot create a temporary directory: {e}")))?;
    let source = directory.path().join("kernels.cl");
    let bitcode = directory.path().join("kernels.bc");
    std::fs::write(
        &source,
        format!("{WORK_ITEM_FUNCTIONS}\n{}", program.source),
    )
    .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", source.display())))?;
    let output = Command::new(&toolchain.clang)
        .args([
            "-x",
            "cl",
            "-cl-std=CL1.2",
            "-O3",
            "-c",
            "-emit-llvm",
            "-DTCC_PTX",
        ])
        .arg(format!("--target={TRIPLE}"))
        .arg(format!("-march={}", options.arch))
        .args(["-Xclang", "-target-feature", "-Xclang"])
        .arg(format!("+ptx{}", options.ptx_version()))
        .args(["-Xclang", "-finclude-default-header"])
        .args(["-Xclang", "-mlink-builtin-bitcode", "-Xclang"])
        .arg(&toolchain.libclc)
        .arg("-o")
        .arg(&bitcode)
        .arg(&source)
        .output()
        .map_err(|e| CodegenError::new(format!("cannot run {}: {e}", toolchain.clang.display())))?;
    if !output.status.success() {
        return Err(CodegenError::new(format!(
            "clang could not compile the kernels' OpenCL C for {} (a tcc bug; --ptx=off ships OpenCL C only):\n{}",
            options.arch,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    std::fs::read(&bitcode)
        .map_err(|e| CodegenError::new(format!("cannot read {}: {e}", bitcode.display())))
}

/// Prepares clang's module for a PTX-JIT driver and generates PTX.
fn bitcode_to_ptx(
    bitcode: &[u8],
    program: &Program,
    options: &PtxOptions,
) -> Result<String, CodegenError> {
    Target::initialize_nvptx(&InitializationConfig::default());
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(bitcode, "kernels.bc");
    let module = context
        .create_module_from_ir(buffer)
        .map_err(|e| CodegenError::new(format!("cannot read clang's bitcode: {e}")))?;

    // clang wraps each kernel body in a `noinline` function called from a
    // stub entry (so kernels can be enqueued from kernels); here the body
    // goes back into its entry, where the arguments keep their address
    // space and `noalias`.
    let noinline = Attribute::get_named_enum_kind_id("noinline");
    let alwaysinline =
        context.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
    for function in module.get_functions() {
        let name = function.get_name().to_string_lossy();
        if name.starts_with(KERNEL_BODY_PREFIX) {
            function.remove_enum_attribute(AttributeLoc::Function, noinline);
            function.add_attribute(AttributeLoc::Function, alwaysinline);
        }
    }
    // Everything but the kernels is internal, so that what inlining leaves
    // unused (libclc, the work-item functions) is dropped.
    let kernel_names: std::collections::HashSet<&str> =
        program.kernels.iter().map(|k| k.name.as_str()).collect();
    for function in module.get_functions() {
        let name = function.get_name().to_string_lossy();
        if function.count_basic_blocks() > 0 && !kernel_names.contains(name.as_ref()) {
            function.set_linkage(Linkage::Internal);
        }
    }
    // `reqd_work_group_size` becomes `.reqntid`, which lets ptxas budget
    // registers for the real work-group size instead of 1024 threads.
    for kernel in &program.kernels {
        let function = module.get_function(&kernel.name).ok_or_else(|| {
            CodegenError::new(format!("clang's module has no kernel `{}`", kernel.name))
        })?;
        function.remove_enum_attribute(AttributeLoc::Function, noinline);
        let [x, y, z] = kernel.workgroup_size;
        if x > 0 && y > 0 && z > 0 {
            function.add_attribute(
                AttributeLoc::Function,
                context.create_string_attribute("nvvm.reqntid", &format!("{x},{y},{z}")),
            );
        }
    }

    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple)
        .map_err(|e| CodegenError::new(format!("no NVPTX target in this LLVM: {e}")))?;
    let machine = target
        .create_target_machine(
            &triple,
            &options.arch,
            &format!("+ptx{}", options.ptx_version()),
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            CodegenError::new(format!(
                "cannot create an NVPTX target machine for {}",
                options.arch
            ))
        })?;
    module
        .run_passes("default<O3>", &machine, PassBuilderOptions::create())
        .map_err(|e| {
            CodegenError::new(format!(
                "LLVM optimization of the kernels failed: {}",
                e.to_string()
            ))
        })?;
    module
        .verify()
        .map_err(|e| CodegenError::new(format!("invalid kernel LLVM IR: {}", e.to_string())))?;
    let buffer = machine
        .write_to_memory_buffer(&module, FileType::Assembly)
        .map_err(|e| CodegenError::new(format!("PTX emission failed: {}", e.to_string())))?;
    let text = String::from_utf8_lossy(buffer.as_slice())
        .trim_end_matches('\0')
        .to_string();
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::opencl_c::KernelInfo;

    fn kernel(name: &str, dynamic_local_bytes: Option<u32>) -> KernelInfo {
        KernelInfo {
            name: name.into(),
            kind: "matmul".into(),
            workgroup_size: [256, 1, 1],
            args: Vec::new(),
            scalars: Vec::new(),
            flops: 0,
            dynamic_local_bytes,
        }
    }

    const PTX: &str =
        "//\n.version 8.3\n.target sm_90a\n.address_size 64\n\n.visible .entry big(\n";

    #[test]
    fn dynamic_local_memory_is_declared_after_the_header() {
        let program = Program {
            kernels: vec![kernel("small", None), kernel("big", Some(197632))],
            ..Program::default()
        };
        let sm90a = PtxOptions::with_arch("sm_90a").unwrap();
        let ptx = declare_dynamic_local(PTX.into(), &program, &sm90a).unwrap();
        assert_eq!(
            ptx,
            "//\n.version 8.3\n.target sm_90a\n.address_size 64\n\n.extern .shared .align 16 .b8 tcc_dynamic_local[];\n\n.visible .entry big(\n"
        );
        assert!(declares_dynamic_local(&ptx));
        assert!(!declares_dynamic_local(PTX));
    }

    #[test]
    fn other_programs_and_architectures_are_left_alone() {
        let none = Program {
            kernels: vec![kernel("small", None)],
            ..Program::default()
        };
        let sm90a = PtxOptions::with_arch("sm_90a").unwrap();
        assert_eq!(
            declare_dynamic_local(PTX.into(), &none, &sm90a).unwrap(),
            PTX
        );
        // sm_90 and older compile no sm_90a body, so nothing addresses it.
        let big = Program {
            kernels: vec![kernel("big", Some(1024))],
            ..Program::default()
        };
        let sm80 = PtxOptions::with_arch("sm_80").unwrap();
        assert_eq!(declare_dynamic_local(PTX.into(), &big, &sm80).unwrap(), PTX);
        // A module without a header is a back-end error, not a silent skip.
        assert!(declare_dynamic_local(".entry big(".into(), &big, &sm90a).is_err());
    }
}
