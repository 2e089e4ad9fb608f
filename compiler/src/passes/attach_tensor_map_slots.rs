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
//! matter). Only modules whose `#tcc.target` is of the `nvidia` family
//! with `precision = "tf32"` (`tcc compile --target=nvidia
//! --precision=tf32`), where the body can be taken, are touched, and
//! those with `precision = "fp16"` or `"bf16"` and `api = cuda` (`tcc
//! compile --backend=cuda --precision=fp16`), whose GEMMs may take the
//! FP16/BF16 `wgmma` body (`tcc_kernels::gemm::half_tensor_map_slot_bytes`:
//! two slots per work-group, A's map and B's).

use melior::Context;
use melior::ir::Attribute;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::r#type::IntegerType;

use super::kernel_arguments::{
    alloc_before, append_kernel_arguments, append_launch_operands, buffer_type, kernel_funcs,
    kernel_launches,
};
use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::config::Target;
use crate::config::targets::{self, Precision};
use crate::ir::strategy::{self, KernelStrategy};

pub struct AttachTensorMapSlots;

pub use crate::ir::attr_names::TENSOR_MAP_SLOTS as SLOTS_ATTRIBUTE;

impl TccPass for AttachTensorMapSlots {
    const ARGUMENT: &'static str = "tcc-attach-tensor-map-slots";
    const SUMMARY: &'static str = "Give GEMM kernels that may take the TF32 (or, launched by CUDA, FP16/BF16) wgmma body a scratch buffer of 128-byte tensor-map slots, one per work-group";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["memref", "gpu"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let Some(desc) = targets::of_module(module) else {
            return Ok(());
        };
        if targets::family(&desc) != Ok(Target::Nvidia) {
            return Ok(());
        }
        // TF32: one map (A's) per work-group of the 48 KiB body, two of the
        // large tile; FP16/BF16 launched by the CUDA driver: two (A's and
        // B's) per work-group of the half body.
        let slot_bytes: fn(&_, &_) -> Option<i64> = match desc.precision {
            Precision::Tf32 => tcc_kernels::gemm::tensor_map_slot_bytes,
            Precision::Fp16 | Precision::Bf16 if desc.api == targets::LaunchApi::Cuda => {
                tcc_kernels::gemm::half_tensor_map_slot_bytes
            }
            _ => return Ok(()),
        };
        // The GEMM kernels that may take the wgmma body, and their slots.
        let kernels: Vec<_> = kernel_funcs(module)
            .into_iter()
            .filter(|(op, _)| op.attribute(SLOTS_ATTRIBUTE).is_err())
            .filter_map(|(op, name)| {
                let Some(KernelStrategy::Gemm { config, shape, .. }) = strategy::of(&op) else {
                    return None;
                };
                let bytes = slot_bytes(&config, &shape)?;
                Some((op, name, bytes))
            })
            .collect();
        let byte = IntegerType::new(context, 8).into();
        for (op, _, bytes) in &kernels {
            append_kernel_arguments(context, *op, &[buffer_type(*bytes, byte)])?;
            let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            op.set_attribute(SLOTS_ATTRIBUTE, Attribute::unit(context));
        }
        // Each launch passes slots of its own.
        for (launch, kernel_name) in kernel_launches(module) {
            if let Some((_, _, bytes)) = kernels.iter().find(|(_, name, _)| *name == kernel_name) {
                let slots = alloc_before(context, launch, buffer_type(*bytes, byte))?;
                append_launch_operands(launch, &[slots])?;
            }
        }
        Ok(())
    }
}
