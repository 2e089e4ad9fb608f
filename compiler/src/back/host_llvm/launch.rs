//! Each kernel's launch record (`tcc_abi::LaunchRecord`): what launching
//! it takes (name, work-group size, CUDA dynamic local memory, flops,
//! arguments), derived once from the translated program. The host writer
//! lays the records out in the artifact's table (`tcc_kernel_desc`), its
//! description holds them, and the metadata JSON (`tcc inspect`) is built
//! from them; the runtime reads them from the table, so that nothing a
//! launch needs travels as text inside the kernels.

use tcc_abi::{KernelArgRecord, LaunchRecord};
use tcc_kernels::Storage;

use crate::back::CodegenError;
use crate::back::opencl_c::{IndexWidth, KernelInfo, Program};

/// The `enum tcc_dtype` of elements stored as `storage`.
fn storage_dtype(storage: Storage) -> u32 {
    match storage {
        Storage::F16 => tcc_abi::DTYPE_F16,
        Storage::BF16 => tcc_abi::DTYPE_BF16,
        Storage::F32 => tcc_abi::DTYPE_F32,
        Storage::F64 => tcc_abi::DTYPE_F64,
        Storage::Bool => tcc_abi::DTYPE_BOOL,
        Storage::I8 => tcc_abi::DTYPE_I8,
        Storage::I16 => tcc_abi::DTYPE_I16,
        Storage::I32 => tcc_abi::DTYPE_I32,
        Storage::I64 => tcc_abi::DTYPE_I64,
    }
}

/// One kernel's record. `dynamic_local` says whether the PTX compiled the
/// bodies that use CUDA dynamic local memory (sm_90a PTX only).
/// `dynamic_extent`: what a symbolic extent counts as in a buffer's
/// elements (the largest declared maximum, an upper bound); `scalar`: the
/// kind of the kernel's scalar arguments (the program's index width).
fn record(
    kernel: &KernelInfo,
    dynamic_local: bool,
    dynamic_extent: i64,
    scalar: u32,
) -> Result<LaunchRecord, CodegenError> {
    let mut workgroup_size = [1u32; 3];
    for (size, &w) in workgroup_size.iter_mut().zip(&kernel.workgroup_size) {
        *size = u32::try_from(w).ok().filter(|&w| w > 0).ok_or_else(|| {
            CodegenError::new(format!(
                "kernel `{}`: work-group size {:?} does not fit a launch record",
                kernel.name, kernel.workgroup_size
            ))
        })?;
    }
    let mut args = kernel
        .args
        .iter()
        .map(|arg| {
            let elements = arg
                .shape
                .iter()
                .map(|&d| {
                    if d == crate::ir::memref::DYNAMIC {
                        dynamic_extent.max(1)
                    } else {
                        d
                    }
                })
                .try_fold(1u64, |n, d| n.checked_mul(u64::try_from(d).ok()?))
                .ok_or_else(|| {
                    CodegenError::new(format!(
                        "kernel `{}`: an argument of shape {:?} has no static element count",
                        kernel.name, arg.shape
                    ))
                })?;
            Ok(KernelArgRecord {
                kind: tcc_abi::ARG_BUFFER,
                dtype: storage_dtype(arg.storage),
                elements,
                written: arg.written,
            })
        })
        .collect::<Result<Vec<_>, CodegenError>>()?;
    // The scalar arguments (a kernel on a symbolic dimension) follow the
    // buffers, each a `tcc_index`.
    args.extend(kernel.scalars.iter().map(|_| KernelArgRecord {
        kind: scalar,
        ..KernelArgRecord::default()
    }));
    Ok(LaunchRecord {
        name: kernel.name.clone(),
        flops: kernel.flops,
        workgroup_size,
        dynamic_local_bytes: kernel
            .dynamic_local_bytes
            .filter(|_| dynamic_local)
            .unwrap_or(0),
        args,
    })
}

/// The launch records of `program`'s kernels, in program order (the index
/// a launch names). `ptx` is the artifact's PTX, if any: a kernel's
/// dynamic local memory counts only where the PTX declares it
/// ([`crate::back::ptx::declares_dynamic_local`]).
pub fn launch_records(
    program: &Program,
    ptx: Option<&str>,
) -> Result<Vec<LaunchRecord>, CodegenError> {
    let dynamic_local = ptx.is_some_and(crate::back::ptx::declares_dynamic_local);
    let scalar = match program.index_width {
        IndexWidth::Bits32 => tcc_abi::ARG_I32,
        IndexWidth::Bits64 => tcc_abi::ARG_I64,
    };
    program
        .kernels
        .iter()
        .map(|k| record(k, dynamic_local, program.dynamic_extent, scalar))
        .collect()
}
