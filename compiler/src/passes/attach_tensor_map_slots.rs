//! `tcc-attach-tensor-map-slots`: gives every GEMM kernel that may take the
//! TF32 `wgmma` body (its `#tcc.gemm` tile, work-group and shape allow it:
//! `tcc_kernels::gemm::tensor_map_slot_bytes`) a scratch buffer of one
//! 128-byte slot per work-group, as one more kernel argument, and marks the
//! kernel `tcc.tensor_map_slots`.
//!
//! Why: that body copies A's tiles with the tensor memory accelerator, which
//! reads a tensor map (A's address, extents, row stride, box and swizzle)
//! from global memory. OpenCL has no host API for tensor maps, so each
//! work-group builds its own in its slot. The buffer is a `memref.alloc`
//! before each launch, which `tcc-plan-memory` places in the arena like any
//! intermediate (dead once the kernel has run; what it held does not
//! matter). Only modules for the `nvidia` target are touched; the compile
//! driver runs the pass at `--precision=tf32` only, where the body can be
//! taken.

use melior::Context;
use melior::ir::attribute::DenseI32ArrayAttribute;
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::r#type::IntegerType;
use melior::ir::{Attribute, BlockLike, Identifier, Type, ValueLike};

use super::attach_split_k_scratch::{append_kernel_arguments, buffer_type};
use super::outline_kernels::KERNEL_MODULE;
use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::config::Target;
use crate::ir::operand::result_at;
use crate::ir::strategy::{self, KernelStrategy};
use crate::ir::util::{body_ops, body_ops_named, string_value, symbol_names};

pub struct AttachTensorMapSlots;

/// The unit attribute on a `gpu.func` whose last argument is its
/// tensor-map slots.
pub const SLOTS_ATTRIBUTE: &str = "tcc.tensor_map_slots";

impl TccPass for AttachTensorMapSlots {
    const ARGUMENT: &'static str = "tcc-attach-tensor-map-slots";
    const SUMMARY: &'static str = "Give GEMM kernels that may take the TF32 wgmma body a scratch buffer of 128-byte tensor-map slots, one per work-group";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["memref", "gpu"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        if Target::of_module(module) != Some(Target::Nvidia) {
            return Ok(());
        }
        let kernels = slot_kernels(module);
        if kernels.is_empty() {
            return Ok(());
        }
        let byte: Type = IntegerType::new(context, 8).into();
        for (op, _, bytes) in &kernels {
            append_kernel_arguments(context, *op, &[buffer_type(*bytes, byte)])?;
            let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            op.set_attribute(SLOTS_ATTRIBUTE, Attribute::unit(context));
        }
        for function in body_ops_named(module, "func.func") {
            for launch in body_ops_named(function, "gpu.launch_func") {
                let Some((module_name, kernel_name)) =
                    launch.attribute("kernel").ok().and_then(symbol_names)
                else {
                    continue;
                };
                if module_name != KERNEL_MODULE {
                    continue;
                }
                if let Some((_, _, bytes)) =
                    kernels.iter().find(|(_, name, _)| *name == kernel_name)
                {
                    pass_slots(context, launch, buffer_type(*bytes, byte))?;
                }
            }
        }
        Ok(())
    }
}

/// The GEMM `gpu.func`s of `gpu.module @tcc_kernels` that may take the
/// wgmma body, with their names and slot bytes.
fn slot_kernels<'c>(module: OperationRef<'c, 'c>) -> Vec<(OperationRef<'c, 'c>, String, i64)> {
    let mut kernels = Vec::new();
    for kernel_module in body_ops_named(module, "gpu.module") {
        if kernel_module
            .attribute("sym_name")
            .ok()
            .and_then(string_value)
            .as_deref()
            != Some(KERNEL_MODULE)
        {
            continue;
        }
        for op in body_ops(kernel_module) {
            let Some(KernelStrategy::Gemm { config, shape }) = strategy::of(&op) else {
                continue;
            };
            if op.attribute(SLOTS_ATTRIBUTE).is_ok() {
                continue;
            }
            let Some(bytes) = tcc_kernels::gemm::tensor_map_slot_bytes(&config, &shape) else {
                continue;
            };
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            kernels.push((op, name, bytes));
        }
    }
    kernels
}

/// Before `launch`: the slots' allocation, appended to its kernel operands.
fn pass_slots<'c>(
    context: &'c Context,
    launch: OperationRef<'c, 'c>,
    slots_type: Type<'c>,
) -> Result<(), PassError<'c>> {
    let location = launch.location();
    let block = launch
        .block()
        .ok_or_else(|| PassError::at(location, "gpu.launch_func outside a block"))?;
    let alloc = OperationBuilder::new("memref.alloc", location)
        .add_attributes(&[(
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(context, &[0, 0]).into(),
        )])
        .add_results(&[slots_type])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build memref.alloc: {e}")))?;
    let alloc = block.insert_operation_before(launch, alloc);
    let slots = [result_at(alloc, 0)?.to_raw()];
    if !unsafe { tcc_dialects::append_launch_kernel_operands(launch.to_raw(), &slots) } {
        return Err(PassError::at(location, "not a gpu.launch_func"));
    }
    Ok(())
}
