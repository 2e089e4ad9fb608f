//! Plumbing shared by the passes that give template kernels extra buffers
//! (`tcc-attach-split-k-scratch`, `tcc-attach-tensor-map-slots`): finding
//! the kernels of `gpu.module @tcc_kernels` and their launches, appending
//! arguments to a `gpu.func`, and allocating a buffer before a launch.

use melior::ir::attribute::{DenseI32ArrayAttribute, TypeAttribute};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::r#type::{FunctionType, MemRefType};
use melior::ir::{BlockLike, Identifier, RegionLike, Type, TypeLike, Value, ValueLike};

use super::outline_kernels::KERNEL_MODULE;
use super::pass::PassError;
use crate::ir::operand::result_at;
use crate::ir::util::{body_ops, body_ops_named, string_value, symbol_names};

/// The `gpu.func`s of the module's `gpu.module @tcc_kernels`, with their
/// names.
pub(super) fn kernel_funcs<'c>(
    module: OperationRef<'c, 'c>,
) -> Vec<(OperationRef<'c, 'c>, String)> {
    body_ops_named(module, "gpu.module")
        .into_iter()
        .filter(|m| {
            m.attribute("sym_name")
                .ok()
                .and_then(string_value)
                .as_deref()
                == Some(KERNEL_MODULE)
        })
        .flat_map(body_ops)
        .map(|op| {
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            (op, name)
        })
        .collect()
}

/// Every `gpu.launch_func` of a `@tcc_kernels` kernel in the module's host
/// functions, with the kernel's name.
pub(super) fn kernel_launches<'c>(
    module: OperationRef<'c, 'c>,
) -> Vec<(OperationRef<'c, 'c>, String)> {
    let mut launches = Vec::new();
    for function in body_ops_named(module, "func.func") {
        for launch in body_ops_named(function, "gpu.launch_func") {
            if let Some((module_name, kernel_name)) =
                launch.attribute("kernel").ok().and_then(symbol_names)
                && module_name == KERNEL_MODULE
            {
                launches.push((launch, kernel_name));
            }
        }
    }
    launches
}

/// Adds arguments of `types` to a `gpu.func` (block and signature) after
/// its buffers, before its `index` arguments (a kernel on a symbolic
/// dimension's extents), as [`append_launch_operands`] adds the values.
pub(super) fn append_kernel_arguments<'c>(
    context: &'c melior::Context,
    kernel: OperationRef<'c, 'c>,
    types: &[Type<'c>],
) -> Result<(), PassError<'c>> {
    let location = kernel.location();
    let block = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| PassError::at(location, "a kernel without a body"))?;
    let mut inputs: Vec<Type> = (0..block.argument_count())
        .filter_map(|i| block.argument(i).ok())
        .map(|a| Value::from(a).r#type())
        .collect();
    let first_index = inputs
        .iter()
        .position(|t| t.is_index())
        .unwrap_or(inputs.len());
    for (offset, ty) in types.iter().enumerate() {
        let position = first_index + offset;
        unsafe {
            mlir_sys::mlirBlockInsertArgument(
                block.to_raw(),
                position as isize,
                ty.to_raw(),
                location.to_raw(),
            );
        }
        inputs.insert(position, *ty);
    }
    let mut kernel = unsafe { OperationRefMut::from_raw(kernel.to_raw()) };
    kernel.set_attribute(
        "function_type",
        TypeAttribute::new(FunctionType::new(context, &inputs, &[]).into()).into(),
    );
    Ok(())
}

/// A `memref.alloc` of `ty` before `launch`: a buffer `tcc-plan-memory`
/// then places in the arena, dead once the kernel has run.
pub(super) fn alloc_before<'c>(
    context: &'c melior::Context,
    launch: OperationRef<'c, 'c>,
    ty: Type<'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = launch.location();
    let block = launch
        .block()
        .ok_or_else(|| PassError::at(location, "gpu.launch_func outside a block"))?;
    let alloc = OperationBuilder::new("memref.alloc", location)
        .add_attributes(&[(
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(context, &[0, 0]).into(),
        )])
        .add_results(&[ty])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build memref.alloc: {e}")))?;
    let alloc = block.insert_operation_before(launch, alloc);
    result_at(alloc, 0).map_err(Into::into)
}

/// Appends `values` to `launch`'s kernel operands (through the op's
/// kernel-operand accessor, which keeps its operand segments right).
pub(super) fn append_launch_operands<'c>(
    launch: OperationRef<'c, 'c>,
    values: &[Value<'c, 'c>],
) -> Result<(), PassError<'c>> {
    let raw: Vec<_> = values.iter().map(|v| v.to_raw()).collect();
    if !unsafe { tcc_dialects::append_launch_kernel_operands(launch.to_raw(), &raw) } {
        return Err(PassError::at(launch.location(), "not a gpu.launch_func"));
    }
    Ok(())
}

/// `memref<Nx{element}>`.
pub(super) fn buffer_type(elements: i64, element: Type) -> Type {
    MemRefType::new(element, &[elements.max(1)], None, None).into()
}
