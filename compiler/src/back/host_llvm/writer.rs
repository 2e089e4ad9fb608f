//! The host writer: each host `func.func` of the gpu phase becomes an entry
//! `int32_t tcc_entry_<name>(const tcc_runtime_api *rt, tcc_buffer *const
//! *inputs, tcc_buffer *const *outputs)` in LLVM IR, built with inkwell,
//! and the module gains the artifact's self-description `tcc_artifact_v1()`
//! (kernel source, kernel names, function signatures, constants) laid out
//! exactly as `runtime/include/tcc_abi.h` declares it.
//!
//! The host code never touches device memory: buffers are opaque
//! `tcc_buffer *`, every allocation, constant, launch and copy is a call
//! through the runtime's function table, and each call's status is checked
//! (a non-zero status returns at once). Intermediate buffers are released
//! right after their last use; the runtime's in-order queue makes that safe
//! and lets the buffer pool hand them to later kernels.

use std::collections::HashMap;

use inkwell::AddressSpace;
use inkwell::builder::Builder;
use inkwell::context::Context as LlvmContext;
use inkwell::module::{Linkage, Module as LlvmModule};
use inkwell::types::{BasicType, StructType};
use inkwell::values::{BasicValueEnum, FunctionValue, GlobalValue, IntValue, PointerValue};
use melior::ir::attribute::{ArrayAttribute, DenseElementsAttribute};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::attribute::AttributeLike;
use melior::ir::{Module, Type, TypeLike, Value, ValueLike};

use crate::back::CodegenError;
use crate::back::opencl_c::{ElementType, Program};
use crate::ir::util::{body_ops, integer_value, op_name, string_value};
use crate::passes::{NAMES_ATTR, NUM_OUTPUTS_ATTR};

/// The ABI version written into artifacts (TCC_ABI_VERSION).
pub const ABI_VERSION: u32 = 1;

/// `enum tcc_dtype` of tcc_abi.h.
fn dtype_code(element: ElementType) -> Result<u32, String> {
    Ok(match element {
        ElementType::F32 => 0,
        ElementType::F16 => 1,
        ElementType::I32 => 2,
        ElementType::I64 => 3,
        ElementType::I8 => 4,
        ElementType::I1 => 5,
        other => return Err(format!("{other:?} tensors cannot cross the artifact ABI")),
    })
}

/// A tensor crossing the ABI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    pub name: String,
    pub element: ElementType,
    pub shape: Vec<i64>,
}

/// A function of the artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionDesc {
    pub name: String,
    pub inputs: Vec<TensorDesc>,
    pub outputs: Vec<TensorDesc>,
}

fn memref_desc(ty: Type, name: String) -> Result<TensorDesc, String> {
    if !ty.is_mem_ref() {
        return Err(format!("{ty} is not a buffer"));
    }
    let element = ElementType::of_type(unsafe { Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw())) })
        .ok_or_else(|| format!("unsupported element type in {ty}"))?;
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(ty.to_raw()) } as usize;
    let shape = (0..rank).map(|i| unsafe { mlir_sys::mlirShapedTypeGetDimSize(ty.to_raw(), i as isize) }).collect();
    Ok(TensorDesc { name, element, shape })
}

fn byte_size(desc: &TensorDesc) -> u64 {
    desc.shape.iter().product::<i64>().max(0) as u64 * desc.element.size_bytes() as u64
}

/// The raw little-endian bytes of a dense constant (splats expanded,
/// booleans one byte each).
fn constant_bytes(op: OperationRef, attribute: melior::ir::Attribute) -> Result<Vec<u8>, CodegenError> {
    let dense = DenseElementsAttribute::try_from(attribute)
        .map_err(|_| CodegenError::at(&op, "constant is not a dense elements attribute (dense_resource blobs are not supported yet)"))?;
    let ty = attribute.r#type();
    let element = ElementType::of_type(unsafe { Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw())) })
        .ok_or_else(|| CodegenError::at(&op, format!("unsupported constant type {ty}")))?;
    let count = dense.len();
    let raw = attribute.to_raw();
    if element == ElementType::I1 {
        return Ok((0..count).map(|i| unsafe { mlir_sys::mlirDenseElementsAttrGetBoolValue(raw, i as isize) } as u8).collect());
    }
    let size = element.size_bytes();
    let data = dense.raw_data() as *const u8;
    let splat = unsafe { mlir_sys::mlirDenseElementsAttrIsSplat(raw) };
    let stored = if splat { size } else { size * count };
    let bytes = unsafe { std::slice::from_raw_parts(data, stored) };
    Ok(if splat { bytes.repeat(count) } else { bytes.to_vec() })
}

/// Layout of the runtime function table (tcc_runtime_api) fields.
mod api {
    pub const ALLOC: u32 = 3;
    pub const RELEASE: u32 = 4;
    pub const CONSTANT: u32 = 5;
    pub const LAUNCH: u32 = 6;
    pub const COPY: u32 = 7;
    pub const CTX: u32 = 2;
}

#[derive(Clone, Copy)]
struct Types<'l> {
    i32: inkwell::types::IntType<'l>,
    i64: inkwell::types::IntType<'l>,
    ptr: inkwell::types::PointerType<'l>,
    api: StructType<'l>,
    arg: StructType<'l>,
    tensor_desc: StructType<'l>,
    function_desc: StructType<'l>,
    constant_desc: StructType<'l>,
    artifact: StructType<'l>,
}

impl<'l> Types<'l> {
    fn new(context: &'l LlvmContext) -> Self {
        let (i32, i64, ptr) = (context.i32_type(), context.i64_type(), context.ptr_type(AddressSpace::default()));
        let api = context.struct_type(&[i32.into(), i32.into(), ptr.into(), ptr.into(), ptr.into(), ptr.into(), ptr.into(), ptr.into()], false);
        let arg = context.struct_type(&[i32.into(), i32.into(), i64.into()], false);
        let tensor_desc = context.struct_type(&[ptr.into(), i32.into(), i32.into(), ptr.into()], false);
        let function_desc = context.struct_type(&[ptr.into(), ptr.into(), i32.into(), i32.into(), ptr.into(), ptr.into()], false);
        let constant_desc = context.struct_type(&[ptr.into(), i64.into()], false);
        let artifact = context.struct_type(
            &[
                i32.into(), i32.into(), ptr.into(), i64.into(), ptr.into(), i32.into(), i32.into(),
                ptr.into(), ptr.into(), i32.into(), i32.into(), ptr.into(), ptr.into(),
            ],
            false,
        );
        Self { i32, i64, ptr, api, arg, tensor_desc, function_desc, constant_desc, artifact }
    }
}

/// Builds the host LLVM module: entries and the artifact description.
pub struct HostWriter<'l> {
    context: &'l LlvmContext,
    pub module: LlvmModule<'l>,
    builder: Builder<'l>,
    types: Types<'l>,
    strings: usize,
}

fn llvm_error(error: impl std::fmt::Display) -> CodegenError {
    CodegenError::new(format!("LLVM IR construction failed: {error}"))
}

impl<'l> HostWriter<'l> {
    pub fn new(context: &'l LlvmContext, name: &str) -> Self {
        Self { context, module: context.create_module(name), builder: context.create_builder(), types: Types::new(context), strings: 0 }
    }

    /// A private constant C string; returns its address.
    fn c_string(&mut self, text: &str) -> PointerValue<'l> {
        let value = self.context.const_string(text.as_bytes(), true);
        let global = self.module.add_global(value.get_type(), None, &format!(".str.{}", self.strings));
        self.strings += 1;
        global.set_initializer(&value);
        global.set_constant(true);
        global.set_linkage(Linkage::Private);
        global.as_pointer_value()
    }

    fn private_global<T: BasicType<'l>>(&mut self, ty: T, name: &str, init: &dyn inkwell::values::BasicValue<'l>) -> GlobalValue<'l> {
        let global = self.module.add_global(ty, None, name);
        global.set_initializer(init);
        global.set_constant(true);
        global.set_linkage(Linkage::Private);
        global
    }

    /// Writes the whole artifact: one entry per host function, the kernel
    /// program and the constants. Returns the functions it describes.
    pub fn write(&mut self, mlir: &Module, program: &Program) -> Result<Vec<FunctionDesc>, CodegenError> {
        let module_op = mlir.as_operation();
        let top = body_ops(module_op);
        // Constants: every memref.global, in module order.
        let mut constant_index: HashMap<String, u32> = HashMap::new();
        let mut constants: Vec<Vec<u8>> = Vec::new();
        for op in top.iter().filter(|op| op_name(*op) == "memref.global") {
            let name = op.attribute("sym_name").ok().and_then(string_value).unwrap_or_default();
            let value = op.attribute("initial_value").map_err(|_| CodegenError::at(op, format!("global {name} has no initial value")))?;
            constant_index.insert(name, constants.len() as u32);
            constants.push(constant_bytes(*op, value)?);
        }
        let kernel_index: HashMap<&str, u32> = program.kernels.iter().enumerate().map(|(i, k)| (k.name.as_str(), i as u32)).collect();

        let mut functions = Vec::new();
        let mut entries = Vec::new();
        for function in top.iter().filter(|op| op_name(*op) == "func.func") {
            let (desc, entry) = self.entry(*function, &constant_index, &kernel_index, program)?;
            functions.push(desc);
            entries.push(entry);
        }
        self.artifact(program, &functions, &entries, &constants)?;
        Ok(functions)
    }

    fn entry(
        &mut self,
        function: OperationRef,
        constant_index: &HashMap<String, u32>,
        kernel_index: &HashMap<&str, u32>,
        program: &Program,
    ) -> Result<(FunctionDesc, FunctionValue<'l>), CodegenError> {
        let name = function.attribute("sym_name").ok().and_then(string_value).ok_or_else(|| CodegenError::at(&function, "function without a name"))?;
        let num_outputs = function
            .attribute(NUM_OUTPUTS_ATTR)
            .ok()
            .and_then(integer_value)
            .ok_or_else(|| CodegenError::at(&function, format!("@{name} lacks {NUM_OUTPUTS_ATTR}: run the input phase first")))? as usize;
        let names: Vec<String> = function
            .attribute(NAMES_ATTR)
            .ok()
            .and_then(|a| ArrayAttribute::try_from(a).ok())
            .map(|array| (0..array.len()).filter_map(|i| array.element(i).ok().and_then(string_value)).collect())
            .unwrap_or_default();
        let region = function.region(0).map_err(|e| CodegenError::at(&function, e.to_string()))?;
        let block = melior::ir::RegionLike::first_block(&region).ok_or_else(|| CodegenError::at(&function, format!("@{name} has no body")))?;
        let argument_count = melior::ir::BlockLike::argument_count(&block);
        if argument_count < num_outputs {
            return Err(CodegenError::at(&function, format!("@{name}: {argument_count} arguments but {num_outputs} outputs")));
        }
        let num_inputs = argument_count - num_outputs;
        let mut desc = FunctionDesc { name: name.clone(), inputs: Vec::new(), outputs: Vec::new() };

        let t = self.types;
        let entry_type = t.i32.fn_type(&[t.ptr.into(), t.ptr.into(), t.ptr.into()], false);
        let entry = self.module.add_function(&format!("tcc_entry_{name}"), entry_type, Some(Linkage::Internal));
        let start = self.context.append_basic_block(entry, "entry");
        let fail = self.context.append_basic_block(entry, "fail");
        self.builder.position_at_end(fail);
        let status_phi = self.builder.build_phi(t.i32, "status").map_err(llvm_error)?;
        self.builder.build_return(Some(&status_phi.as_basic_value())).map_err(llvm_error)?;
        self.builder.position_at_end(start);
        let rt = entry.get_nth_param(0).expect("rt").into_pointer_value();
        let inputs = entry.get_nth_param(1).expect("inputs").into_pointer_value();
        let outputs = entry.get_nth_param(2).expect("outputs").into_pointer_value();
        let ctx = self.load_field(rt, api::CTX, "ctx")?;

        let mut values: HashMap<usize, BasicValueEnum<'l>> = HashMap::new();
        let key = |v: Value| v.to_raw().ptr as usize;
        for index in 0..argument_count {
            let argument: Value = melior::ir::BlockLike::argument(&block, index).map_err(|e| CodegenError::at(&function, e.to_string()))?.into();
            let (table, slot, list) = if index < num_inputs { (inputs, index, &mut desc.inputs) } else { (outputs, index - num_inputs, &mut desc.outputs) };
            let tensor = memref_desc(argument.r#type(), names.get(index).cloned().unwrap_or_default())
                .map_err(|e| CodegenError::at(&function, format!("@{name} argument {index}: {e}")))?;
            list.push(tensor);
            let address = unsafe { self.builder.build_gep(t.ptr, table, &[t.i64.const_int(slot as u64, false)], "slot") }.map_err(llvm_error)?;
            let buffer = self.builder.build_load(t.ptr, address, &format!("arg{index}")).map_err(llvm_error)?;
            values.insert(key(argument), buffer);
        }

        // Last use of each allocation, to release it right after.
        let ops = body_ops(function);
        let mut last_use: HashMap<usize, usize> = HashMap::new();
        for (position, op) in ops.iter().enumerate() {
            for operand in op.operands() {
                last_use.insert(key(operand), position);
            }
        }
        let mut allocations: Vec<(usize, BasicValueEnum<'l>)> = Vec::new();

        for (position, op) in ops.iter().enumerate() {
            let op = *op;
            let op_kind = op_name(&op);
            match op_kind.as_str() {
                "arith.constant" => {
                    let value = op.attribute("value").ok().and_then(integer_value).ok_or_else(|| CodegenError::at(&op, "host constants must be integers"))?;
                    let result: Value = op.result(0).map_err(|e| CodegenError::at(&op, e.to_string()))?.into();
                    values.insert(key(result), t.i64.const_int(value as u64, true).into());
                }
                "memref.alloc" => {
                    let result: Value = op.result(0).map_err(|e| CodegenError::at(&op, e.to_string()))?.into();
                    let tensor = memref_desc(result.r#type(), String::new()).map_err(|e| CodegenError::at(&op, e))?;
                    let slot = self.builder.build_alloca(t.ptr, "buffer").map_err(llvm_error)?;
                    let bytes = t.i64.const_int(byte_size(&tensor).max(1), false);
                    self.call_checked(rt, api::ALLOC, &[ctx, bytes.into(), slot.into()], &[t.ptr.into(), t.i64.into(), t.ptr.into()], status_phi, fail)?;
                    let buffer = self.builder.build_load(t.ptr, slot, "alloc").map_err(llvm_error)?;
                    values.insert(key(result), buffer);
                    allocations.push((key(result), buffer));
                }
                "memref.get_global" => {
                    let global = op.attribute("name").map(|a| a.to_string().trim_start_matches('@').to_string()).unwrap_or_default();
                    let index = *constant_index.get(&global).ok_or_else(|| CodegenError::at(&op, format!("unknown global @{global}")))?;
                    let result: Value = op.result(0).map_err(|e| CodegenError::at(&op, e.to_string()))?.into();
                    let slot = self.builder.build_alloca(t.ptr, "constant").map_err(llvm_error)?;
                    let index = t.i32.const_int(index as u64, false);
                    self.call_checked(rt, api::CONSTANT, &[ctx, index.into(), slot.into()], &[t.ptr.into(), t.i32.into(), t.ptr.into()], status_phi, fail)?;
                    let buffer = self.builder.build_load(t.ptr, slot, "constant").map_err(llvm_error)?;
                    values.insert(key(result), buffer);
                }
                "gpu.launch_func" => {
                    let kernel = op.attribute("kernel").map(|a| a.to_string()).unwrap_or_default();
                    let kernel = kernel.rsplit("::@").next().unwrap_or(&kernel).trim_start_matches('@').to_string();
                    let index = *kernel_index.get(kernel.as_str()).ok_or_else(|| CodegenError::at(&op, format!("launch of unknown kernel {kernel}")))?;
                    let info = &program.kernels[index as usize];
                    // Operands: grid xyz, block xyz, then the kernel's buffers.
                    let sizes: Vec<IntValue> = (0..6)
                        .map(|i| {
                            let operand = op.operand(i).map_err(|e| CodegenError::at(&op, e.to_string()))?;
                            values.get(&key(operand)).map(|v| v.into_int_value()).ok_or_else(|| CodegenError::at(&op, "launch size is not a host constant"))
                        })
                        .collect::<Result<_, _>>()?;
                    let buffers: Vec<BasicValueEnum> = (6..op.operand_count())
                        .map(|i| {
                            let operand = op.operand(i).map_err(|e| CodegenError::at(&op, e.to_string()))?;
                            values.get(&key(operand)).copied().ok_or_else(|| CodegenError::at(&op, format!("kernel argument {} is not a known buffer", i - 6)))
                        })
                        .collect::<Result<_, _>>()?;
                    if buffers.len() != info.args.len() {
                        return Err(CodegenError::at(&op, format!("launch passes {} buffers, kernel {kernel} takes {}", buffers.len(), info.args.len())));
                    }
                    let global = self.builder.build_alloca(t.i64.array_type(3), "global").map_err(llvm_error)?;
                    let local = self.builder.build_alloca(t.i64.array_type(3), "local").map_err(llvm_error)?;
                    for axis in 0..3 {
                        let work_items = self.builder.build_int_mul(sizes[axis], sizes[axis + 3], "work_items").map_err(llvm_error)?;
                        let g = unsafe { self.builder.build_gep(t.i64, global, &[t.i64.const_int(axis as u64, false)], "g") }.map_err(llvm_error)?;
                        self.builder.build_store(g, work_items).map_err(llvm_error)?;
                        let l = unsafe { self.builder.build_gep(t.i64, local, &[t.i64.const_int(axis as u64, false)], "l") }.map_err(llvm_error)?;
                        self.builder.build_store(l, sizes[axis + 3]).map_err(llvm_error)?;
                    }
                    let args = self.builder.build_array_alloca(t.arg, t.i32.const_int(buffers.len().max(1) as u64, false), "args").map_err(llvm_error)?;
                    for (slot, buffer) in buffers.iter().enumerate() {
                        let entry = unsafe { self.builder.build_gep(t.arg, args, &[t.i64.const_int(slot as u64, false)], "arg") }.map_err(llvm_error)?;
                        let kind = self.builder.build_struct_gep(t.arg, entry, 0, "kind").map_err(llvm_error)?;
                        self.builder.build_store(kind, t.i32.const_zero()).map_err(llvm_error)?;
                        let reserved = self.builder.build_struct_gep(t.arg, entry, 1, "reserved").map_err(llvm_error)?;
                        self.builder.build_store(reserved, t.i32.const_zero()).map_err(llvm_error)?;
                        let value = self.builder.build_struct_gep(t.arg, entry, 2, "value").map_err(llvm_error)?;
                        self.builder.build_store(value, *buffer).map_err(llvm_error)?;
                    }
                    let call_args = [
                        ctx,
                        t.i32.const_int(index as u64, false).into(),
                        t.i32.const_int(3, false).into(), // dims: always 3 (unused axes are 1)
                        global.into(),
                        local.into(),
                        t.i32.const_int(buffers.len() as u64, false).into(),
                        args.into(),
                    ];
                    let params = [t.ptr.into(), t.i32.into(), t.i32.into(), t.ptr.into(), t.ptr.into(), t.i32.into(), t.ptr.into()];
                    self.call_checked(rt, api::LAUNCH, &call_args, &params, status_phi, fail)?;
                }
                "memref.copy" => {
                    let (source, target) = (op.operand(0).map_err(|e| CodegenError::at(&op, e.to_string()))?, op.operand(1).map_err(|e| CodegenError::at(&op, e.to_string()))?);
                    let tensor = memref_desc(source.r#type(), String::new()).map_err(|e| CodegenError::at(&op, e))?;
                    let (Some(src), Some(dst)) = (values.get(&key(source)).copied(), values.get(&key(target)).copied()) else {
                        return Err(CodegenError::at(&op, "copy between unknown buffers"));
                    };
                    let zero = t.i64.const_zero();
                    let bytes = t.i64.const_int(byte_size(&tensor), false);
                    let args = [ctx, dst.into(), zero.into(), src.into(), zero.into(), bytes.into()];
                    let params = [t.ptr.into(), t.ptr.into(), t.i64.into(), t.ptr.into(), t.i64.into(), t.i64.into()];
                    self.call_checked(rt, api::COPY, &args, &params, status_phi, fail)?;
                }
                "memref.dealloc" => {}
                "func.return" => {
                    self.release_all(rt, ctx, &mut allocations)?;
                    self.builder.build_return(Some(&t.i32.const_zero())).map_err(llvm_error)?;
                    continue;
                }
                other => {
                    return Err(CodegenError::at(&op, format!("the host code generator cannot translate '{other}'")));
                }
            }
            // Release allocations whose last use this op was.
            let done: Vec<(usize, BasicValueEnum)> = allocations.iter().filter(|(k, _)| last_use.get(k) == Some(&position)).copied().collect();
            allocations.retain(|(k, _)| last_use.get(k) != Some(&position));
            for (_, buffer) in done {
                self.release(rt, ctx, buffer)?;
            }
        }
        Ok((desc, entry))
    }

    fn load_field(&self, rt: PointerValue<'l>, field: u32, name: &str) -> Result<BasicValueEnum<'l>, CodegenError> {
        let t = self.types;
        let address = self.builder.build_struct_gep(t.api, rt, field, name).map_err(llvm_error)?;
        self.builder.build_load(t.ptr, address, name).map_err(llvm_error)
    }

    fn release(&self, rt: PointerValue<'l>, ctx: BasicValueEnum<'l>, buffer: BasicValueEnum<'l>) -> Result<(), CodegenError> {
        let t = self.types;
        let function = self.load_field(rt, api::RELEASE, "release")?.into_pointer_value();
        let fn_type = self.context.void_type().fn_type(&[t.ptr.into(), t.ptr.into()], false);
        self.builder.build_indirect_call(fn_type, function, &[ctx.into(), buffer.into()], "").map_err(llvm_error)?;
        Ok(())
    }

    fn release_all(&self, rt: PointerValue<'l>, ctx: BasicValueEnum<'l>, allocations: &mut Vec<(usize, BasicValueEnum<'l>)>) -> Result<(), CodegenError> {
        for (_, buffer) in allocations.drain(..) {
            self.release(rt, ctx, buffer)?;
        }
        Ok(())
    }

    /// Calls the function-table entry `field` and branches to `fail` (with
    /// the status) when it returns non-zero.
    fn call_checked(
        &self,
        rt: PointerValue<'l>,
        field: u32,
        args: &[BasicValueEnum<'l>],
        params: &[inkwell::types::BasicMetadataTypeEnum<'l>],
        status_phi: inkwell::values::PhiValue<'l>,
        fail: inkwell::basic_block::BasicBlock<'l>,
    ) -> Result<(), CodegenError> {
        let t = self.types;
        let function = self.load_field(rt, field, "callee")?.into_pointer_value();
        let fn_type = t.i32.fn_type(params, false);
        let args: Vec<inkwell::values::BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        let call = self.builder.build_indirect_call(fn_type, function, &args, "status").map_err(llvm_error)?;
        let status = call.try_as_basic_value().basic().ok_or_else(|| CodegenError::new("runtime call returned no status"))?.into_int_value();
        let failed = self.builder.build_int_compare(inkwell::IntPredicate::NE, status, t.i32.const_zero(), "failed").map_err(llvm_error)?;
        let current = self.builder.get_insert_block().expect("positioned");
        let parent = current.get_parent().expect("in a function");
        let next = self.context.append_basic_block(parent, "ok");
        self.builder.build_conditional_branch(failed, fail, next).map_err(llvm_error)?;
        status_phi.add_incoming(&[(&status, current)]);
        self.builder.position_at_end(next);
        Ok(())
    }

    fn tensor_descs(&mut self, tensors: &[TensorDesc], name: &str) -> Result<PointerValue<'l>, CodegenError> {
        let t = self.types;
        let mut entries = Vec::new();
        for (index, tensor) in tensors.iter().enumerate() {
            let shape_values: Vec<IntValue> = tensor.shape.iter().map(|d| t.i64.const_int(*d as u64, true)).collect();
            let shape_array = t.i64.const_array(&shape_values);
            let shape = self.private_global(shape_array.get_type(), &format!("{name}.shape.{index}"), &shape_array);
            let tensor_name = self.c_string(&tensor.name);
            let dtype = dtype_code(tensor.element).map_err(CodegenError::new)?;
            let t = self.types;
            entries.push(t.tensor_desc.const_named_struct(&[
                tensor_name.into(),
                t.i32.const_int(dtype as u64, false).into(),
                t.i32.const_int(tensor.shape.len() as u64, false).into(),
                shape.as_pointer_value().into(),
            ]));
        }
        let array = self.types.tensor_desc.const_array(&entries);
        Ok(self.private_global(array.get_type(), name, &array).as_pointer_value())
    }

    fn artifact(&mut self, program: &Program, functions: &[FunctionDesc], entries: &[FunctionValue<'l>], constants: &[Vec<u8>]) -> Result<(), CodegenError> {
        // Kernel program and names.
        let source = self.c_string(&program.source);
        let options = self.c_string("-cl-std=CL1.2");
        let producer = self.c_string(concat!("tcc ", env!("CARGO_PKG_VERSION")));
        let mut names = Vec::new();
        for kernel in &program.kernels {
            names.push(self.c_string(&kernel.name));
        }
        let names_array = self.types.ptr.const_array(&names);
        let kernel_names = self.private_global(names_array.get_type(), "tcc.kernel_names", &names_array);

        // Functions.
        let mut function_entries = Vec::new();
        for (function, entry) in functions.iter().zip(entries) {
            let inputs = self.tensor_descs(&function.inputs, &format!("tcc.{}.inputs", function.name))?;
            let outputs = self.tensor_descs(&function.outputs, &format!("tcc.{}.outputs", function.name))?;
            let name = self.c_string(&function.name);
            let t = self.types;
            function_entries.push(t.function_desc.const_named_struct(&[
                name.into(),
                entry.as_global_value().as_pointer_value().into(),
                t.i32.const_int(function.inputs.len() as u64, false).into(),
                t.i32.const_int(function.outputs.len() as u64, false).into(),
                inputs.into(),
                outputs.into(),
            ]));
        }
        let functions_array = self.types.function_desc.const_array(&function_entries);
        let functions_global = self.private_global(functions_array.get_type(), "tcc.functions", &functions_array);

        // Constants (weights), 64-byte aligned.
        let mut constant_entries = Vec::new();
        for (index, bytes) in constants.iter().enumerate() {
            let data = self.context.const_string(bytes, false);
            let global = self.private_global(data.get_type(), &format!("tcc.constant.{index}"), &data);
            global.set_alignment(64);
            let t = self.types;
            constant_entries.push(t.constant_desc.const_named_struct(&[global.as_pointer_value().into(), t.i64.const_int(bytes.len() as u64, false).into()]));
        }
        let constants_array = self.types.constant_desc.const_array(&constant_entries);
        let constants_global = self.private_global(constants_array.get_type(), "tcc.constants", &constants_array);

        let t = self.types;
        let artifact = t.artifact.const_named_struct(&[
            t.i32.const_int(ABI_VERSION as u64, false).into(),
            t.i32.const_zero().into(), // TCC_SOURCE_OPENCL_C
            source.into(),
            t.i64.const_int(program.source.len() as u64, false).into(),
            options.into(),
            t.i32.const_int(program.kernels.len() as u64, false).into(),
            t.i32.const_int(functions.len() as u64, false).into(),
            kernel_names.as_pointer_value().into(),
            functions_global.as_pointer_value().into(),
            t.i32.const_int(constants.len() as u64, false).into(),
            t.i32.const_zero().into(),
            constants_global.as_pointer_value().into(),
            producer.into(),
        ]);
        // Optional (ABI v1): floating-point operations per launch of each kernel.
        let flops: Vec<IntValue> = program.kernels.iter().map(|k| t.i64.const_int(k.flops, false)).collect();
        let flops_array = t.i64.const_array(&flops);
        let flops_global = self.private_global(flops_array.get_type(), "tcc.kernel_flops", &flops_array);
        let t = self.types;
        let flops_getter = self.module.add_function("tcc_kernel_flops_v1", t.ptr.fn_type(&[], false), Some(Linkage::External));
        let block = self.context.append_basic_block(flops_getter, "entry");
        self.builder.position_at_end(block);
        self.builder.build_return(Some(&flops_global.as_pointer_value())).map_err(llvm_error)?;
        let artifact_type = t.artifact;
        let ptr = t.ptr;
        let artifact_global = self.private_global(artifact_type, "tcc.artifact", &artifact);
        let getter = self.module.add_function("tcc_artifact_v1", ptr.fn_type(&[], false), Some(Linkage::External));
        let block = self.context.append_basic_block(getter, "entry");
        self.builder.position_at_end(block);
        self.builder.build_return(Some(&artifact_global.as_pointer_value())).map_err(llvm_error)?;
        Ok(())
    }
}
