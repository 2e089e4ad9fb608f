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
//!
//! A function on a symbolic dimension (`tcc compile --dim`, issue 33)
//! reads the call's extents from the table's `shapes` (ABI 4: every
//! input's, then every output's): a `memref.dim` and every extent a view,
//! an allocation, a copy or a kernel's scalar argument needs is computed
//! from them (`extent`), and the host's `index` arithmetic (the launch
//! grids outlining computed) becomes LLVM integer ops.

use std::collections::HashMap;

use melior::Context;
use melior::dialect::llvm;
use melior::ir::attribute::{ArrayAttribute, StringAttribute, TypeAttribute};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, BlockLike, Operation, Region, RegionLike, Type, Value, ValueLike};

use super::builder::Builder;
use super::writer::{FunctionDesc, TensorDesc, byte_size};
use crate::back::opencl_c::{ElementType, IndexWidth, Program, ScalarArg};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::attr_names;
use crate::ir::memref::{DYNAMIC, MemRefLayout};
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
const SHAPES: i32 = tcc_abi::RUNTIME_API.field("shapes") as i32;
/// Fields of `tcc_arg`.
const ARG_KIND: i32 = tcc_abi::ARG.field("kind") as i32;
const ARG_RESERVED: i32 = tcc_abi::ARG.field("reserved") as i32;
const ARG_VALUE: i32 = tcc_abi::ARG.field("value") as i32;

/// A kernel the host code may launch: its index in the program (the
/// runtime's kernel number), how many buffers it takes and, where the
/// OpenCL C writer translated it, its scalar arguments after the buffers
/// (a kernel on a symbolic dimension) and their `enum tcc_arg_kind` (the
/// program's index width).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSlot {
    pub index: u32,
    pub buffers: usize,
    pub scalars: Option<Vec<ScalarArg>>,
    pub scalar_kind: u32,
}

/// The kernels by name.
pub type Kernels = HashMap<String, KernelSlot>;

/// The kernels of a translated program, in its order.
pub fn kernels_of_program(program: &Program) -> Kernels {
    let scalar_kind = match program.index_width {
        IndexWidth::Bits32 => tcc_abi::ARG_I32,
        IndexWidth::Bits64 => tcc_abi::ARG_I64,
    };
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
                    scalars: Some(k.scalars.clone()),
                    scalar_kind,
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
                    scalars: None,
                    scalar_kind: tcc_abi::ARG_I64,
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
        dims: Vec::new(),
    })
}

/// Names the symbolic extents of `tensor`, argument `index` of `function`
/// (`tcc.dim_names`, or with no names and one dimension the function
/// keeps symbolic, that one), and returns the names it uses.
fn name_dims(
    function: &OperationRef,
    index: usize,
    tensor: &mut TensorDesc,
    declared: &tcc_dialects::dims::Dims,
    what: &str,
) -> Result<Vec<String>, CodegenError> {
    if !tensor.shape.contains(&DYNAMIC) {
        return Ok(Vec::new());
    }
    let label = if tensor.name.is_empty() {
        what.to_string()
    } else {
        format!("{what} ('{}')", tensor.name)
    };
    // The dimensions the function keeps symbolic: the declared ones but
    // those a static variant fixes (`--specialize sequence=128` leaves
    // the batch).
    let fixed = function
        .attribute(crate::ir::dynamic::SPECIALIZED_DIMS)
        .ok()
        .and_then(tcc_dialects::dims::string_array)
        .unwrap_or_default();
    let kept: Vec<&tcc_dialects::dims::DimRange> = declared
        .0
        .iter()
        .filter(|d| !fixed.contains(&d.name))
        .collect();
    let names = match crate::ir::dynamic::argument_dim_names(function, index) {
        Some(names) => names,
        None if kept.len() == 1 => tensor
            .shape
            .iter()
            .map(|&d| {
                if d == DYNAMIC {
                    kept[0].name.clone()
                } else {
                    String::new()
                }
            })
            .collect(),
        None => {
            return Err(CodegenError::at(
                function,
                format!(
                    "{label} has a dynamic dimension but names none (tcc.dim_names) while {} dimensions are declared ({})",
                    declared.0.len(),
                    crate::ir::dynamic::describe_dims(declared)
                ),
            ));
        }
    };
    if names.len() != tensor.shape.len() {
        return Err(CodegenError::at(
            function,
            format!(
                "{label}: {} dimension names for a tensor of rank {}",
                names.len(),
                tensor.shape.len()
            ),
        ));
    }
    let mut used = Vec::new();
    for (axis, (&d, name)) in tensor.shape.iter().zip(&names).enumerate() {
        match (d == DYNAMIC, name.is_empty()) {
            (true, true) | (false, false) => {
                return Err(CodegenError::at(
                    function,
                    format!(
                        "{label}: dimension {axis} is {} but its name is '{name}'",
                        if d == DYNAMIC { "dynamic" } else { "static" }
                    ),
                ));
            }
            (true, false) if declared.get(name).is_none() => {
                return Err(CodegenError::at(
                    function,
                    format!("{label}: dimension {axis} names '{name}', which is not declared"),
                ));
            }
            (true, false) => used.push(name.clone()),
            (false, true) => {}
        }
    }
    tensor.dims = names;
    Ok(used)
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
        dims: Vec::new(),
        specializations: Vec::new(),
    };
    let declared = crate::ir::dynamic::module_dims(function);
    let (mut given, mut needed) = (Vec::new(), Vec::new());
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
            let what = format!("@{name} input {index}");
            given.extend(name_dims(&function, index, &mut tensor, &declared, &what)?);
            desc.inputs.push(tensor);
        } else {
            let what = format!("@{name} output {}", index + num_outputs - argument_count);
            for dim in name_dims(&function, index, &mut tensor, &declared, &what)? {
                needed.push((dim, what.clone()));
            }
            desc.outputs.push(tensor);
        }
    }
    // An output's extent is known before the call only from the inputs.
    if let Some((dim, what)) = needed.iter().find(|(d, _)| !given.contains(d)) {
        return Err(CodegenError::at(
            &function,
            format!(
                "{what} has the dynamic dimension '{dim}', which no input gives: its extent would be known only after the call"
            ),
        ));
    }
    desc.dims = declared
        .0
        .iter()
        .filter(|d| given.contains(&d.name))
        .map(|d| tcc_abi::symbolic::DimEntry {
            name: d.name.clone(),
            min: d.min as u64,
            max: d.max as u64,
        })
        .collect();
    Ok(desc)
}

/// The ops whose result is its source buffer seen through another shape
/// (contiguous reshapes and casts): on the host the same buffer.
const ALIASES: &[&str] = &[
    "memref.collapse_shape",
    "memref.expand_shape",
    "memref.cast",
];

/// Where the host code of a function on a symbolic dimension reads its
/// extents: the call's shapes (`rt->shapes`, ABI 4) and each argument's
/// first entry in them; extents already read or computed are kept.
struct Extents<'c> {
    shapes: Option<Value<'c, 'c>>,
    offsets: HashMap<usize, usize>,
    cache: HashMap<(usize, usize), Value<'c, 'c>>,
}

/// The extent of host buffer `memref` along `axis` as an `i64` value:
/// a constant where its type says it; for a function argument the call's
/// shape entry; for a reshape, cast, arena view or allocation the
/// extent it was made with. `op` locates errors.
fn extent<'c>(
    b: &Builder<'c>,
    extents: &mut Extents<'c>,
    values: &HashMap<usize, Value<'c, 'c>>,
    op: OperationRef<'c, 'c>,
    memref: Value<'c, 'c>,
    axis: usize,
) -> Result<Value<'c, 'c>, CodegenError> {
    let t = b.types;
    let shape = MemRefLayout::of(memref.r#type())
        .map(|l| l.shape)
        .ok_or_else(|| CodegenError::at(&op, format!("{} is not a buffer", memref.r#type())))?;
    let size = *shape.get(axis).ok_or_else(|| {
        CodegenError::at(
            &op,
            format!("dimension {axis} of a rank-{} buffer", shape.len()),
        )
    })?;
    if size != DYNAMIC {
        return b.constant(size, t.i64);
    }
    if let Some(&known) = extents.cache.get(&(key(memref), axis)) {
        return Ok(known);
    }
    let unknown = || {
        CodegenError::at(
            &op,
            format!(
                "the host code cannot tell dynamic dimension {axis} of {}: not an argument, a reshape, an arena view or an allocation",
                memref.r#type()
            ),
        )
    };
    let lowered = |operand: Value<'c, 'c>| {
        values.get(&key(operand)).copied().ok_or_else(|| {
            CodegenError::at(&op, "a dynamic size is not a known host value".to_string())
        })
    };
    // The n-th dynamic dimension of `memref`'s type.
    let nth = shape[..axis].iter().filter(|&&d| d == DYNAMIC).count();
    let value = if let Some(&offset) = extents.offsets.get(&key(memref)) {
        let shapes = extents.shapes.ok_or_else(unknown)?;
        let address = b.gep(shapes, &[(offset + axis) as i32], t.i64)?;
        b.load(address, t.i64)?
    } else {
        let source_op = crate::ir::util::defining_op(memref).ok_or_else(unknown)?;
        match op_name(&source_op).as_str() {
            "memref.cast" => {
                let source = operand_at(source_op, 0)?;
                extent(b, extents, values, op, source, axis)?
            }
            "memref.expand_shape" => lowered(operand_at(source_op, 1 + nth)?)?,
            "memref.view" => lowered(operand_at(source_op, 2 + nth)?)?,
            "memref.alloc" => lowered(operand_at(source_op, nth)?)?,
            "memref.collapse_shape" => {
                let source = operand_at(source_op, 0)?;
                let groups = crate::ir::util::reassociation(source_op).ok_or_else(unknown)?;
                let group = groups.get(axis).ok_or_else(unknown)?.clone();
                let mut product = b.constant(1, t.i64)?;
                for source_axis in group {
                    let factor = extent(b, extents, values, op, source, source_axis as usize)?;
                    product = b.mul(product, factor)?;
                }
                product
            }
            _ => return Err(unknown()),
        }
    };
    extents.cache.insert((key(memref), axis), value);
    Ok(value)
}

/// The bytes of a buffer of `tensor` whose symbolic extents are
/// `dynamic` (in order), as an `i64` value: the static part (stored as
/// `op` says, [`stored_byte_size`]) times each dynamic extent.
fn dynamic_bytes<'c>(
    b: &Builder<'c>,
    op: OperationRef,
    tensor: &TensorDesc,
    dynamic: &[Value<'c, 'c>],
    stored: bool,
) -> Result<Value<'c, 'c>, CodegenError> {
    let unit = TensorDesc {
        shape: tensor
            .shape
            .iter()
            .map(|&d| if d == DYNAMIC { 1 } else { d })
            .collect(),
        ..tensor.clone()
    };
    let static_bytes = if stored {
        stored_byte_size(op, &unit)
    } else {
        byte_size(&unit)
    };
    let mut bytes = b.constant(static_bytes as i64, b.types.i64)?;
    for &size in dynamic {
        bytes = b.mul(bytes, size)?;
    }
    Ok(bytes)
}

/// The `llvm` op of an `arith` op on host `index` values (extents and the
/// launch sizes computed from them), if it has one.
fn index_op(name: &str) -> Option<&'static str> {
    Some(match name {
        "arith.addi" => "llvm.add",
        "arith.subi" => "llvm.sub",
        "arith.muli" => "llvm.mul",
        "arith.divsi" => "llvm.sdiv",
        "arith.divui" => "llvm.udiv",
        "arith.remsi" => "llvm.srem",
        "arith.remui" => "llvm.urem",
        "arith.minsi" => "llvm.intr.smin",
        "arith.minui" => "llvm.intr.umin",
        "arith.maxsi" => "llvm.intr.smax",
        "arith.maxui" => "llvm.intr.umax",
        _ => return None,
    })
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
    // A function on a symbolic dimension reads the call's shapes: every
    // input's extents, then every output's (ABI 4).
    let mut extents = Extents {
        shapes: None,
        offsets: HashMap::new(),
        cache: HashMap::new(),
    };
    if !desc.dims.is_empty() {
        let address = b.gep(rt, &[0, SHAPES], t.api)?;
        extents.shapes = Some(b.load(address, t.ptr)?);
    }
    let mut flat = 0;
    for index in 0..block.argument_count() {
        let argument: Value = block.argument(index).map_err(|e| at(&function, &e))?.into();
        let (table, slot) = if index < num_inputs {
            (inputs, index)
        } else {
            (outputs, index - num_inputs)
        };
        let address = b.gep(table, &[slot as i32], t.ptr)?;
        values.insert(key(argument), b.load(address, t.ptr)?);
        extents.offsets.insert(key(argument), flat);
        flat += desc
            .inputs
            .iter()
            .chain(&desc.outputs)
            .nth(index)
            .map_or(0, |t| t.shape.len());
    }

    // Last use of each value, to release allocations right after it; a
    // reshape or cast of a buffer is a use of the buffer.
    let ops = body_ops(function);
    let mut root: HashMap<usize, usize> = HashMap::new();
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for (position, op) in ops.iter().enumerate() {
        for operand in op.operands() {
            let source = *root.get(&key(operand)).unwrap_or(&key(operand));
            last_use.insert(source, position);
        }
        if ALIASES.contains(&op_name(op).as_str())
            && let (Ok(source), Ok(result)) = (operand_at(*op, 0), result_at(*op, 0))
        {
            let source = *root.get(&key(source)).unwrap_or(&key(source));
            root.insert(key(result), source);
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
            name if index_op(name).is_some()
                || name.starts_with("arith.ceildiv")
                || name == "arith.floordivsi" =>
            {
                let lhs = operand(&values, op, 0, "an index operand")?;
                let rhs = operand(&values, op, 1, "an index operand")?;
                let value = match name {
                    // (a + b - 1) / b: extents and sizes are not negative.
                    "arith.ceildivui" => {
                        let one = b.constant(1, t.i64)?;
                        let bias = b.binary("llvm.sub", rhs, one)?;
                        let sum = b.binary("llvm.add", lhs, bias)?;
                        b.binary("llvm.udiv", sum, rhs)?
                    }
                    // The truncated quotient moved by one where the
                    // remainder is not zero and the exact quotient is
                    // positive (ceil) or negative (floor).
                    "arith.ceildivsi" | "arith.floordivsi" => {
                        let quotient = b.binary("llvm.sdiv", lhs, rhs)?;
                        let remainder = b.binary("llvm.srem", lhs, rhs)?;
                        let zero = b.constant(0, t.i64)?;
                        let inexact = b.icmp(1, remainder, zero)?;
                        let remainder_negative = b.icmp(2, remainder, zero)?;
                        let divisor_negative = b.icmp(2, rhs, zero)?;
                        // eq (ceil: same signs) or ne (floor: different).
                        let predicate = if name == "arith.ceildivsi" { 0 } else { 1 };
                        let signs = b.icmp(predicate, remainder_negative, divisor_negative)?;
                        let step = b.select(inexact, signs, inexact)?;
                        let step = b.cast("llvm.zext", step, t.i64)?;
                        if name == "arith.ceildivsi" {
                            b.binary("llvm.add", quotient, step)?
                        } else {
                            b.binary("llvm.sub", quotient, step)?
                        }
                    }
                    _ => b.binary(index_op(name).unwrap_or_default(), lhs, rhs)?,
                };
                values.insert(key(result_of(op)?), value);
            }
            "arith.index_cast" | "arith.index_castui" => {
                let value = operand(&values, op, 0, "an index operand")?;
                values.insert(key(result_of(op)?), value);
            }
            "memref.dim" => {
                let source = operand_at(op, 0)?;
                let axis = crate::ir::util::constant_int(operand_at(op, 1)?)
                    .and_then(|a| usize::try_from(a).ok())
                    .ok_or_else(|| {
                        CodegenError::at(&op, "a host 'memref.dim' of a non-constant dimension")
                    })?;
                let value = extent(&b, &mut extents, &values, op, source, axis)?;
                values.insert(key(result_of(op)?), value);
            }
            name if ALIASES.contains(&name) => {
                // The same buffer through another shape: its extents are
                // read through the op (`extent`).
                let buffer = operand(&values, op, 0, "the reshaped buffer")?;
                values.insert(key(result_of(op)?), buffer);
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
                let result = result_of(op)?;
                let tensor = tensor_of(op, result)?;
                let dynamic = tensor.shape.iter().filter(|&&d| d == DYNAMIC).count();
                if Some(key(source)) != arena || op.operand_count() != 2 + dynamic {
                    return Err(CodegenError::at(
                        &op,
                        "host views must be views of the function's arena (run tcc-plan-memory)",
                    ));
                }
                let offset = operand(&values, op, 1, "the view's offset")?;
                let bytes = if dynamic == 0 {
                    b.constant(stored_byte_size(op, &tensor).max(1) as i64, t.i64)?
                } else {
                    // The call's size (the plan holds the maximum); an
                    // empty view takes one byte, as a static one.
                    let sizes: Vec<_> = (0..dynamic)
                        .map(|i| operand(&values, op, 2 + i, "a view's size"))
                        .collect::<Result<_, _>>()?;
                    let bytes = dynamic_bytes(&b, op, &tensor, &sizes, true)?;
                    let one = b.constant(1, t.i64)?;
                    b.binary("llvm.intr.umax", bytes, one)?
                };
                let buffer = call_for_buffer(&mut b, VIEW, vec![ctx, offset, bytes])?;
                values.insert(key(result), buffer);
            }
            "memref.alloc" => {
                let result = result_of(op)?;
                let tensor = tensor_of(op, result)?;
                let dynamic = tensor.shape.iter().filter(|&&d| d == DYNAMIC).count();
                let bytes = if dynamic == 0 {
                    b.constant(stored_byte_size(op, &tensor).max(1) as i64, t.i64)?
                } else {
                    let sizes: Vec<_> = (0..dynamic)
                        .map(|i| operand(&values, op, i, "an allocation's size"))
                        .collect::<Result<_, _>>()?;
                    let bytes = dynamic_bytes(&b, op, &tensor, &sizes, true)?;
                    let one = b.constant(1, t.i64)?;
                    b.binary("llvm.intr.umax", bytes, one)?
                };
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
                let slot = kernels.get(&kernel).cloned().ok_or_else(|| {
                    CodegenError::at(&op, format!("launch of unknown kernel {kernel}"))
                })?;
                // Operands: grid xyz, block xyz, then the kernel's buffers,
                // then (a kernel on a symbolic dimension) its `index`
                // arguments.
                let sizes: Vec<Value<'c, 'c>> = (0..6)
                    .map(|i| operand(&values, op, i, "a launch size"))
                    .collect::<Result<_, _>>()?;
                let passed = op.operand_count().saturating_sub(6);
                let scalars = slot.scalars.clone().unwrap_or_default();
                let index_args = scalars
                    .iter()
                    .filter(|s| matches!(s, ScalarArg::Index { .. }))
                    .count();
                if passed != slot.buffers + index_args {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "launch passes {passed} arguments, kernel {kernel} takes {} buffers and {index_args} index arguments",
                            slot.buffers
                        ),
                    ));
                }
                if slot.scalars.is_none()
                    && (6..op.operand_count()).any(|i| {
                        operand_at(op, i).is_ok_and(|v| MemRefLayout::of(v.r#type()).is_none())
                    })
                {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "kernel {kernel} takes scalar arguments, which only the host back end (after the OpenCL C writer) passes"
                        ),
                    ));
                }
                let buffers: Vec<Value<'c, 'c>> = (6..6 + slot.buffers)
                    .map(|i| operand(&values, op, i, "a kernel argument"))
                    .collect::<Result<_, _>>()?;
                // Each scalar: a launch's `index` operand or the extent
                // of one of its buffers, at the program's index width.
                let mut scalar_values = Vec::with_capacity(scalars.len());
                for scalar in &scalars {
                    let value = match *scalar {
                        ScalarArg::Index { argument } => {
                            operand(&values, op, 6 + argument, "an index argument")?
                        }
                        ScalarArg::Extent { buffer, dim } => {
                            let memref = operand_at(op, 6 + buffer)?;
                            extent(&b, &mut extents, &values, op, memref, dim)?
                        }
                    };
                    scalar_values.push(if slot.scalar_kind == tcc_abi::ARG_I32 {
                        b.cast("llvm.trunc", value, t.i32)?
                    } else {
                        value
                    });
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
                // tcc_arg[]: {kind = TCC_ARG_BUFFER, reserved, value}, then
                // {kind = TCC_ARG_I32 or I64, reserved, value} per scalar.
                let count = buffers.len() + scalar_values.len();
                let args_type = llvm::r#type::array(t.arg, count.max(1) as u32);
                let args = b.alloca(one, args_type)?;
                let scalar_kind = b.constant(slot.scalar_kind as i64, t.i32)?;
                let entries = buffers
                    .iter()
                    .map(|buffer| (zero, *buffer))
                    .chain(scalar_values.iter().map(|value| (scalar_kind, *value)));
                for (position, (kind, value)) in entries.enumerate() {
                    for (field, value) in
                        [(ARG_KIND, kind), (ARG_RESERVED, zero), (ARG_VALUE, value)]
                    {
                        let address = b.gep(args, &[0, position as i32, field], args_type)?;
                        b.store(value, address);
                    }
                }
                let kernel_id = b.constant(slot.index as i64, t.i32)?;
                let dims = b.constant(3, t.i32)?;
                let num_args = b.constant(count as i64, t.i32)?;
                call_checked(
                    &mut b,
                    LAUNCH,
                    &[ctx, kernel_id, dims, global, local, num_args, args],
                )?;
            }
            "memref.copy" => {
                let source = operand_at(op, 0)?;
                let target = operand_at(op, 1)?;
                let tensor = tensor_of(op, source)?;
                let src = operand(&values, op, 0, "the copy's source")?;
                let dst = operand(&values, op, 1, "the copy's target")?;
                let offset = b.constant(0, t.i64)?;
                let bytes = if tensor.shape.contains(&DYNAMIC) {
                    // The call's extents; the target's must be the same
                    // (status 1, before anything is copied, if not).
                    let mut dynamic = Vec::new();
                    for (axis, &d) in tensor.shape.iter().enumerate() {
                        if d != DYNAMIC {
                            continue;
                        }
                        let from = extent(&b, &mut extents, &values, op, source, axis)?;
                        let to = extent(&b, &mut extents, &values, op, target, axis)?;
                        let differ = b.icmp(1, from, to)?;
                        let status = b.cast("llvm.zext", differ, t.i32)?;
                        b.check(status, zero)?;
                        dynamic.push(from);
                    }
                    dynamic_bytes(&b, op, &tensor, &dynamic, false)?
                } else {
                    b.constant(byte_size(&tensor) as i64, t.i64)?
                };
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
