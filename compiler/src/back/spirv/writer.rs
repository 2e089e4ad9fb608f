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
use crate::ir::util::{body_ops, body_ops_named, ops_named, string_value};

/// One kernel as a SPIR-V binary.
pub struct SpirvKernel {
    pub name: String,
    pub binary: Vec<u8>,
}

/// The SPIR-V environment kernels are written for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Environment {
    /// OpenCL: Kernel capability, Physical64 addressing, OpenCL memory
    /// model (for `clCreateProgramWithIL`); `Int8` (OpenCL C's `char`, in
    /// every OpenCL) for boolean buffers, stored a byte each.
    #[default]
    OpenCl,
    /// Vulkan 1.1+: Shader capability, logical addressing, GLSL450 memory
    /// model; buffers are storage buffers of descriptor set 0 (binding =
    /// argument number), scalars a push-constant block, the work-group size
    /// the `LocalSize` of each entry point.
    Vulkan,
}

impl Environment {
    fn target_env(self) -> &'static str {
        match self {
            Environment::OpenCl => {
                "#spirv.target_env<#spirv.vce<v1.0, [Addresses, Int64, Int8, Kernel], []>, #spirv.resource_limits<>>"
            }
            // SPIR-V 1.3 (Vulkan 1.1) with storage buffers; the
            // work-group limits are Vulkan's guaranteed minimum for
            // invocations (lavapipe and NVIDIA give 1024).
            Environment::Vulkan => {
                "#spirv.target_env<#spirv.vce<v1.3, [Shader, Int64], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<max_compute_workgroup_invocations = 1024, max_compute_workgroup_size = [1024, 1024, 64]>>"
            }
        }
    }

    /// The conversion: for OpenCL through `gpu-module-to-binary`; for
    /// Vulkan up to the lowered `spirv.module`s, which upstream puts beside
    /// their `gpu.module`s (not inside, as for Kernel targets), so the
    /// writer moves them in before serializing ([`BINARY`]).
    fn pipeline(self) -> &'static str {
        match self {
            Environment::OpenCl => {
                "builtin.module(\
spirv-attach-target{caps=Addresses,Int64,Int8,Kernel ver=v1.0},\
gpu.module(fold-memref-alias-ops,lower-affine,arith-expand,canonicalize,map-memref-spirv-storage-class{client-api=opencl},convert-math-to-spirv),\
convert-gpu-to-spirv{use-64bit-index=true},\
gpu.module(spirv.module(spirv-lower-abi-attrs,spirv-update-vce)),\
gpu-module-to-binary)"
            }
            Environment::Vulkan => {
                "builtin.module(\
spirv-attach-target{caps=Shader,Int64 exts=SPV_KHR_storage_buffer_storage_class ver=v1.3 client_api=Vulkan},\
gpu.module(fold-memref-alias-ops,lower-affine,arith-expand,canonicalize,map-memref-spirv-storage-class{client-api=vulkan},convert-math-to-spirv),\
convert-gpu-to-spirv{use-64bit-index=false},\
spirv.module(spirv-lower-abi-attrs,spirv-update-vce))"
            }
        }
    }

    /// `opencl` or `vulkan`.
    pub fn name(self) -> &'static str {
        match self {
            Environment::OpenCl => "opencl",
            Environment::Vulkan => "vulkan",
        }
    }
}

/// Serializes each `gpu.module`'s nested `spirv.module` (Vulkan's second step).
const BINARY: &str = "builtin.module(gpu-module-to-binary)";

/// Moves every top-level `spirv.module @__spv__NAME` (upstream's Shader
/// output) into the `gpu.module @NAME` it was converted from, where
/// `gpu-module-to-binary` serializes it.
fn nest_spirv_modules(module: &Module) -> Result<(), CodegenError> {
    let top = body_ops(module.as_operation());
    let gpu_modules: Vec<(String, mlir_sys::MlirOperation)> = top
        .iter()
        .filter(|op| op.name().as_string_ref().as_str().ok() == Some("gpu.module"))
        .filter_map(|op| {
            let name = op.attribute("sym_name").ok().and_then(string_value)?;
            Some((name, op.to_raw()))
        })
        .collect();
    for op in top
        .iter()
        .filter(|op| op.name().as_string_ref().as_str().ok() == Some("spirv.module"))
    {
        let name = op
            .attribute("sym_name")
            .ok()
            .and_then(string_value)
            .unwrap_or_default();
        let parent = name.strip_prefix("__spv__").unwrap_or(&name);
        let (_, gpu_module) = gpu_modules
            .iter()
            .find(|(n, _)| n == parent)
            .ok_or_else(|| {
                CodegenError::at(
                    op,
                    format!("spirv.module @{name} has no gpu.module @{parent}"),
                )
            })?;
        // SAFETY: both operations are live in `module`; the spirv.module is
        // detached before the gpu.module's block takes ownership of it.
        unsafe {
            let raw = op.to_raw();
            mlir_sys::mlirOperationRemoveFromParent(raw);
            let block =
                mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(*gpu_module, 0));
            mlir_sys::mlirBlockInsertOwnedOperation(block, 0, raw);
        }
    }
    Ok(())
}

/// Runs a textual pass pipeline on a module (the driver's, with its
/// diagnostics and timing); the error says why it failed.
pub type PipelineRunner<'a> = dyn Fn(&mut Module, &str) -> Result<(), String> + 'a;

/// Translates every kernel of `module` (after the gpu phase) to SPIR-V for
/// `environment`, one module per kernel, running upstream's conversion
/// through `run_pipeline`.
pub fn write_kernels(
    context: &melior::Context,
    module: &Module,
    environment: Environment,
    run_pipeline: &PipelineRunner,
) -> Result<Vec<SpirvKernel>, CodegenError> {
    convert(context, module, environment, false, run_pipeline)
}

/// Translates every kernel of `module` into one SPIR-V module with one
/// entry point per kernel (named after it), as an artifact ships it: the
/// OpenCL driver builds it as one program, the Vulkan driver makes one
/// shader module and a pipeline per entry point.
pub fn write_program(
    context: &melior::Context,
    module: &Module,
    environment: Environment,
    run_pipeline: &PipelineRunner,
) -> Result<SpirvProgram, CodegenError> {
    let kernels: Vec<String> = ops_named(module.as_operation(), "gpu.func")
        .iter()
        .map(|k| {
            k.attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default()
        })
        .collect();
    let mut binaries = convert(context, module, environment, true, run_pipeline)?;
    let binary = match binaries.len() {
        0 => Vec::new(),
        1 => binaries.remove(0).binary,
        n => {
            return Err(CodegenError::new(format!(
                "SPIR-V conversion made {n} modules of one"
            )));
        }
    };
    Ok(SpirvProgram { binary, kernels })
}

/// Every kernel of a module in one SPIR-V binary.
pub struct SpirvProgram {
    /// The SPIR-V module (empty when there are no kernels).
    pub binary: Vec<u8>,
    /// The entry points, in the module's kernel order (the host code's
    /// kernel numbers).
    pub kernels: Vec<String>,
}

fn convert(
    context: &melior::Context,
    module: &Module,
    environment: Environment,
    one_module: bool,
    run_pipeline: &PipelineRunner,
) -> Result<Vec<SpirvKernel>, CodegenError> {
    // The SPIR-V kernels would need their extents as push constants or
    // arguments (issue 33): not yet.
    super::super::refuse_dynamic(module, "the SPIR-V writer")?;
    let location = Location::unknown(context);
    let mut spirv = Module::new(location);
    let kernels: Vec<OperationRef> = ops_named(module.as_operation(), "gpu.func");
    if kernels.is_empty() {
        return Ok(Vec::new());
    }
    let target = Attribute::parse(context, environment.target_env())
        .ok_or_else(|| CodegenError::new("cannot build the SPIR-V target environment"))?;
    let mut shared: Option<mlir_sys::MlirOperation> = None;
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
        let block = kernel.region(0).ok().and_then(|r| r.first_block());
        if let Some(block) = block {
            for index in 0..block.argument_count() {
                // 16-bit floats need Float16 and 16-bit storage, which the
                // Vulkan environment does not declare (upstream's narrow-type
                // emulation gives wrong values for them).
                if environment == Environment::Vulkan
                    && let Ok(argument) = block.argument(index)
                    && crate::ir::memref::MemRefLayout::of(melior::ir::ValueLike::r#type(&argument))
                        .is_some_and(|layout| layout.element.is_f16() || layout.element.is_bf16())
                {
                    return Err(CodegenError::at(
                        kernel,
                        format!(
                            "kernel {name}: 16-bit float buffers (argument {index}) are not supported by the Vulkan SPIR-V back end; use an OpenCL C target"
                        ),
                    ));
                }
                // The kernels target the OpenCL profile without the Float64
                // capability; Vulkan's GLSL.std.450 has no float64 exp, log
                // or the other transcendentals.
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
        let container = match shared {
            Some(gpu_module) if one_module => gpu_module,
            _ => {
                let region = Region::new();
                region.append_block(Block::new(&[]));
                let module_name = if one_module { "tcc_kernels" } else { &name };
                let gpu_module = OperationBuilder::new("gpu.module", kernel.location())
                    .add_attributes(&[
                        (
                            Identifier::new(context, "sym_name"),
                            StringAttribute::new(context, module_name).into(),
                        ),
                        (Identifier::new(context, "spirv.target_env"), target),
                    ])
                    .add_regions([region])
                    .build()
                    .map_err(|e| {
                        CodegenError::at(kernel, format!("cannot build a gpu.module: {e}"))
                    })?;
                let gpu_module = spirv.body().append_operation(gpu_module).to_raw();
                shared = Some(gpu_module);
                gpu_module
            }
        };
        // SAFETY: `container` is a live gpu.module of `spirv` with one
        // block; the clone is handed to that block, which owns it.
        unsafe {
            let clone = mlir_sys::mlirOperationClone(kernel.to_raw());
            let mut clone_ref = OperationRefMut::from_raw(clone);
            clone_ref.set_discardable_attribute("spirv.entry_point_abi", abi);
            let block =
                mlir_sys::mlirRegionGetFirstBlock(mlir_sys::mlirOperationGetRegion(container, 0));
            mlir_sys::mlirBlockAppendOwnedOperation(block, clone);
        }
    }
    spirv
        .as_operation_mut()
        .set_discardable_attribute("gpu.container_module", Attribute::unit(context));
    // Vulkan's GLSL.std.450 has no erf and leaves min/max of signed zeros
    // undefined: both become arithmetic and selects first.
    // SAFETY: `spirv` is live and owned here.
    if environment == Environment::Vulkan
        && !unsafe { tcc_dialects::lower_math_for_shader(spirv.as_operation().to_raw()) }
    {
        return Err(CodegenError::new(
            "the Vulkan math rewrite (erf, signed-zero min/max) did not converge",
        ));
    }
    run_pipeline(&mut spirv, environment.pipeline())
        .map_err(|e| CodegenError::new(format!("SPIR-V conversion failed:\n{e}")))?;
    if environment == Environment::Vulkan {
        nest_spirv_modules(&spirv)?;
        run_pipeline(&mut spirv, BINARY)
            .map_err(|e| CodegenError::new(format!("SPIR-V serialization failed:\n{e}")))?;
    }

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
