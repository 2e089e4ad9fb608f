//! `tcc-outline-kernels`: the gpu phase's first step. Moves each kernel
//! group (the ops sharing a `tcc.kernel` name, or a lone linalg op the
//! dispatch phase did not see, such as copies made by bufferization) into a
//! `gpu.func` of a `gpu.module @tcc_kernels`, and leaves a `gpu.launch_func`
//! in the host function.
//!
//! Kernel arguments are whole buffers (function arguments, allocations,
//! constants); views of them (expand/collapse_shape, subview, ...) are
//! rebuilt inside the kernel, so the runtime only ever passes `cl_mem`
//! handles. Scalar constants are cloned in. The launch covers the kernel's
//! parallel points in work-groups of the configured size; the mapping pass
//! (`tcc-map-loops-to-work-items`) makes the body cover any iteration space
//! with that launch.

use std::collections::HashMap;

use melior::Context;
use melior::ir::attribute::{
    Attribute, DenseI32ArrayAttribute, DenseI64ArrayAttribute, IntegerAttribute, StringAttribute,
    TypeAttribute,
};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut, WalkOrder,
    WalkResult,
};
use melior::ir::r#type::{FunctionType, IntegerType};
use melior::ir::{
    Block, BlockLike, Identifier, Location, Region, RegionLike, Type, TypeLike, Value, ValueLike,
};

use super::configure_kernels::{
    CONFIG_ATTR, GEMM_KEY, ROW_REDUCE_KEY, SPLIT_K_SCRATCH_KEY, TARGET_ATTR,
};
use super::form_dispatches::{KERNEL_ATTR, KIND_ATTR, kind_of};
use super::pass::{NoOptions, PassError, TccPass};
use crate::config::Target;

use crate::ir::util::{
    body_ops, body_ops_named, collect_ops, dialect_of, integer_value, op_name, string_value,
};
use crate::patterns::kernel_naming::{kernel_name, op_parts};

pub struct OutlineKernels;

/// The gpu.module holding every kernel.
pub const KERNEL_MODULE: &str = "tcc_kernels";

/// View ops rebuilt inside kernels (their operand 0 is the viewed buffer).
const VIEW_OPS: &[&str] = &[
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.subview",
    "memref.reinterpret_cast",
    "memref.cast",
    "memref.transpose",
];

/// Whether the op runs on the device (as, or as part of, a kernel).
fn is_kernel_op(op: OperationRef) -> bool {
    let name = op_name(&op);
    dialect_of(&name) == "linalg" || name == "memref.copy" || name == "tcc.layer_norm_rows"
}

/// Whether a memref type has the identity layout (a whole, dense buffer).
fn is_identity_memref(ty: Type) -> bool {
    !ty.to_string().contains("strided<") && !ty.to_string().contains("affine_map")
}

/// A whole-buffer copy stays on the host (the runtime's buffer copy).
fn is_host_copy(op: OperationRef) -> bool {
    op_name(&op) == "memref.copy"
        && op.operands().all(|v| {
            is_identity_memref(v.r#type())
                && crate::ir::util::defining_op(v)
                    .is_none_or(|d| !VIEW_OPS.contains(&op_name(&d).as_str()))
        })
}

struct Group<'c> {
    name: String,
    members: Vec<OperationRef<'c, 'c>>,
}

/// The kernel groups of a function body, in the order their last member
/// appears.
fn kernel_groups<'c>(function: OperationRef<'c, 'c>, next_index: &mut usize) -> Vec<Group<'c>> {
    let mut groups: Vec<Group<'c>> = Vec::new();
    for op in body_ops(function) {
        if !is_kernel_op(op) || is_host_copy(op) {
            continue;
        }
        if let Some(name) = op.attribute(KERNEL_ATTR).ok().and_then(string_value) {
            if let Some(group) = groups.iter_mut().find(|g| g.name == name) {
                group.members.push(op);
                continue;
            }
            groups.push(Group {
                name,
                members: vec![op],
            });
            continue;
        }
        let name = kernel_name(&op_parts(op), *next_index);
        *next_index += 1;
        groups.push(Group {
            name,
            members: vec![op],
        });
    }
    groups
}

/// Buffers (roots) a kernel op writes and reads.
fn written_and_read<'c>(op: OperationRef<'c, 'c>) -> (Vec<usize>, Vec<usize>) {
    let root = |v: Value<'c, 'c>| raw_key(view_chain(v).0);
    if op_name(&op) == "memref.copy" {
        let read = op.operand(0).map(|v| vec![root(v)]).unwrap_or_default();
        let written = op.operand(1).map(|v| vec![root(v)]).unwrap_or_default();
        return (written, read);
    }
    let inits: Vec<usize> = crate::passes::form_dispatches::init_operands(op)
        .into_iter()
        .map(root)
        .collect();
    let reads: Vec<usize> = op
        .operands()
        .filter(|v| v.r#type().is_mem_ref())
        .map(root)
        .filter(|r| !inits.contains(r))
        .collect();
    (inits, reads)
}

/// Splits a fused group whose later op overwrites a buffer an earlier op
/// of the group reads (write after read). Bufferization may reuse a dead
/// input's buffer for a later op's output — correct op by op, but a race
/// once both run in one kernel, where other work-items may still be
/// reading. Such groups run as one kernel per op instead.
fn split_hazardous<'c>(groups: Vec<Group<'c>>, next_index: &mut usize) -> Vec<Group<'c>> {
    let mut result = Vec::new();
    for group in groups {
        let accesses: Vec<_> = group.members.iter().map(|m| written_and_read(*m)).collect();
        let hazard = (0..accesses.len()).any(|later| {
            (0..later).any(|earlier| {
                accesses[later]
                    .0
                    .iter()
                    .any(|w| accesses[earlier].1.contains(w))
            })
        });
        if !hazard || group.members.len() == 1 {
            result.push(group);
            continue;
        }
        for member in group.members {
            let name = kernel_name(&op_parts(member), *next_index);
            *next_index += 1;
            result.push(Group {
                name,
                members: vec![member],
            });
        }
    }
    result
}

/// Follows view ops back to the buffer they view. Returns the root and the
/// view ops from the root outwards.
fn view_chain<'c>(value: Value<'c, 'c>) -> (Value<'c, 'c>, Vec<OperationRef<'c, 'c>>) {
    let mut chain = Vec::new();
    let mut current = value;
    while let Some(op) = crate::ir::util::defining_op(current)
        && VIEW_OPS.contains(&op_name(&op).as_str())
    {
        chain.push(op);
        match op.operand(0) {
            Ok(source) => current = source,
            Err(_) => break,
        }
    }
    chain.reverse();
    (current, chain)
}

fn raw_key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// Clones `op` before the end of `block`, rewriting operands through `map`,
/// and records the clone's results in `map`.
fn clone_into<'c>(
    block: &Block<'c>,
    op: OperationRef<'c, 'c>,
    map: &mut HashMap<usize, mlir_sys::MlirValue>,
) {
    let raw_clone = unsafe { mlir_sys::mlirOperationClone(op.to_raw()) };
    let clone = unsafe { melior::ir::operation::Operation::from_raw(raw_clone) };
    let clone = block.append_operation(clone);
    clone.walk(WalkOrder::PreOrder, |nested| {
        let raw = nested.to_raw();
        let count = unsafe { mlir_sys::mlirOperationGetNumOperands(raw) };
        for index in 0..count {
            let operand = unsafe { mlir_sys::mlirOperationGetOperand(raw, index) };
            if let Some(replacement) = map.get(&(operand.ptr as usize)) {
                unsafe { mlir_sys::mlirOperationSetOperand(raw, index, *replacement) };
            }
        }
        WalkResult::Advance
    });
    for index in 0..op.result_count() {
        if let (Ok(old), Ok(new)) = (op.result(index), clone.result(index)) {
            map.insert(raw_key(old.into()), Value::from(new).to_raw());
        }
    }
}

/// Values used by the group's ops (nested ops included) that are defined
/// outside the group, in first-use order.
fn captured_values<'c>(members: &[OperationRef<'c, 'c>]) -> Vec<Value<'c, 'c>> {
    let mut inside: Vec<usize> = Vec::new();
    for member in members {
        for op in collect_ops(*member) {
            for index in 0..op.result_count() {
                if let Ok(result) = op.result(index) {
                    inside.push(raw_key(result.into()));
                }
            }
            for region in op.regions() {
                let mut block = region.first_block();
                while let Some(b) = block {
                    for index in 0..b.argument_count() {
                        if let Ok(argument) = b.argument(index) {
                            inside.push(raw_key(argument.into()));
                        }
                    }
                    block = b.next_in_region();
                }
            }
        }
    }
    let mut captured: Vec<Value> = Vec::new();
    for member in members {
        for op in collect_ops(*member) {
            for operand in op.operands() {
                let key = raw_key(operand);
                if !inside.contains(&key) && !captured.iter().any(|c| raw_key(*c) == key) {
                    captured.push(operand);
                }
            }
        }
    }
    captured
}

/// The gpu.func attribute asking the OpenCL C writer for the tiled GEMM
/// template: `[tile_m, tile_n, tile_k, work_m, work_n]`.
pub const GEMM_ATTR: &str = "tcc.gemm";

pub(super) fn dense_i64s(attribute: Attribute) -> Option<Vec<i64>> {
    let text = attribute.to_string();
    let inner = text.strip_prefix("array<i64:")?.strip_suffix('>')?;
    inner.split(',').map(|v| v.trim().parse().ok()).collect()
}

/// (batch, M, N) of a plain or batched matmul on buffers.
fn matmul_dims(op: OperationRef) -> Option<(i64, i64, i64)> {
    let name = op_name(&op);
    let (window, _, output_index) = crate::patterns::conv_inputs::window_layout(op);
    if window == "conv_2d_nhwc_hwcf" {
        let output = op.operand(output_index).ok()?.r#type();
        let dim =
            |i: usize| unsafe { mlir_sys::mlirShapedTypeGetDimSize(output.to_raw(), i as isize) };
        return Some((1, dim(0) * dim(1) * dim(2), dim(3)));
    }
    if name != "linalg.matmul" && name != "linalg.batch_matmul" {
        return None;
    }
    let output = op.operand(2).ok()?.r#type();
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(output.to_raw()) } as usize;
    let dim = |i: usize| unsafe { mlir_sys::mlirShapedTypeGetDimSize(output.to_raw(), i as isize) };
    match rank {
        2 => Some((1, dim(0), dim(1))),
        3 => Some((dim(0), dim(1), dim(2))),
        _ => None,
    }
}

/// The gpu.func attribute asking the OpenCL C writer for the row-reduction
/// template: work-items per output element.
pub const ROW_REDUCE_ATTR: &str = "tcc.row_reduce";

/// On a split-K `gpu.func`: `array<i64: workspace floats, counters>`, the
/// scratch `tcc-attach-split-k-scratch` gives it.
pub const SPLIT_K_SCRATCH_ATTR: &str = "tcc.split_k_scratch";

/// The gpu.func attribute giving a kernel's floating-point operations per
/// launch (matmul and convolution kernels), for profiling reports.
pub const FLOPS_ATTR: &str = "tcc.flops";

/// Multiply-adds of the matmuls and convolutions among `members`, times 2.
fn kernel_flops(members: &[OperationRef]) -> i64 {
    let mut flops = 0i64;
    for member in members {
        let (short, filter, output) = crate::patterns::conv_inputs::window_layout(*member);
        let short = short.as_str();
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
            // HWCF filter: reduce over KH * KW * C.
            s if s.starts_with("conv_2d_nhwc_hwcf") => {
                let filter = shape(filter);
                filter.iter().take(3).product()
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

/// Parallel points of a kernel: the elements of the largest buffer it writes.
fn work_items(members: &[OperationRef]) -> i64 {
    let mut points = 1;
    for member in members {
        let name = op_name(member);
        let written: Vec<Value> = if name == "memref.copy" {
            member.operand(1).into_iter().collect()
        } else {
            crate::passes::form_dispatches::init_operands(*member)
        };
        for value in written {
            let shape = value.r#type().to_string();
            if let Some(count) = memref_elements(&shape) {
                points = points.max(count);
            }
        }
    }
    points
}

/// Element count of a static `memref<AxBxf32, ...>` type's text.
fn memref_elements(text: &str) -> Option<i64> {
    let inner = text.strip_prefix("memref<")?;
    let dims: Vec<&str> = inner.split('x').collect();
    let mut count = 1i64;
    for dim in &dims[..dims.len().saturating_sub(1)] {
        count = count.checked_mul(dim.trim().parse::<i64>().ok()?)?;
    }
    Some(count)
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

fn index_constant<'c>(
    context: &'c Context,
    block: &BlockRef<'c, 'c>,
    before: OperationRef<'c, 'c>,
    value: i64,
    location: Location<'c>,
) -> Value<'c, 'c> {
    let op = melior::dialect::arith::constant(
        context,
        IntegerAttribute::new(Type::index(context), value).into(),
        location,
    );
    block
        .insert_operation_before(before, op)
        .result(0)
        .expect("constant has a result")
        .into()
}

use melior::ir::BlockRef;

/// The gpu phase starts from the buffer phase's output. Raw TOSA, or any
/// function still on tensors, would pass through it untouched (a silent
/// no-op), so it is refused, at the first op or function on tensors.
fn check_bufferized<'c>(
    module: OperationRef<'c, 'c>,
    functions: &[OperationRef<'c, 'c>],
) -> Result<(), PassError<'c>> {
    const HINT: &str = "tcc-outline-kernels (the gpu phase) works on the buffer phase's output; \
        run the phases before it first (tcc-opt --tcc-phase-input ... --tcc-phase-buffer, \
        or tcc compile --compile-to=gpu)";
    for function in functions {
        let on_tensors = function
            .attribute("function_type")
            .ok()
            .is_some_and(|ty| ty.to_string().contains("tensor<"));
        if on_tensors {
            let name = function
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            return Err(PassError::at(
                function.location(),
                format!("@{name} takes or returns tensors: {HINT}"),
            ));
        }
    }
    if let Some(op) = collect_ops(module)
        .into_iter()
        .find(|op| dialect_of(&op_name(op)) == "tosa")
    {
        return Err(PassError::at(
            op.location(),
            format!("'{}' is a TOSA op: {HINT}", op_name(&op)),
        ));
    }
    Ok(())
}

impl TccPass for OutlineKernels {
    const ARGUMENT: &'static str = "tcc-outline-kernels";
    const SUMMARY: &'static str =
        "Outline each kernel group into a gpu.func and launch it from the host function";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["gpu", "arith"];
    type Options = NoOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: OperationRef<'c, 'c>,
        _options: &NoOptions,
    ) -> Result<(), PassError<'c>> {
        let location = module.location();
        let target: Target = module
            .attribute(TARGET_ATTR)
            .ok()
            .and_then(string_value)
            .and_then(|t| t.parse().ok())
            .unwrap_or_default();
        let functions: Vec<_> = body_ops_named(module, "func.func");
        check_bufferized(module, &functions)?;
        let mut next_index = collect_ops(module)
            .iter()
            .filter(|op| op.attribute(KIND_ATTR).is_ok())
            .count();

        // The kernel module, created on first use.
        let module_body = module
            .region(0)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .first_block()
            .ok_or_else(|| PassError::at(location, "empty module"))?;
        let mut kernel_block: Option<BlockRef<'c, 'c>> = None;

        for function in functions {
            let groups = kernel_groups(function, &mut next_index);
            for group in split_hazardous(groups, &mut next_index) {
                let last = *group.members.last().expect("groups are non-empty");
                let group_location = last.location();
                let block = match kernel_block {
                    Some(b) => b,
                    None => {
                        let region = Region::new();
                        region.append_block(Block::new(&[]));
                        let gpu_module = OperationBuilder::new("gpu.module", location)
                            .add_attributes(&[(
                                Identifier::new(context, "sym_name"),
                                StringAttribute::new(context, KERNEL_MODULE).into(),
                            )])
                            .add_regions([region])
                            .build()
                            .map_err(|e| {
                                PassError::at(location, format!("cannot build gpu.module: {e}"))
                            })?;
                        let gpu_module = module_body.append_operation(gpu_module);
                        let b = gpu_module
                            .region(0)
                            .expect("gpu.module has a region")
                            .first_block()
                            .expect("with a block");
                        let b = unsafe { BlockRef::from_raw(b.to_raw()) };
                        kernel_block = Some(b);
                        b
                    }
                };

                // Arguments: the root buffers of every captured memref.
                let mut roots: Vec<Value> = Vec::new();
                let mut views: Vec<OperationRef> = Vec::new();
                let mut constants: Vec<OperationRef> = Vec::new();
                for value in captured_values(&group.members) {
                    if value.r#type().is_mem_ref() {
                        let (root_value, chain) = view_chain(value);
                        if !roots.iter().any(|r| raw_key(*r) == raw_key(root_value)) {
                            roots.push(root_value);
                        }
                        for view in chain {
                            if !views.iter().any(|v| v.to_raw().ptr == view.to_raw().ptr) {
                                views.push(view);
                            }
                        }
                    } else if let Some(definition) = crate::ir::util::defining_op(value)
                        && op_name(&definition) == "arith.constant"
                    {
                        constants.push(definition);
                    } else {
                        return Err(PassError::at(
                            group_location,
                            format!(
                                "kernel {} uses a value that is neither a buffer nor a constant: {value}",
                                group.name
                            ),
                        ));
                    }
                }
                // View ops must be rebuilt in program order.
                views.sort_by(|a, b| {
                    if a.is_before_in_block(*b) {
                        std::cmp::Ordering::Less
                    } else {
                        std::cmp::Ordering::Greater
                    }
                });

                let argument_types: Vec<Type> = roots.iter().map(|r| r.r#type()).collect();
                let config = group
                    .members
                    .iter()
                    .find_map(|m| m.attribute(CONFIG_ATTR).ok())
                    .and_then(|a| melior::ir::attribute::DictionaryAttribute::try_from(a).ok());
                let config_size = config
                    .and_then(|d| d.element_by_name("workgroup_size"))
                    .and_then(integer_value);
                let max_workgroups = config
                    .and_then(|d| d.element_by_name(super::MAX_WORKGROUPS_KEY))
                    .and_then(integer_value);
                let gemm = config
                    .and_then(|d| d.element_by_name(GEMM_KEY))
                    .and_then(dense_i64s);
                let split_k_scratch = config
                    .and_then(|d| d.element_by_name(SPLIT_K_SCRATCH_KEY))
                    .and_then(dense_i64s);
                let row_reduce = config
                    .and_then(|d| d.element_by_name(ROW_REDUCE_KEY))
                    .and_then(integer_value);
                let root_op = group
                    .members
                    .iter()
                    .find(|m| m.attribute(KIND_ATTR).is_ok())
                    .unwrap_or(&last);
                let kind = kind_of(*root_op);
                // (grid, work-group) per axis.
                let (grid, local): ([i64; 3], [i64; 3]) = match (&gemm, matmul_dims(*root_op)) {
                    // Tiles along (n, m); the batch times the split-K
                    // slices along z.
                    (Some(tiles), Some((batch, m, n))) if tiles.len() == 6 => {
                        let (tile_m, tile_n, work_m, work_n, split_k) =
                            (tiles[0], tiles[1], tiles[3], tiles[4], tiles[5]);
                        (
                            [
                                (n + tile_n - 1) / tile_n,
                                (m + tile_m - 1) / tile_m,
                                batch * split_k,
                            ],
                            [tile_n / work_n, tile_m / work_m, 1],
                        )
                    }
                    // One work-group per output element.
                    _ if row_reduce.is_some() => {
                        let points = work_items(&group.members);
                        ([points, 1, 1], [row_reduce.unwrap_or(64), 1, 1])
                    }
                    _ if matches!(
                        kind,
                        crate::config::KernelKind::Softmax | crate::config::KernelKind::LayerNorm
                    ) =>
                    {
                        // One work-group per row; the output is the last operand.
                        let output = root_op
                            .operand(root_op.operand_count().saturating_sub(1))
                            .map_err(|e| PassError::at(group_location, e.to_string()))?
                            .r#type();
                        let rows = memref_elements(&output.to_string()).unwrap_or(1)
                            / unsafe {
                                mlir_sys::mlirShapedTypeGetDimSize(
                                    output.to_raw(),
                                    (mlir_sys::mlirShapedTypeGetRank(output.to_raw()) - 1) as isize,
                                )
                            }
                            .max(1);
                        // Bufferization drops linalg.softmax's attributes: configure here.
                        let columns = unsafe {
                            mlir_sys::mlirShapedTypeGetDimSize(
                                output.to_raw(),
                                (mlir_sys::mlirShapedTypeGetRank(output.to_raw()) - 1) as isize,
                            )
                        };
                        let workgroup =
                            config_size.unwrap_or_else(|| target.row_workgroup(columns));
                        ([rows, 1, 1], [workgroup, 1, 1])
                    }
                    _ => {
                        let points = work_items(&group.members);
                        let workgroup = config_size
                            .unwrap_or_else(|| target.kernel_config(kind, points).workgroup_size);
                        let groups = (points + workgroup - 1) / workgroup;
                        (
                            [
                                max_workgroups.map_or(groups, |limit| groups.min(limit.max(1))),
                                1,
                                1,
                            ],
                            [workgroup, 1, 1],
                        )
                    }
                };
                let gemm = gemm.filter(|_| matmul_dims(*root_op).is_some());

                // The kernel.
                let body = Block::new(
                    &argument_types
                        .iter()
                        .map(|t| (*t, group_location))
                        .collect::<Vec<_>>(),
                );
                let mut map: HashMap<usize, mlir_sys::MlirValue> = HashMap::new();
                for (index, root_value) in roots.iter().enumerate() {
                    let argument: Value = body.argument(index).expect("argument exists").into();
                    map.insert(raw_key(*root_value), argument.to_raw());
                }
                for op in constants.iter().chain(views.iter()) {
                    clone_into(&body, *op, &mut map);
                }
                for op in &group.members {
                    if op_name(op) == "memref.copy" {
                        copy_as_generic(context, &body, *op, &map)?;
                    } else {
                        clone_into(&body, *op, &mut map);
                    }
                }
                body.append_operation(
                    OperationBuilder::new("gpu.return", group_location)
                        .build()
                        .map_err(|e| PassError::at(group_location, e.to_string()))?,
                );
                let region = Region::new();
                region.append_block(body);
                let function_type = FunctionType::new(context, &argument_types, &[]);
                let i64_type = IntegerType::new(context, 64).into();
                let kernel = OperationBuilder::new("gpu.func", group_location)
                    .add_attributes(&[
                        (
                            Identifier::new(context, "sym_name"),
                            StringAttribute::new(context, &group.name).into(),
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
                            DenseI32ArrayAttribute::new(context, &local.map(|v| v as i32)).into(),
                        ),
                        (
                            Identifier::new(context, "workgroup_attributions"),
                            IntegerAttribute::new(i64_type, 0).into(),
                        ),
                        (
                            Identifier::new(context, KIND_ATTR),
                            StringAttribute::new(context, kind.name()).into(),
                        ),
                    ])
                    .add_regions([region])
                    .build()
                    .map_err(|e| {
                        PassError::at(group_location, format!("cannot build gpu.func: {e}"))
                    })?;
                let kernel = block.append_operation(kernel);
                let flops = kernel_flops(&group.members);
                if flops > 0 {
                    let mut kernel = unsafe { OperationRefMut::from_raw(kernel.to_raw()) };
                    kernel.set_discardable_attribute(
                        FLOPS_ATTR,
                        IntegerAttribute::new(i64_type, flops).into(),
                    );
                }
                if let Some(workgroup) = row_reduce {
                    let mut kernel = unsafe { OperationRefMut::from_raw(kernel.to_raw()) };
                    kernel.set_discardable_attribute(
                        ROW_REDUCE_ATTR,
                        IntegerAttribute::new(i64_type, workgroup).into(),
                    );
                }
                if let Some(tiles) = &gemm {
                    let mut kernel = unsafe { OperationRefMut::from_raw(kernel.to_raw()) };
                    kernel.set_discardable_attribute(
                        GEMM_ATTR,
                        DenseI64ArrayAttribute::new(context, tiles).into(),
                    );
                    if let Some(sizes) = &split_k_scratch {
                        kernel.set_discardable_attribute(
                            SPLIT_K_SCRATCH_ATTR,
                            DenseI64ArrayAttribute::new(context, sizes).into(),
                        );
                    }
                }

                // The launch, where the group's last op was.
                let host_block = last
                    .block()
                    .ok_or_else(|| PassError::at(group_location, "kernel op outside a block"))?;
                let host_block = unsafe { BlockRef::from_raw(host_block.to_raw()) };
                let mut operands: Vec<Value> = grid
                    .iter()
                    .chain(local.iter())
                    .map(|size| index_constant(context, &host_block, last, *size, group_location))
                    .collect();
                operands.extend(roots.iter().copied());
                let kernel_symbol =
                    Attribute::parse(context, &format!("@{KERNEL_MODULE}::@{}", group.name))
                        .ok_or_else(|| {
                            PassError::at(group_location, "cannot build kernel symbol")
                        })?;
                let segments = DenseI32ArrayAttribute::new(
                    context,
                    &[0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, roots.len() as i32, 0],
                );
                let launch = OperationBuilder::new("gpu.launch_func", group_location)
                    .add_operands(&operands)
                    .add_attributes(&[
                        (Identifier::new(context, "kernel"), kernel_symbol),
                        (
                            Identifier::new(context, "operandSegmentSizes"),
                            segments.into(),
                        ),
                    ])
                    .build()
                    .map_err(|e| {
                        PassError::at(group_location, format!("cannot build gpu.launch_func: {e}"))
                    })?;
                host_block.insert_operation_before(last, launch);
                for member in group.members.iter().rev() {
                    let mut member = unsafe { OperationRefMut::from_raw(member.to_raw()) };
                    member.remove_from_parent();
                    unsafe { mlir_sys::mlirOperationDestroy(member.to_raw()) };
                }
            }
        }
        if kernel_block.is_some() {
            let unit = Attribute::unit(context);
            crate::ir::util::set_discardable_attribute(module, "gpu.container_module", unit);
        }
        Ok(())
    }
}
