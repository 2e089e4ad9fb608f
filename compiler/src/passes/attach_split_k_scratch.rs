//! `tcc-attach-split-k-scratch`: gives every split-K GEMM kernel (a
//! `gpu.func` whose strategy is a `#tcc.gemm` with `split_k > 1`, see
//! `tcc-kernels`' GEMM template) the two buffers its work-groups meet in, as two more kernel
//! arguments after its own:
//!
//! - a workspace for the partial tiles (`memref.alloc` before each launch,
//!   which `tcc-plan-memory` then places in the arena like any other
//!   intermediate: it is dead once the kernel has run);
//! - per-tile arrival counters, which must be zero when the kernel starts
//!   and which the kernel leaves at zero: one zero-initialised, writable
//!   `memref.global @tcc_split_k_counters` shared by every split-K kernel
//!   (they run one after the other on the in-order queue), sized for the
//!   one with the most tiles and passed whole to each. The runtime uploads
//!   it once per session like a constant.

use melior::Context;
use melior::ir::attribute::{
    DenseElementsAttribute, FlatSymbolRefAttribute, IntegerAttribute, StringAttribute,
    TypeAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::{IntegerType, RankedTensorType};
use melior::ir::{BlockLike, Identifier, RegionLike, Type};

use super::kernel_arguments::{
    alloc_before, append_kernel_arguments, append_launch_operands, buffer_type, kernel_funcs,
    kernel_launches,
};
use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::operand::result_at;
use crate::ir::strategy::{self, KernelStrategy};

pub struct AttachSplitKScratch;

/// The shared counters' symbol.
pub const COUNTERS_GLOBAL: &str = "tcc_split_k_counters";

impl TccPass for AttachSplitKScratch {
    const ARGUMENT: &'static str = "tcc-attach-split-k-scratch";
    const SUMMARY: &'static str = "Give split-K GEMM kernels their partial-tile workspace and zeroed per-tile counters as extra arguments";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["memref", "gpu"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let kernels = split_k_kernels(module)?;
        let Some(max_counters) = kernels.iter().map(|k| k.counters).max() else {
            return Ok(());
        };
        let counters_type = buffer_type(max_counters, IntegerType::new(context, 32).into());
        for kernel in &kernels {
            let workspace_type = buffer_type(kernel.workspace, Type::float32(context));
            append_kernel_arguments(context, kernel.op, &[workspace_type, counters_type])?;
        }
        add_counters_global(context, module, counters_type, max_counters)?;
        // Each launch of a split-K kernel passes a fresh workspace and the
        // whole counters global.
        for (launch, kernel_name) in kernel_launches(module) {
            if let Some(kernel) = kernels.iter().find(|k| k.name == kernel_name) {
                pass_scratch(context, launch, kernel.workspace, counters_type)?;
            }
        }
        Ok(())
    }
}

/// A split-K GEMM `gpu.func`.
struct SplitKKernel<'c> {
    op: OperationRef<'c, 'c>,
    name: String,
    /// Floats of partial tiles.
    workspace: i64,
    /// Tiles (one counter each).
    counters: i64,
}

/// The split-K kernels of the module's `gpu.module @tcc_kernels`.
fn split_k_kernels<'c>(
    module: OperationRef<'c, 'c>,
) -> Result<Vec<SplitKKernel<'c>>, PassError<'c>> {
    let mut kernels = Vec::new();
    for (op, name) in kernel_funcs(module) {
        let Some(KernelStrategy::Gemm { config, shape, .. }) = strategy::of(&op) else {
            continue;
        };
        if config.split_k <= 1 {
            continue;
        }
        let (workspace, counters) = config.split_k_scratch(&shape);
        kernels.push(SplitKKernel {
            op,
            name,
            workspace,
            counters,
        });
    }
    Ok(kernels)
}

/// `memref.global "private" @tcc_split_k_counters : memref<Nxi32> =
/// dense<0>` (writable: not `constant`), first in the module.
fn add_counters_global<'c>(
    context: &'c melior::Context,
    module: OperationRef<'c, 'c>,
    counters_type: Type<'c>,
    counters: i64,
) -> Result<(), PassError<'c>> {
    let location = module.location();
    let body = module
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| PassError::at(location, "module without a body"))?;
    let i32_type: Type = IntegerType::new(context, 32).into();
    let zeros: melior::ir::Attribute = DenseElementsAttribute::new(
        RankedTensorType::new(&[counters.max(0) as u64], i32_type, None).into(),
        &[IntegerAttribute::new(i32_type, 0).into()],
    )
    .map_err(|e| PassError::at(location, format!("cannot build the counters' zeros: {e}")))?
    .into();
    let global = OperationBuilder::new("memref.global", location)
        .add_attributes(&[
            (
                Identifier::new(context, "sym_name"),
                StringAttribute::new(context, COUNTERS_GLOBAL).into(),
            ),
            (
                Identifier::new(context, "sym_visibility"),
                StringAttribute::new(context, "private").into(),
            ),
            (
                Identifier::new(context, "type"),
                TypeAttribute::new(counters_type).into(),
            ),
            (Identifier::new(context, "initial_value"), zeros),
        ])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build memref.global: {e}")))?;
    match body.first_operation() {
        Some(first) => body.insert_operation_before(first, global),
        None => body.append_operation(global),
    };
    Ok(())
}

/// Before `launch`: a workspace allocation and the counters global, both
/// appended to its kernel operands.
fn pass_scratch<'c>(
    context: &'c melior::Context,
    launch: OperationRef<'c, 'c>,
    workspace: i64,
    counters_type: Type<'c>,
) -> Result<(), PassError<'c>> {
    let location = launch.location();
    let workspace = alloc_before(
        context,
        launch,
        buffer_type(workspace, Type::float32(context)),
    )?;
    let block = launch
        .block()
        .ok_or_else(|| PassError::at(location, "gpu.launch_func outside a block"))?;
    let get_global = OperationBuilder::new("memref.get_global", location)
        .add_attributes(&[(
            Identifier::new(context, "name"),
            FlatSymbolRefAttribute::new(context, COUNTERS_GLOBAL).into(),
        )])
        .add_results(&[counters_type])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build memref.get_global: {e}")))?;
    let get_global = block.insert_operation_before(launch, get_global);
    append_launch_operands(launch, &[workspace, result_at(get_global, 0)?])
}
