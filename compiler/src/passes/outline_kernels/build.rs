//! Building for `tcc-outline-kernels`: the `gpu.func` of one kernel group
//! (its body cloned in, its strategy copied from the group's root op), and
//! the `gpu.launch_func` that replaces the group in the host function,
//! over the grid the strategy implies.

use std::collections::HashMap;

use melior::Context;
use melior::ir::attribute::{
    Attribute, DenseI32ArrayAttribute, IntegerAttribute, StringAttribute, TypeAttribute,
};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::r#type::{FunctionType, IntegerType};
use melior::ir::{
    Block, BlockLike, BlockRef, Identifier, Location, Region, RegionLike, Type, TypeLike, Value,
    ValueLike,
};

use super::capture::{Captures, clone_captures, clone_into, raw_key};
use crate::config::KernelKind;
use crate::ir::attr_names::{FLOPS, KIND, STRATEGY};
use crate::ir::strategy::KernelStrategy;
use crate::ir::types::static_shape;
use crate::ir::util::op_name;
use crate::passes::pass::PassError;
use tcc_dialects::target::Precision;

/// The launch of a kernel with `strategy` rooted at `root`, over the
/// `points` elements of the largest buffer its group writes: (grid,
/// work-group) per axis.
pub(super) fn launch_shape(
    strategy: &KernelStrategy,
    root: OperationRef,
    points: i64,
    target: Option<crate::config::Target>,
    precision: Precision,
) -> ([i64; 3], [i64; 3]) {
    match *strategy {
        // Tiles along (n, m); the batch times the split-K slices along z.
        KernelStrategy::Gemm { config, shape, .. } => {
            let (tiles_n, tiles_m) = config.tiles(&shape);
            let (threads_n, threads_m) = config.threads();
            (
                [tiles_n, tiles_m, shape.batch * i64::from(config.split_k)],
                [i64::from(threads_n), i64::from(threads_m), 1],
            )
        }
        // One work-group per output element.
        KernelStrategy::RowReduce { workgroup_size } => ([points, 1, 1], [workgroup_size, 1, 1]),
        // One work-group per row (a layer norm's: per `rows` rows); the
        // output is the last operand.
        KernelStrategy::Softmax { workgroup_size }
        | KernelStrategy::LayerNorm { workgroup_size, .. } => {
            let output = root
                .operand(root.operand_count().saturating_sub(1))
                .ok()
                .and_then(|v| static_shape(v.r#type()))
                .unwrap_or_default();
            let columns = output.last().copied().unwrap_or(1).max(1);
            let rows = output.iter().product::<i64>() / columns;
            let group_rows = match *strategy {
                KernelStrategy::LayerNorm { rows, .. } => rows.max(1),
                _ => 1,
            };
            (
                [(rows + group_rows - 1) / group_rows, 1, 1],
                [workgroup_size * group_rows, 1, 1],
            )
        }
        // Query blocks along x, batch times heads along y.
        KernelStrategy::Attention {
            block_q,
            block_k,
            key_lanes,
        } => {
            let query = root
                .operand(0)
                .ok()
                .and_then(|v| static_shape(v.r#type()))
                .unwrap_or_default();
            let shape = tcc_kernels::AttentionShape {
                batch: query.first().copied().unwrap_or(1),
                heads: query.get(1).copied().unwrap_or(1),
                kv_heads: 1,
                q_len: query.get(2).copied().unwrap_or(1),
                kv_len: 1,
                head_dim: query.get(3).copied().unwrap_or(1),
            };
            tcc_kernels::attention_launch(
                &shape,
                (
                    u32::try_from(block_q).unwrap_or(1),
                    u32::try_from(block_k).unwrap_or(1),
                    u32::try_from(key_lanes).unwrap_or(1).max(1),
                ),
                precision.attention_tensor_cores(),
                target.is_some_and(|t| t.attention_single_item()),
            )
        }
        // One work-item per block of outputs.
        KernelStrategy::Window { config, work_items } => {
            let size = i64::from(config.workgroup_size);
            ([(work_items + size - 1) / size, 1, 1], [size, 1, 1])
        }
        KernelStrategy::Loops {
            workgroup_size,
            max_workgroups,
        } => {
            let groups = (points + workgroup_size - 1) / workgroup_size;
            let grid = max_workgroups.map_or(groups, |limit| groups.min(limit.max(1)));
            ([grid, 1, 1], [workgroup_size, 1, 1])
        }
    }
}

/// Parallel points of a kernel: the elements of the largest buffer it
/// writes, a `?` taken as `extent` (the declared maximum).
pub(super) fn work_items(members: &[OperationRef], extent: Option<i64>) -> i64 {
    members
        .iter()
        .map(|member| crate::passes::configure_kernels::written_elements_at(*member, extent))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Multiply-adds of the matmuls and convolutions among `members`, times 2.
fn kernel_flops(members: &[OperationRef]) -> i64 {
    let mut flops = 0i64;
    for member in members {
        let (short, filter, output) = crate::ir::contraction::window_layout(*member);
        let short = short.as_str();
        // A kernel over a symbolic dimension (issue 33) counts no flops:
        // they depend on the call's extent (a `?`'s raw size is never
        // multiplied).
        if member
            .operands()
            .any(|v| crate::ir::dynamic::is_dynamic(v.r#type()))
        {
            continue;
        }
        let shape = |index: usize| -> Vec<i64> {
            member
                .operand(index)
                .ok()
                .map(|v| {
                    let ty = v.r#type();
                    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(ty.to_raw()) };
                    (0..rank.max(0))
                        .map(|i| unsafe {
                            mlir_sys::mlirShapedTypeGetDimSize(ty.to_raw(), i as isize)
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let elements = |dims: &[i64]| dims.iter().product::<i64>();
        let reduction: i64 = match short {
            "matmul" | "batch_matmul" => shape(0).last().copied().unwrap_or(0),
            // A matmul with B in panels (`tcc-pack-weight-panels`): K is A's.
            "generic" if crate::ir::filter_panels::matmul_panel_width(*member).is_some() => {
                shape(0).last().copied().unwrap_or(0)
            }
            // HWCF filter: reduce over KH * KW * C.
            s if s.starts_with("conv_2d_nhwc_hwcf") => {
                crate::ir::filter_panels::hwcf_filter_shape(*member, filter)
                    .map_or(0, |[kh, kw, c, _]| kh * kw * c)
            }
            s if s.starts_with("conv_") => {
                let filter = shape(filter);
                filter.iter().product::<i64>() / filter.last().copied().unwrap_or(1).max(1)
            }
            // HWC(M) filter: reduce over KH * KW.
            s if s.starts_with("depthwise_conv") => shape(filter).iter().take(2).product(),
            _ => 0,
        };
        if reduction > 0 {
            flops += 2 * elements(&shape(output)) * reduction;
        }
    }
    flops
}

/// Rebuilds a `memref.copy` inside a kernel as the equivalent elementwise
/// `linalg.generic`, so that it lowers to a parallel loop nest like every
/// other kernel op.
fn copy_as_generic<'c>(
    context: &'c Context,
    block: &Block<'c>,
    copy: OperationRef<'c, 'c>,
    map: &HashMap<usize, mlir_sys::MlirValue>,
) -> Result<(), PassError<'c>> {
    let location = copy.location();
    let operand = |index: usize| -> Result<Value<'c, 'c>, PassError<'c>> {
        let value = copy
            .operand(index)
            .map_err(|e| PassError::at(location, e.to_string()))?;
        let mapped = map
            .get(&raw_key(value))
            .ok_or_else(|| PassError::at(location, "copy of a buffer outside the kernel"))?;
        Ok(unsafe { Value::from_raw(*mapped) })
    };
    let generic =
        crate::patterns::copy::elementwise_copy(context, location, operand(0)?, operand(1)?, None)?;
    block.append_operation(generic);
    Ok(())
}

/// Creates the module's `gpu.module @tcc_kernels` at the end of
/// `module_body`; returns its block.
pub(super) fn kernel_module<'c>(
    context: &'c Context,
    module_body: BlockRef<'c, 'c>,
    location: Location<'c>,
) -> Result<BlockRef<'c, 'c>, PassError<'c>> {
    let region = Region::new();
    region.append_block(Block::new(&[]));
    let gpu_module = OperationBuilder::new("gpu.module", location)
        .add_attributes(&[(
            Identifier::new(context, "sym_name"),
            StringAttribute::new(context, super::KERNEL_MODULE).into(),
        )])
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build gpu.module: {e}")))?;
    let gpu_module = module_body.append_operation(gpu_module);
    let block = gpu_module
        .region(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .first_block()
        .ok_or_else(|| PassError::at(location, "gpu.module without a block"))?;
    Ok(unsafe { BlockRef::from_raw(block.to_raw()) })
}

/// One kernel to build: its name, ops, captures and how it is compiled.
pub(super) struct KernelPlan<'g, 'c> {
    pub(super) name: &'g str,
    pub(super) members: &'g [OperationRef<'c, 'c>],
    pub(super) captures: &'g Captures<'c>,
    pub(super) kind: KernelKind,
    pub(super) strategy: Attribute<'c>,
    pub(super) workgroup: [i64; 3],
}

/// Builds the kernel's `gpu.func` at the end of `block`.
pub(super) fn build_kernel<'c>(
    context: &'c Context,
    block: BlockRef<'c, 'c>,
    plan: &KernelPlan<'_, 'c>,
    location: Location<'c>,
) -> Result<OperationRef<'c, 'c>, PassError<'c>> {
    let argument_types: Vec<Type> = plan.captures.roots.iter().map(|r| r.r#type()).collect();
    let body = Block::new(
        &argument_types
            .iter()
            .map(|t| (*t, location))
            .collect::<Vec<_>>(),
    );
    let mut map = clone_captures(&body, plan.captures);
    for op in plan.members {
        if op_name(op) == "memref.copy" {
            copy_as_generic(context, &body, *op, &map)?;
        } else {
            clone_into(&body, *op, &mut map);
        }
    }
    body.append_operation(
        OperationBuilder::new("gpu.return", location)
            .build()
            .map_err(|e| PassError::at(location, e.to_string()))?,
    );
    let region = Region::new();
    region.append_block(body);
    let function_type = FunctionType::new(context, &argument_types, &[]);
    let i64_type = IntegerType::new(context, 64).into();
    let kernel = OperationBuilder::new("gpu.func", location)
        .add_attributes(&[
            (
                Identifier::new(context, "sym_name"),
                StringAttribute::new(context, plan.name).into(),
            ),
            (
                Identifier::new(context, "function_type"),
                TypeAttribute::new(function_type.into()).into(),
            ),
            (
                Identifier::new(context, "gpu.kernel"),
                Attribute::unit(context),
            ),
            (
                Identifier::new(context, "known_block_size"),
                DenseI32ArrayAttribute::new(context, &plan.workgroup.map(|v| v as i32)).into(),
            ),
            (
                Identifier::new(context, "workgroup_attributions"),
                IntegerAttribute::new(i64_type, 0).into(),
            ),
            (
                Identifier::new(context, KIND),
                StringAttribute::new(context, plan.kind.name()).into(),
            ),
            (Identifier::new(context, STRATEGY), plan.strategy),
        ])
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build gpu.func: {e}")))?;
    let kernel = block.append_operation(kernel);
    let flops = kernel_flops(plan.members);
    if flops > 0 {
        let mut kernel = unsafe { OperationRefMut::from_raw(kernel.to_raw()) };
        kernel.set_discardable_attribute(FLOPS, IntegerAttribute::new(i64_type, flops).into());
    }
    Ok(unsafe { OperationRef::from_raw(kernel.to_raw()) })
}

/// Replaces the group by a launch of `kernel` where its last op was.
pub(super) fn replace_by_launch<'c>(
    kernel: OperationRef<'c, 'c>,
    members: &[OperationRef<'c, 'c>],
    roots: &[Value<'c, 'c>],
    (grid, workgroup): ([i64; 3], [i64; 3]),
    location: Location<'c>,
) -> Result<OperationRef<'c, 'c>, PassError<'c>> {
    let last = *members
        .last()
        .ok_or_else(|| PassError::at(location, "empty kernel group"))?;
    if last.block().is_none() {
        return Err(PassError::at(location, "kernel op outside a block"));
    }
    let operands: Vec<mlir_sys::MlirValue> = roots.iter().map(|r| r.to_raw()).collect();
    let launch = unsafe {
        tcc_dialects::build_launch_func(
            last.to_raw(),
            kernel.to_raw(),
            grid,
            workgroup,
            &operands,
            location.to_raw(),
        )
    };
    for member in members.iter().rev() {
        let mut member = unsafe { OperationRefMut::from_raw(member.to_raw()) };
        member.remove_from_parent();
        unsafe { mlir_sys::mlirOperationDestroy(member.to_raw()) };
    }
    Ok(unsafe { OperationRef::from_raw(launch) })
}
