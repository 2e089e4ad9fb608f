//! Builds one `gpu.module` per kernel (with the OpenCL SPIR-V target
//! environment and each kernel's `spirv.entry_point_abi`), runs upstream
//! `convert-gpu-to-spirv` and `gpu-module-to-binary` on it, and reads the
//! binaries back.

use melior::ir::attribute::{Attribute, AttributeLike, StringAttribute};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::{Block, BlockLike, Identifier, Location, Module, Region, RegionLike, TypeLike};

use crate::back::CodegenError;
use crate::ir::util::{body_ops_named, ops_named, string_value};

/// One kernel as a SPIR-V binary.
pub struct SpirvKernel {
    pub name: String,
    pub binary: Vec<u8>,
}

const TARGET_ENV: &str =
    "#spirv.target_env<#spirv.vce<v1.0, [Addresses, Int64, Kernel], []>, #spirv.resource_limits<>>";

const PIPELINE: &str = "builtin.module(\
spirv-attach-target{caps=Addresses,Int64,Kernel ver=v1.0},\
gpu.module(fold-memref-alias-ops,lower-affine,arith-expand,canonicalize,map-memref-spirv-storage-class{client-api=opencl},convert-math-to-spirv),\
convert-gpu-to-spirv{use-64bit-index=true},\
gpu.module(spirv.module(spirv-lower-abi-attrs,spirv-update-vce)),\
gpu-module-to-binary)";

/// Runs a textual pass pipeline on a module (the driver's, with its
/// diagnostics and timing); the error says why it failed.
pub type PipelineRunner<'a> = dyn Fn(&mut Module, &str) -> Result<(), String> + 'a;

/// Translates every kernel of `module` (after the gpu phase) to SPIR-V,
/// running upstream's conversion through `run_pipeline`.
pub fn write_kernels(
    context: &melior::Context,
    module: &Module,
    run_pipeline: &PipelineRunner,
) -> Result<Vec<SpirvKernel>, CodegenError> {
    let location = Location::unknown(context);
    let mut spirv = Module::new(location);
    let kernels: Vec<OperationRef> = ops_named(module.as_operation(), "gpu.func");
    if kernels.is_empty() {
        return Ok(Vec::new());
    }
    for kernel in &kernels {
        let name = kernel
            .attribute("sym_name")
            .ok()
            .and_then(string_value)
            .unwrap_or_default();
        if crate::ir::strategy::of(kernel).is_some_and(|s| s.is_template()) {
            return Err(CodegenError::at(
                kernel,
                format!(
                    "kernel {name} is an OpenCL C template; SPIR-V needs the portable pipeline"
                ),
            ));
        }
        // Upstream's SPIR-V conversion cannot store booleans in buffers.
        let block = kernel.region(0).ok().and_then(|r| r.first_block());
        if let Some(block) = block {
            for index in 0..block.argument_count() {
                if let Ok(argument) = block.argument(index)
                    && crate::ir::memref::MemRefLayout::of(melior::ir::ValueLike::r#type(&argument))
                        .is_some_and(|layout| {
                            layout.element.is_integer()
                                && unsafe {
                                    mlir_sys::mlirIntegerTypeGetWidth(layout.element.to_raw()) == 1
                                }
                        })
                {
                    return Err(CodegenError::at(
                        kernel,
                        format!(
                            "kernel {name}: boolean buffers (argument {index}) are not supported by the SPIR-V back end; use --emit=opencl-c"
                        ),
                    ));
                }
                // The kernels target the OpenCL profile without the Float64
                // capability.
                if let Ok(argument) = block.argument(index)
                    && crate::ir::memref::MemRefLayout::of(melior::ir::ValueLike::r#type(&argument))
                        .is_some_and(|layout| layout.element.is_f64())
                {
                    return Err(CodegenError::at(
                        kernel,
                        format!(
                            "kernel {name}: float64 buffers (argument {index}) are not supported by the SPIR-V back end; use --emit=opencl-c"
                        ),
                    ));
                }
            }
        }
        let sizes = crate::ir::dense::int_array_attribute(*kernel, "known_block_size")
            .unwrap_or_default()
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let abi = Attribute::parse(
            context,
            &format!("#spirv.entry_point_abi<workgroup_size = [{sizes}]>"),
        )
        .ok_or_else(|| {
            CodegenError::at(
                kernel,
                format!("kernel {name}: cannot build its entry point ABI"),
            )
        })?;
        let target = Attribute::parse(context, TARGET_ENV)
            .ok_or_else(|| CodegenError::new("cannot build the SPIR-V target environment"))?;
        let region = Region::new();
        let block = region.append_block(Block::new(&[]));
        let clone = unsafe {
            melior::ir::operation::Operation::from_raw(mlir_sys::mlirOperationClone(
                kernel.to_raw(),
            ))
        };
        let clone = block.append_operation(clone);
        let mut clone = unsafe { OperationRefMut::from_raw(clone.to_raw()) };
        clone.set_discardable_attribute("spirv.entry_point_abi", abi);
        let gpu_module = OperationBuilder::new("gpu.module", kernel.location())
            .add_attributes(&[
                (
                    Identifier::new(context, "sym_name"),
                    StringAttribute::new(context, &name).into(),
                ),
                (Identifier::new(context, "spirv.target_env"), target),
            ])
            .add_regions([region])
            .build()
            .map_err(|e| CodegenError::at(kernel, format!("cannot build a gpu.module: {e}")))?;
        spirv.body().append_operation(gpu_module);
    }
    spirv
        .as_operation_mut()
        .set_discardable_attribute("gpu.container_module", Attribute::unit(context));
    run_pipeline(&mut spirv, PIPELINE)
        .map_err(|e| CodegenError::new(format!("SPIR-V conversion failed:\n{e}")))?;

    let mut result = Vec::new();
    for binary in body_ops_named(spirv.as_operation(), "gpu.binary") {
        let name = binary
            .attribute("sym_name")
            .ok()
            .and_then(string_value)
            .unwrap_or_default();
        let objects = binary
            .attribute("objects")
            .map_err(|_| CodegenError::at(&binary, "gpu.binary without objects"))?;
        let object = unsafe { mlir_sys::mlirArrayAttrGetElement(objects.to_raw(), 0) };
        let bytes = unsafe { mlir_sys::mlirGPUObjectAttrGetObject(object) };
        let bytes =
            unsafe { std::slice::from_raw_parts(bytes.data as *const u8, bytes.length) }.to_vec();
        result.push(SpirvKernel {
            name,
            binary: bytes,
        });
    }
    Ok(result)
}
