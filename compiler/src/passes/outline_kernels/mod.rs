//! `tcc-outline-kernels`: the gpu phase's first step. Moves each kernel
//! group (the ops of a `tcc.dispatch`, or a lone linalg op the
//! dispatch phase did not see, such as copies made by bufferization) into a
//! `gpu.func` of a `gpu.module @tcc_kernels`, and leaves a `gpu.launch_func`
//! in the host function.
//!
//! Kernel arguments are whole buffers (function arguments, allocations,
//! constants); views of them (expand/collapse_shape, subview, ...) are
//! rebuilt inside the kernel, so the runtime only ever passes `cl_mem`
//! handles. Scalar constants are cloned in. Each `gpu.func` carries its
//! group root's typed strategy (`tcc.strategy`, set by
//! `tcc-configure-kernels`) unchanged, and the launch covers the kernel's
//! parallel points as that strategy says; the mapping pass
//! (`tcc-map-loops-to-work-items`) makes a loop kernel's body cover any
//! iteration space with that launch. Outlining never consults the target.
//!
//! [`grouping`] finds the groups, [`capture`] what they use from outside,
//! [`build`] the kernel and its launch.

mod build;
mod capture;
mod dynamic;
mod grouping;

use melior::Context;
use melior::ir::attribute::Attribute;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, BlockRef, RegionLike, TypeLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::attr_names::{KIND, STRATEGY};
use crate::ir::dispatch;
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::{body_ops_named, collect_ops, dialect_of, op_name, string_value};
pub(super) use grouping::{is_host_copy, is_kernel_op};

pub struct OutlineKernels;

/// The gpu.module holding every kernel.
pub const KERNEL_MODULE: &str = "tcc_kernels";

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
            .and_then(|a| melior::ir::attribute::TypeAttribute::try_from(a).ok())
            .and_then(|a| melior::ir::r#type::FunctionType::try_from(a.value()).ok())
            .is_some_and(|ty| {
                (0..ty.input_count())
                    .filter_map(|i| ty.input(i).ok())
                    .chain((0..ty.result_count()).filter_map(|i| ty.result(i).ok()))
                    .any(|t| t.is_tensor())
            });
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

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let location = module.location();
        // A symbolic dimension (issue 33): strategies were chosen at the
        // largest declared maximum; the launch grid follows the extents on
        // the host (`dynamic::dynamic_grid`).
        let extent = crate::ir::dynamic::strategy_extent(&crate::ir::dynamic::module_dims(module));
        let target = crate::config::Target::of_module(module);
        let precision = crate::config::targets::of_module(module)
            .map_or(tcc_dialects::target::Precision::Fp32, |desc| desc.precision);
        let functions: Vec<_> = body_ops_named(module, "func.func");
        check_bufferized(module, &functions)?;
        // Kernels made here (for device ops bufferization made) are
        // numbered after every kernel the dispatch phase named.
        let ops = collect_ops(module);
        let kinds = ops.iter().filter(|op| op.attribute(KIND).is_ok()).count();
        let named = ops
            .iter()
            .filter(|op| dispatch::is_dispatch(op))
            .filter_map(|op| dispatch::name_of(*op))
            .filter_map(|name| name.rsplit('_').next()?.parse::<usize>().ok())
            .map(|index| index + 1)
            .max()
            .unwrap_or(0);
        let mut next_index = kinds.max(named);
        let module_body = module
            .region(0)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .first_block()
            .ok_or_else(|| PassError::at(location, "empty module"))?;
        let module_body = unsafe { BlockRef::from_raw(module_body.to_raw()) };
        // The kernel module, created on first use.
        let mut kernel_block: Option<BlockRef<'c, 'c>> = None;

        for function in functions {
            let kernels = grouping::dissolve_dispatches(function);
            let groups = grouping::kernel_groups(function, &kernels, &mut next_index);
            for group in grouping::split_hazardous(groups, &mut next_index) {
                let last = *group.members.last().expect("groups are non-empty");
                let group_location = last.location();
                let block = match kernel_block {
                    Some(block) => block,
                    None => {
                        *kernel_block.insert(build::kernel_module(context, module_body, location)?)
                    }
                };
                let captures = capture::captures(&group.members, &group.name, group_location)?;
                // The root op (the one the dispatch phase named the kernel
                // by) carries the group's strategy.
                let root_op = group
                    .members
                    .iter()
                    .find(|m| m.attribute(KIND).is_ok())
                    .unwrap_or(&last);
                let (strategy_attribute, strategy) = [root_op]
                    .into_iter()
                    .chain(&group.members)
                    .find_map(|m| {
                        let attribute = m.attribute(STRATEGY).ok()?;
                        Some((attribute, KernelStrategy::from_attribute(attribute)?))
                    })
                    .ok_or_else(|| {
                        PassError::at(
                            group_location,
                            format!(
                                "kernel {} has no strategy ({STRATEGY}): run tcc-configure-kernels first",
                                group.name
                            ),
                        )
                    })?;
                let counted = dynamic::is_dynamic_group(&group.members)
                    .then(|| dynamic::counted_buffer(&group.members, extent));
                let launch = build::launch_shape(
                    &strategy,
                    *root_op,
                    build::work_items(&group.members, extent),
                    target,
                    precision,
                );
                let plan = build::KernelPlan {
                    name: &group.name,
                    members: &group.members,
                    captures: &captures,
                    kind: super::form_dispatches::kind_of(*root_op),
                    strategy: strategy_attribute,
                    workgroup: launch.1,
                };
                let kernel = build::build_kernel(context, block, &plan, group_location)?;
                let launch_op = build::replace_by_launch(
                    kernel,
                    &group.members,
                    &captures.roots,
                    launch,
                    group_location,
                )?;
                if let Some(counted) = counted {
                    dynamic::dynamic_grid(context, launch_op, counted, &strategy, &group.name)?;
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
