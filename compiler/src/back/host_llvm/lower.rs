//! Lowers the host functions of the gpu phase to the LLVM dialect, with
//! builders (see `builder.rs`); `tcc-lower-host-to-llvm` runs it as a pass
//! and the host back end into a module of its own.
//!
//! Each host `func.func` becomes `llvm.func internal @tcc_entry_<name>(rt,
//! inputs, outputs) -> i32`: buffers are `!llvm.ptr` (opaque `tcc_buffer *`),
//! and every allocation, constant, launch and copy is an indirect
//! `llvm.call` through the runtime's function table (`tcc_runtime_api`,
//! whose layout comes from `tcc_abi`), followed by a status check that
//! branches to the common failure exit. Buffers planned by
//! `tcc-plan-memory` are `memref.view`s of the function's arena and become
//! `view(ctx, offset, bytes)` calls: the runtime owns the arena (one per
//! session, reused by every call). Other intermediate buffers come from
//! `alloc` and are released right after their last use (the runtime's
//! in-order queue makes that safe).

use std::collections::HashMap;

use melior::Context;
use melior::dialect::llvm;
use melior::ir::attribute::{ArrayAttribute, StringAttribute, TypeAttribute};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, BlockLike, Operation, Region, RegionLike, Type, Value, ValueLike};

use super::builder::Builder;
use super::writer::{FunctionDesc, TensorDesc, byte_size};
use crate::back::opencl_c::{ElementType, Program};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::attr_names;
use crate::ir::memref::MemRefLayout;
use crate::ir::operand::{operand_at, result_at};
use crate::ir::util::{body_ops, integer_value, op_name, ops_named, string_value};

/// Fields of the runtime table, found by name in the ABI table.
const CTX: i32 = tcc_abi::RUNTIME_API.field("ctx") as i32;
const ALLOC: i32 = tcc_abi::RUNTIME_API.field("alloc") as i32;
const RELEASE: i32 = tcc_abi::RUNTIME_API.field("release") as i32;
const CONSTANT: i32 = tcc_abi::RUNTIME_API.field("constant") as i32;
const LAUNCH: i32 = tcc_abi::RUNTIME_API.field("launch") as i32;
const COPY: i32 = tcc_abi::RUNTIME_API.field("copy") as i32;
const VIEW: i32 = tcc_abi::RUNTIME_API.field("view") as i32;
/// Fields of `tcc_arg`.
const ARG_KIND: i32 = tcc_abi::ARG.field("kind") as i32;
const ARG_RESERVED: i32 = tcc_abi::ARG.field("reserved") as i32;
const ARG_VALUE: i32 = tcc_abi::ARG.field("value") as i32;

/// A kernel the host code may launch: its index in the program (the
/// runtime's kernel number) and how many buffers it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSlot {
    pub index: u32,
    pub buffers: usize,
}

/// The kernels by name.
pub type Kernels = HashMap<String, KernelSlot>;

/// The kernels of a translated program, in its order.
pub fn kernels_of_program(program: &Program) -> Kernels {
    program
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            (
                k.name.clone(),
                KernelSlot {
                    index: i as u32,
                    buffers: k.args.len(),
                },
            )
        })
        .collect()
}

/// The `gpu.func`s of a module, in module order (the order the OpenCL C
/// writer numbers them in), each taking one buffer per argument.
pub fn kernels_of_module(module: OperationRef) -> Kernels {
    ops_named(module, "gpu.func")
        .into_iter()
        .enumerate()
        .filter_map(|(i, kernel)| {
            let name = kernel.attribute("sym_name").ok().and_then(string_value)?;
            let buffers = kernel
                .region(0)
                .ok()
                .and_then(|r| r.first_block())
                .map_or(0, |b| b.argument_count());
            Some((
                name,
                KernelSlot {
                    index: i as u32,
                    buffers,
                },
            ))
        })
        .collect()
}

/// The index of every `memref.global` (the runtime's constant number), in
/// module order.
pub fn constant_indices(module: OperationRef) -> HashMap<String, u32> {
    body_ops(module)
        .into_iter()
        .filter(|op| op_name(op) == "memref.global")
        .enumerate()
        .map(|(i, op)| {
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            (name, i as u32)
        })
        .collect()
}

/// The leaf name of a symbol reference (`@kernels::@k` gives `k`).
fn symbol_leaf(attribute: Attribute) -> Option<String> {
    crate::ir::util::symbol_names(attribute).map(|(_, leaf)| leaf)
}

pub(super) fn memref_desc(ty: Type, name: String) -> Result<TensorDesc, String> {
    let layout = MemRefLayout::of(ty).ok_or_else(|| format!("{ty} is not a buffer"))?;
    let element = ElementType::of_type(layout.element)
        .ok_or_else(|| format!("unsupported element type in {ty}"))?;
    Ok(TensorDesc {
        name,
        element,
        shape: layout.shape,
        unsigned: false,
        minifloat: String::new(),
    })
}

/// The bytes a buffer of `tensor` takes on the device: half of its f32
/// bytes where `tcc-narrow-storage` stores it as f16 or bf16 (the op, an
/// allocation or an arena view, carries `tcc.storage`).
fn stored_byte_size(op: OperationRef, tensor: &TensorDesc) -> u64 {
    let bytes = byte_size(tensor);
    match crate::ir::storage::op_storage(&op) {
        Some(storage)
            if (melior::ir::r#type::TypeLike::is_f16(&storage)
                || melior::ir::r#type::TypeLike::is_bf16(&storage))
                && tensor.element.size_bytes() == 4 =>
        {
            bytes / 2
        }
        _ => bytes,
    }
}

fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// The ABI description of a host function: its name, its inputs and
/// outputs (`tcc.num_outputs` trailing arguments) and its arena.
/// The elements of the array attribute `name` of `function` (none when it
/// is missing or not an array; `None` for an element that cannot be read).
fn array_elements<'c>(function: &OperationRef<'c, '_>, name: &str) -> Vec<Option<Attribute<'c>>> {
    function
        .attribute(name)
        .ok()
        .and_then(|a| ArrayAttribute::try_from(a).ok())
        .map(|array| (0..array.len()).map(|i| array.element(i).ok()).collect())
        .unwrap_or_default()
}

pub fn describe(function: OperationRef) -> Result<FunctionDesc, CodegenError> {
    let name = function
        .attribute("sym_name")
        .ok()
        .and_then(string_value)
        .ok_or_else(|| CodegenError::at(&function, "function without a name"))?;
    let num_outputs = function
        .attribute(attr_names::NUM_OUTPUTS)
        .ok()
        .and_then(integer_value)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            CodegenError::at(
                &function,
                format!(
                    "@{name} lacks {}: run the input phase first",
                    attr_names::NUM_OUTPUTS
                ),
            )
        })?;
    let names: Vec<String> = array_elements(&function, attr_names::IO_NAMES)
        .into_iter()
        .filter_map(|e| e.and_then(string_value))
        .collect();
    let unsigned: Vec<bool> = array_elements(&function, attr_names::IO_UNSIGNED)
        .into_iter()
        .map(|e| e.and_then(integer_value).is_some_and(|v| v != 0))
        .collect();
    let minifloats: Vec<String> = array_elements(&function, attr_names::IO_MINIFLOAT)
        .into_iter()
        .map(|e| e.and_then(string_value).unwrap_or_default())
        .collect();
    let region = function.region(0).at(&function)?;
    let block = region
        .first_block()
        .ok_or_else(|| CodegenError::at(&function, format!("@{name} has no body")))?;
    let argument_count = block.argument_count();
    if argument_count < num_outputs {
        return Err(CodegenError::at(
            &function,
            format!("@{name}: {argument_count} arguments but {num_outputs} outputs"),
        ));
    }
    let planned = |attribute: &str| -> Result<u64, CodegenError> {
        match function.attribute(attribute) {
            Err(_) => Ok(0),
            Ok(value) => integer_value(value)
                .and_then(|v| u64::try_from(v).ok())
                .ok_or_else(|| {
                    CodegenError::at(&function, format!("@{name}: {attribute} is not a size"))
                }),
        }
    };
    let mut desc = FunctionDesc {
        name: name.clone(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        arena_bytes: planned(attr_names::ARENA_BYTES)?,
        arena_alignment: planned(attr_names::ARENA_ALIGNMENT)?,
    };
    for index in 0..argument_count {
        let argument = block.argument(index).at(&function)?;
        let mut tensor = memref_desc(
            argument.r#type(),
            names.get(index).cloned().unwrap_or_default(),
        )
        .map_err(|e| CodegenError::at(&function, format!("@{name} argument {index}: {e}")))?;
        tensor.unsigned = unsigned.get(index).copied().unwrap_or(false);
        tensor.minifloat = minifloats.get(index).cloned().unwrap_or_default();
        if index < argument_count - num_outputs {
            desc.inputs.push(tensor);
        } else {
            desc.outputs.push(tensor);
        }
    }
    Ok(desc)
}

/// Lowers the host function `function` to `llvm.func internal
/// @tcc_entry_<name>`, which `insert` places (and returns); returns it with
/// the function's ABI description. `lowering` is kept at the op being
/// lowered (the function, then each op of its body), so that a caller can
/// locate an error at it.
pub fn lower_function<'c>(
    context: &'c Context,
    function: OperationRef<'c, 'c>,
    constants: &HashMap<String, u32>,
    kernels: &Kernels,
    lowering: &mut OperationRef<'c, 'c>,
    insert: impl FnOnce(Operation<'c>) -> OperationRef<'c, 'c>,
) -> Result<(OperationRef<'c, 'c>, FunctionDesc), CodegenError> {
    *lowering = function;
    let desc = describe(function)?;
    let name = desc.name.clone();
    // Types of a dialect exist only once it is loaded.
    context.get_or_load_dialect("llvm");
    let at = |op: &OperationRef, e: &dyn std::fmt::Display| CodegenError::at(op, e.to_string());
    let location = function.location();
    let ptr = llvm::r#type::pointer(context, 0);
    let i32_type: Type<'c> = melior::ir::r#type::IntegerType::new(context, 32).into();
    let entry = insert(llvm::func(
        context,
        StringAttribute::new(context, &format!("{}{name}", tcc_abi::ENTRY_PREFIX)),
        TypeAttribute::new(llvm::r#type::function(i32_type, &[ptr, ptr, ptr], false)),
        Region::new(),
        &[(
            melior::ir::Identifier::new(context, "linkage"),
            llvm::attributes::linkage(context, llvm::attributes::Linkage::Internal),
        )],
        location,
    ));
    let mut b = Builder::new(context, entry, &[ptr, ptr, ptr])?;
    let t = b.types;
    let (rt, inputs, outputs) = (b.argument(0)?, b.argument(1)?, b.argument(2)?);
    let zero = b.constant(0, t.i32)?;
    let one = b.constant(1, t.i32)?;
    let ctx_address = b.gep(rt, &[0, CTX], t.api)?;
    let ctx = b.load(ctx_address, t.ptr)?;
    // Loads field `field` of the runtime table.
    let api_field = |b: &Builder<'c>, field: i32| -> Result<Value<'c, 'c>, CodegenError> {
        let address = b.gep(rt, &[0, field], t.api)?;
        b.load(address, t.ptr)
    };
    // Calls table entry `field` and checks its status.
    let call_checked =
        |b: &mut Builder<'c>, field: i32, args: &[Value<'c, 'c>]| -> Result<(), CodegenError> {
            let callee = api_field(b, field)?;
            let status = b
                .call(callee, args, Some(t.i32))?
                .ok_or_else(|| CodegenError::new("internal error: a call without a status"))?;
            b.check(status, zero)
        };
    // Calls a table entry that returns a buffer through an out-pointer.
    let call_for_buffer = |b: &mut Builder<'c>,
                           field: i32,
                           mut args: Vec<Value<'c, 'c>>|
     -> Result<Value<'c, 'c>, CodegenError> {
        let slot = b.alloca(one, t.ptr)?;
        args.push(slot);
        call_checked(b, field, &args)?;
        b.load(slot, t.ptr)
    };
    let release = |b: &Builder<'c>, buffer: Value<'c, 'c>| -> Result<(), CodegenError> {
        let callee = api_field(b, RELEASE)?;
        b.call(callee, &[ctx, buffer], None).map(|_| ())
    };

    // The lowered value of each host value: buffers (ptr) and index
    // constants (i64).
    let mut values: HashMap<usize, Value<'c, 'c>> = HashMap::new();
    let block = function
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| CodegenError::at(&function, format!("@{name} has no body")))?;
    let num_inputs = desc.inputs.len();
    for index in 0..block.argument_count() {
        let argument: Value = block.argument(index).map_err(|e| at(&function, &e))?.into();
        let (table, slot) = if index < num_inputs {
            (inputs, index)
        } else {
            (outputs, index - num_inputs)
        };
        let address = b.gep(table, &[slot as i32], t.ptr)?;
        values.insert(key(argument), b.load(address, t.ptr)?);
    }

    // Last use of each value, to release allocations right after it.
    let ops = body_ops(function);
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for (position, op) in ops.iter().enumerate() {
        for operand in op.operands() {
            last_use.insert(key(operand), position);
        }
    }
    // The arena allocation's result; only memref.view may use it.
    let mut arena: Option<usize> = None;
    let mut allocations: Vec<(usize, Value<'c, 'c>)> = Vec::new();
    let operand = |values: &HashMap<usize, Value<'c, 'c>>,
                   op: OperationRef<'c, 'c>,
                   index: usize,
                   what: &str|
     -> Result<Value<'c, 'c>, CodegenError> {
        let operand = operand_at(op, index)?;
        values
            .get(&key(operand))
            .copied()
            .ok_or_else(|| CodegenError::at(&op, format!("{what} is not a known host value")))
    };
    let result_of =
        |op: OperationRef<'c, 'c>| -> Result<Value<'c, 'c>, CodegenError> { Ok(result_at(op, 0)?) };
    let tensor_of = |op: OperationRef<'c, 'c>, value: Value| -> Result<TensorDesc, CodegenError> {
        memref_desc(value.r#type(), String::new()).at(&op)
    };

    for (position, op) in ops.iter().enumerate() {
        let op = *op;
        *lowering = op;
        match op_name(&op).as_str() {
            "arith.constant" => {
                let value = op
                    .attribute("value")
                    .ok()
                    .and_then(integer_value)
                    .ok_or_else(|| CodegenError::at(&op, "host constants must be integers"))?;
                values.insert(key(result_of(op)?), b.constant(value, t.i64)?);
            }
            "memref.alloc" if op.attribute(attr_names::ARENA).is_ok() => {
                let result = result_of(op)?;
                let tensor = tensor_of(op, result)?;
                if arena.is_some() || byte_size(&tensor) != desc.arena_bytes {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "@{name}: the arena must be one allocation of {} = {} bytes",
                            attr_names::ARENA_BYTES,
                            desc.arena_bytes
                        ),
                    ));
                }
                arena = Some(key(result));
            }
            "memref.view" => {
                let source = operand_at(op, 0)?;
                if Some(key(source)) != arena || op.operand_count() != 2 {
                    return Err(CodegenError::at(
                        &op,
                        "host views must be static views of the function's arena (run tcc-plan-memory)",
                    ));
                }
                let offset = operand(&values, op, 1, "the view's offset")?;
                let result = result_of(op)?;
                let tensor = tensor_of(op, result)?;
                let bytes = b.constant(stored_byte_size(op, &tensor).max(1) as i64, t.i64)?;
                let buffer = call_for_buffer(&mut b, VIEW, vec![ctx, offset, bytes])?;
                values.insert(key(result), buffer);
            }
            "memref.alloc" => {
                let result = result_of(op)?;
                let tensor = tensor_of(op, result)?;
                let bytes = b.constant(stored_byte_size(op, &tensor).max(1) as i64, t.i64)?;
                let buffer = call_for_buffer(&mut b, ALLOC, vec![ctx, bytes])?;
                values.insert(key(result), buffer);
                allocations.push((key(result), buffer));
            }
            "memref.get_global" => {
                let global = op
                    .attribute("name")
                    .ok()
                    .and_then(symbol_leaf)
                    .unwrap_or_default();
                let index = *constants
                    .get(&global)
                    .ok_or_else(|| CodegenError::at(&op, format!("unknown global @{global}")))?;
                let index = b.constant(index as i64, t.i32)?;
                let buffer = call_for_buffer(&mut b, CONSTANT, vec![ctx, index])?;
                values.insert(key(result_of(op)?), buffer);
            }
            "gpu.launch_func" => {
                let kernel = op
                    .attribute("kernel")
                    .ok()
                    .and_then(symbol_leaf)
                    .unwrap_or_default();
                let slot = *kernels.get(&kernel).ok_or_else(|| {
                    CodegenError::at(&op, format!("launch of unknown kernel {kernel}"))
                })?;
                // Operands: grid xyz, block xyz, then the kernel's buffers.
                let sizes: Vec<Value<'c, 'c>> = (0..6)
                    .map(|i| operand(&values, op, i, "a launch size"))
                    .collect::<Result<_, _>>()?;
                let buffers: Vec<Value<'c, 'c>> = (6..op.operand_count())
                    .map(|i| operand(&values, op, i, "a kernel argument"))
                    .collect::<Result<_, _>>()?;
                if buffers.len() != slot.buffers {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "launch passes {} buffers, kernel {kernel} takes {}",
                            buffers.len(),
                            slot.buffers
                        ),
                    ));
                }
                let sizes_type = llvm::r#type::array(t.i64, 3);
                let global = b.alloca(one, sizes_type)?;
                let local = b.alloca(one, sizes_type)?;
                for axis in 0..3 {
                    let work_items = b.mul(sizes[axis], sizes[axis + 3])?;
                    for (array, value) in [(global, work_items), (local, sizes[axis + 3])] {
                        let address = b.gep(array, &[0, axis as i32], sizes_type)?;
                        b.store(value, address);
                    }
                }
                // tcc_arg[]: {kind = TCC_ARG_BUFFER, reserved, value}.
                let args_type = llvm::r#type::array(t.arg, buffers.len().max(1) as u32);
                let args = b.alloca(one, args_type)?;
                for (slot, buffer) in buffers.iter().enumerate() {
                    for (field, value) in
                        [(ARG_KIND, zero), (ARG_RESERVED, zero), (ARG_VALUE, *buffer)]
                    {
                        let address = b.gep(args, &[0, slot as i32, field], args_type)?;
                        b.store(value, address);
                    }
                }
                let kernel_id = b.constant(slot.index as i64, t.i32)?;
                let dims = b.constant(3, t.i32)?;
                let num_args = b.constant(buffers.len() as i64, t.i32)?;
                call_checked(
                    &mut b,
                    LAUNCH,
                    &[ctx, kernel_id, dims, global, local, num_args, args],
                )?;
            }
            "memref.copy" => {
                let source = operand_at(op, 0)?;
                let tensor = tensor_of(op, source)?;
                let src = operand(&values, op, 0, "the copy's source")?;
                let dst = operand(&values, op, 1, "the copy's target")?;
                let offset = b.constant(0, t.i64)?;
                let bytes = b.constant(byte_size(&tensor) as i64, t.i64)?;
                call_checked(&mut b, COPY, &[ctx, dst, offset, src, offset, bytes])?;
            }
            "memref.dealloc" => {}
            "func.return" => {
                for (_, buffer) in std::mem::take(&mut allocations) {
                    release(&b, buffer)?;
                }
                b.ret(zero);
                continue;
            }
            other => {
                return Err(CodegenError::at(
                    &op,
                    format!("the host code generator cannot translate '{other}'"),
                ));
            }
        }
        // Release allocations whose last use this op was.
        let (done, keep): (Vec<_>, Vec<_>) = allocations
            .into_iter()
            .partition(|(k, _)| last_use.get(k) == Some(&position));
        allocations = keep;
        for (_, buffer) in done {
            release(&b, buffer)?;
        }
    }
    Ok((entry, desc))
}

/// Replaces every host `func.func` of `module` by its `llvm.func` entry, in
/// place (what `tcc-lower-host-to-llvm` does): kernels are numbered in
/// module order, constants too. Returns the functions' ABI descriptions,
/// or the error with the op it is about (a function or one of its ops).
pub fn lower_module<'c>(
    context: &'c Context,
    module: OperationRef<'c, 'c>,
) -> Result<Vec<FunctionDesc>, (OperationRef<'c, 'c>, CodegenError)> {
    let constants = constant_indices(module);
    let kernels = kernels_of_module(module);
    let mut functions = Vec::new();
    for function in crate::ir::util::body_ops_named(module, "func.func") {
        let block = function.block().ok_or_else(|| {
            (
                function,
                CodegenError::at(&function, "a function outside any block"),
            )
        })?;
        let mut lowering = function;
        let (_, desc) = lower_function(
            context,
            function,
            &constants,
            &kernels,
            &mut lowering,
            |entry| block.insert_operation_before(function, entry),
        )
        .map_err(|e| (lowering, e))?;
        crate::ir::util::erase_op(function);
        functions.push(desc);
    }
    Ok(functions)
}
