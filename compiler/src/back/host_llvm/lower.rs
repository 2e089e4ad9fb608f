//! Lowers the host functions of the gpu phase to the LLVM dialect.
//!
//! Each host `func.func` becomes `llvm.func internal @tcc_entry_<name>(rt,
//! inputs, outputs) -> i32`: buffers are `!llvm.ptr` (opaque `tcc_buffer *`),
//! and every allocation, constant, launch and copy is an indirect
//! `llvm.call` through the runtime's function table (`tcc_runtime_api`),
//! followed by a status check that branches to the common failure exit.
//! Buffers planned by `tcc-plan-memory` are `memref.view`s of the
//! function's arena and become `view(ctx, offset, bytes)` calls: the
//! runtime owns the arena (one per session, reused by every call). Other
//! intermediate buffers come from `alloc` and are released right after
//! their last use (the runtime's in-order queue makes that safe). The result is LLVM-dialect
//! text that is parsed back and translated to LLVM IR by MLIR.

use std::collections::HashMap;
use std::fmt::Write as _;

use melior::ir::attribute::ArrayAttribute;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, Module, RegionLike, Type, TypeLike, Value, ValueLike};

use super::writer::{FunctionDesc, TensorDesc, byte_size};
use crate::back::CodegenError;
use crate::back::opencl_c::{ElementType, Program};
use crate::ir::util::{body_ops, body_ops_named, integer_value, op_name, string_value};
use crate::passes::{
    ARENA_ALIGNMENT_ATTR, ARENA_ATTR, ARENA_BYTES_ATTR, NAMES_ATTR, NUM_OUTPUTS_ATTR,
};

/// `tcc_runtime_api` as an LLVM struct, and its fields.
const API: &str = "!llvm.struct<(i32, i32, ptr, ptr, ptr, ptr, ptr, ptr, ptr)>";
const CTX: u32 = 2;
const ALLOC: u32 = 3;
const RELEASE: u32 = 4;
const CONSTANT: u32 = 5;
const LAUNCH: u32 = 6;
const COPY: u32 = 7;
const VIEW: u32 = 8;

pub(super) fn memref_desc(ty: Type, name: String) -> Result<TensorDesc, String> {
    if !ty.is_mem_ref() {
        return Err(format!("{ty} is not a buffer"));
    }
    let element = ElementType::of_type(unsafe {
        Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw()))
    })
    .ok_or_else(|| format!("unsupported element type in {ty}"))?;
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(ty.to_raw()) } as usize;
    let shape = (0..rank)
        .map(|i| unsafe { mlir_sys::mlirShapedTypeGetDimSize(ty.to_raw(), i as isize) })
        .collect();
    Ok(TensorDesc {
        name,
        element,
        shape,
    })
}

fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// Text of one entry function being built.
struct Entry {
    text: String,
    next: usize,
    blocks: usize,
}

impl Entry {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    fn line(&mut self, line: &str) {
        let _ = writeln!(self.text, "  {line}");
    }

    fn constant(&mut self, value: i64, ty: &str) -> String {
        let name = self.fresh();
        self.line(&format!(
            "{name} = llvm.mlir.constant({value} : {ty}) : {ty}"
        ));
        name
    }

    /// Loads field `field` of the runtime table.
    fn api_field(&mut self, field: u32) -> String {
        let address = self.fresh();
        self.line(&format!("{address} = llvm.getelementptr inbounds %rt[0, {field}] : (!llvm.ptr) -> !llvm.ptr, {API}"));
        let value = self.fresh();
        self.line(&format!(
            "{value} = llvm.load {address} : !llvm.ptr -> !llvm.ptr"
        ));
        value
    }

    /// Calls table entry `field` with `args` (`(value, type)`), checks the
    /// status and continues in a new block.
    fn call_checked(&mut self, field: u32, args: &[(String, &str)]) {
        let function = self.api_field(field);
        let status = self.fresh();
        let values: Vec<&str> = args.iter().map(|(v, _)| v.as_str()).collect();
        let types: Vec<&str> = args.iter().map(|(_, t)| *t).collect();
        self.line(&format!(
            "{status} = llvm.call {function}({}) : !llvm.ptr, ({}) -> i32",
            values.join(", "),
            types.join(", ")
        ));
        let failed = self.fresh();
        self.line(&format!(
            "{failed} = llvm.icmp \"ne\" {status}, %zero : i32"
        ));
        self.blocks += 1;
        let block = format!("^ok{}", self.blocks);
        self.line(&format!(
            "llvm.cond_br {failed}, ^fail({status} : i32), {block}"
        ));
        let _ = writeln!(self.text, "{block}:");
    }

    fn release(&mut self, buffer: &str) {
        let function = self.api_field(RELEASE);
        self.line(&format!(
            "llvm.call {function}(%ctx, {buffer}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()"
        ));
    }

    /// Calls a table entry that returns a buffer through an out-pointer.
    fn call_for_buffer(&mut self, field: u32, mut args: Vec<(String, &str)>) -> String {
        let slot = self.fresh();
        self.line(&format!(
            "{slot} = llvm.alloca %one x !llvm.ptr : (i32) -> !llvm.ptr"
        ));
        args.push((slot.clone(), "!llvm.ptr"));
        self.call_checked(field, &args);
        let buffer = self.fresh();
        self.line(&format!(
            "{buffer} = llvm.load {slot} : !llvm.ptr -> !llvm.ptr"
        ));
        buffer
    }
}

/// LLVM-dialect text of every host function's entry, and their
/// descriptions for the artifact table.
pub fn lower_host(
    mlir: &Module,
    constant_index: &HashMap<String, u32>,
    program: &Program,
) -> Result<(String, Vec<FunctionDesc>), CodegenError> {
    let kernel_index: HashMap<&str, u32> = program
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| (k.name.as_str(), i as u32))
        .collect();
    let mut text = String::from("module {\n");
    let mut functions = Vec::new();
    for function in body_ops_named(mlir.as_operation(), "func.func") {
        let (entry, desc) = lower_function(function, constant_index, &kernel_index, program)?;
        text.push_str(&entry);
        functions.push(desc);
    }
    text.push_str("}\n");
    Ok((text, functions))
}

fn lower_function(
    function: OperationRef,
    constant_index: &HashMap<String, u32>,
    kernel_index: &HashMap<&str, u32>,
    program: &Program,
) -> Result<(String, FunctionDesc), CodegenError> {
    let name = function
        .attribute("sym_name")
        .ok()
        .and_then(string_value)
        .ok_or_else(|| CodegenError::at(&function, "function without a name"))?;
    let num_outputs = function
        .attribute(NUM_OUTPUTS_ATTR)
        .ok()
        .and_then(integer_value)
        .ok_or_else(|| {
            CodegenError::at(
                &function,
                format!("@{name} lacks {NUM_OUTPUTS_ATTR}: run the input phase first"),
            )
        })? as usize;
    let names: Vec<String> = function
        .attribute(NAMES_ATTR)
        .ok()
        .and_then(|a| ArrayAttribute::try_from(a).ok())
        .map(|array| {
            (0..array.len())
                .filter_map(|i| array.element(i).ok().and_then(string_value))
                .collect()
        })
        .unwrap_or_default();
    let region = function
        .region(0)
        .map_err(|e| CodegenError::at(&function, e.to_string()))?;
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
    let num_inputs = argument_count - num_outputs;
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
        arena_bytes: planned(ARENA_BYTES_ATTR)?,
        arena_alignment: planned(ARENA_ALIGNMENT_ATTR)?,
    };
    // The arena allocation's result; only memref.view may use it.
    let mut arena: Option<usize> = None;
    let mut entry = Entry {
        text: String::new(),
        next: 0,
        blocks: 0,
    };
    let _ = writeln!(
        entry.text,
        "llvm.func internal @tcc_entry_{name}(%rt: !llvm.ptr, %inputs: !llvm.ptr, %outputs: !llvm.ptr) -> i32 {{"
    );
    entry.line("%zero = llvm.mlir.constant(0 : i32) : i32");
    entry.line("%one = llvm.mlir.constant(1 : i32) : i32");
    entry.line(&format!(
        "%ctx_addr = llvm.getelementptr inbounds %rt[0, {CTX}] : (!llvm.ptr) -> !llvm.ptr, {API}"
    ));
    entry.line("%ctx = llvm.load %ctx_addr : !llvm.ptr -> !llvm.ptr");

    // SSA name of each host value: buffers (!llvm.ptr) and index constants (i64).
    let mut values: HashMap<usize, String> = HashMap::new();
    for index in 0..argument_count {
        let argument: Value = block
            .argument(index)
            .map_err(|e| CodegenError::at(&function, e.to_string()))?
            .into();
        let (table, slot, list) = if index < num_inputs {
            ("%inputs", index, &mut desc.inputs)
        } else {
            ("%outputs", index - num_inputs, &mut desc.outputs)
        };
        let tensor = memref_desc(
            argument.r#type(),
            names.get(index).cloned().unwrap_or_default(),
        )
        .map_err(|e| CodegenError::at(&function, format!("@{name} argument {index}: {e}")))?;
        list.push(tensor);
        let address = entry.fresh();
        entry.line(&format!(
            "{address} = llvm.getelementptr {table}[{slot}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr"
        ));
        let buffer = entry.fresh();
        entry.line(&format!(
            "{buffer} = llvm.load {address} : !llvm.ptr -> !llvm.ptr"
        ));
        values.insert(key(argument), buffer);
    }

    // Last use of each value, to release allocations right after it.
    let ops = body_ops(function);
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for (position, op) in ops.iter().enumerate() {
        for operand in op.operands() {
            last_use.insert(key(operand), position);
        }
    }
    let mut allocations: Vec<(usize, String)> = Vec::new();
    let operand_name = |values: &HashMap<usize, String>,
                        op: OperationRef,
                        index: usize,
                        what: &str|
     -> Result<String, CodegenError> {
        let operand = op
            .operand(index)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?;
        values
            .get(&key(operand))
            .cloned()
            .ok_or_else(|| CodegenError::at(&op, format!("{what} is not a known host value")))
    };

    for (position, op) in ops.iter().enumerate() {
        let op = *op;
        match op_name(&op).as_str() {
            "arith.constant" => {
                let value = op
                    .attribute("value")
                    .ok()
                    .and_then(integer_value)
                    .ok_or_else(|| CodegenError::at(&op, "host constants must be integers"))?;
                let result: Value = op
                    .result(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?
                    .into();
                let name = entry.constant(value, "i64");
                values.insert(key(result), name);
            }
            "memref.alloc" if op.attribute(ARENA_ATTR).is_ok() => {
                let result: Value = op
                    .result(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?
                    .into();
                let tensor = memref_desc(result.r#type(), String::new())
                    .map_err(|e| CodegenError::at(&op, e))?;
                if arena.is_some() || byte_size(&tensor) != desc.arena_bytes {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "@{name}: the arena must be one allocation of {ARENA_BYTES_ATTR} = {} bytes",
                            desc.arena_bytes
                        ),
                    ));
                }
                arena = Some(key(result));
            }
            "memref.view" => {
                let source = op
                    .operand(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?;
                if Some(key(source)) != arena || op.operand_count() != 2 {
                    return Err(CodegenError::at(
                        &op,
                        "host views must be static views of the function's arena (run tcc-plan-memory)",
                    ));
                }
                let offset = operand_name(&values, op, 1, "the view's offset")?;
                let result: Value = op
                    .result(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?
                    .into();
                let tensor = memref_desc(result.r#type(), String::new())
                    .map_err(|e| CodegenError::at(&op, e))?;
                let bytes = entry.constant(byte_size(&tensor).max(1) as i64, "i64");
                let buffer = entry.call_for_buffer(
                    VIEW,
                    vec![
                        ("%ctx".into(), "!llvm.ptr"),
                        (offset, "i64"),
                        (bytes, "i64"),
                    ],
                );
                values.insert(key(result), buffer);
            }
            "memref.alloc" => {
                let result: Value = op
                    .result(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?
                    .into();
                let tensor = memref_desc(result.r#type(), String::new())
                    .map_err(|e| CodegenError::at(&op, e))?;
                let bytes = entry.constant(byte_size(&tensor).max(1) as i64, "i64");
                let buffer = entry
                    .call_for_buffer(ALLOC, vec![("%ctx".into(), "!llvm.ptr"), (bytes, "i64")]);
                values.insert(key(result), buffer.clone());
                allocations.push((key(result), buffer));
            }
            "memref.get_global" => {
                let global = op
                    .attribute("name")
                    .map(|a| a.to_string().trim_start_matches('@').to_string())
                    .unwrap_or_default();
                let index = *constant_index
                    .get(&global)
                    .ok_or_else(|| CodegenError::at(&op, format!("unknown global @{global}")))?;
                let result: Value = op
                    .result(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?
                    .into();
                let index = entry.constant(index as i64, "i32");
                let buffer = entry
                    .call_for_buffer(CONSTANT, vec![("%ctx".into(), "!llvm.ptr"), (index, "i32")]);
                values.insert(key(result), buffer);
            }
            "gpu.launch_func" => {
                let kernel = op
                    .attribute("kernel")
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let kernel = kernel
                    .rsplit("::@")
                    .next()
                    .unwrap_or(&kernel)
                    .trim_start_matches('@')
                    .to_string();
                let index = *kernel_index.get(kernel.as_str()).ok_or_else(|| {
                    CodegenError::at(&op, format!("launch of unknown kernel {kernel}"))
                })?;
                let info = &program.kernels[index as usize];
                // Operands: grid xyz, block xyz, then the kernel's buffers.
                let sizes: Vec<String> = (0..6)
                    .map(|i| operand_name(&values, op, i, "a launch size"))
                    .collect::<Result<_, _>>()?;
                let buffers: Vec<String> = (6..op.operand_count())
                    .map(|i| operand_name(&values, op, i, "a kernel argument"))
                    .collect::<Result<_, _>>()?;
                if buffers.len() != info.args.len() {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "launch passes {} buffers, kernel {kernel} takes {}",
                            buffers.len(),
                            info.args.len()
                        ),
                    ));
                }
                let global = entry.fresh();
                entry.line(&format!(
                    "{global} = llvm.alloca %one x !llvm.array<3 x i64> : (i32) -> !llvm.ptr"
                ));
                let local = entry.fresh();
                entry.line(&format!(
                    "{local} = llvm.alloca %one x !llvm.array<3 x i64> : (i32) -> !llvm.ptr"
                ));
                for axis in 0..3 {
                    let work_items = entry.fresh();
                    entry.line(&format!(
                        "{work_items} = llvm.mul {}, {} : i64",
                        sizes[axis],
                        sizes[axis + 3]
                    ));
                    for (array, value) in [(&global, &work_items), (&local, &sizes[axis + 3])] {
                        let address = entry.fresh();
                        entry.line(&format!("{address} = llvm.getelementptr {array}[0, {axis}] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<3 x i64>"));
                        entry.line(&format!("llvm.store {value}, {address} : i64, !llvm.ptr"));
                    }
                }
                // tcc_arg[]: {kind = TCC_ARG_BUFFER, reserved, value}.
                let count = buffers.len().max(1);
                let args_type = format!("!llvm.array<{count} x struct<(i32, i32, i64)>>");
                let args = entry.fresh();
                entry.line(&format!(
                    "{args} = llvm.alloca %one x {args_type} : (i32) -> !llvm.ptr"
                ));
                for (slot, buffer) in buffers.iter().enumerate() {
                    for (field, value, ty) in [
                        (0, "%zero", "i32"),
                        (1, "%zero", "i32"),
                        (2, buffer.as_str(), "!llvm.ptr"),
                    ] {
                        let address = entry.fresh();
                        entry.line(&format!("{address} = llvm.getelementptr {args}[0, {slot}, {field}] : (!llvm.ptr) -> !llvm.ptr, {args_type}"));
                        entry.line(&format!("llvm.store {value}, {address} : {ty}, !llvm.ptr"));
                    }
                }
                let kernel_id = entry.constant(index as i64, "i32");
                let dims = entry.constant(3, "i32");
                let num_args = entry.constant(buffers.len() as i64, "i32");
                entry.call_checked(
                    LAUNCH,
                    &[
                        ("%ctx".into(), "!llvm.ptr"),
                        (kernel_id, "i32"),
                        (dims, "i32"),
                        (global, "!llvm.ptr"),
                        (local, "!llvm.ptr"),
                        (num_args, "i32"),
                        (args, "!llvm.ptr"),
                    ],
                );
            }
            "memref.copy" => {
                let source = op
                    .operand(0)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?;
                let tensor = memref_desc(source.r#type(), String::new())
                    .map_err(|e| CodegenError::at(&op, e))?;
                let (src, dst) = (
                    operand_name(&values, op, 0, "the copy's source")?,
                    operand_name(&values, op, 1, "the copy's target")?,
                );
                let zero = entry.constant(0, "i64");
                let bytes = entry.constant(byte_size(&tensor) as i64, "i64");
                entry.call_checked(
                    COPY,
                    &[
                        ("%ctx".into(), "!llvm.ptr"),
                        (dst, "!llvm.ptr"),
                        (zero.clone(), "i64"),
                        (src, "!llvm.ptr"),
                        (zero, "i64"),
                        (bytes, "i64"),
                    ],
                );
            }
            "memref.dealloc" => {}
            "func.return" => {
                for (_, buffer) in std::mem::take(&mut allocations) {
                    entry.release(&buffer);
                }
                entry.line("llvm.return %zero : i32");
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
            entry.release(&buffer);
        }
    }
    let _ = writeln!(
        entry.text,
        "^fail(%status: i32):\n  llvm.return %status : i32\n}}"
    );
    Ok((entry.text, desc))
}
