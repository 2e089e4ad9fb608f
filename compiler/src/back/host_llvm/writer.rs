//! The host writer: the host functions, built in the LLVM dialect by
//! `lower.rs` and translated to LLVM IR by MLIR, become the entries
//! `int32_t tcc_entry_<name>(const tcc_runtime_api *rt, tcc_buffer *const
//! *inputs, tcc_buffer *const *outputs)` (a function on a symbolic
//! dimension reads the call's extents from `rt->shapes`, ABI 4); with inkwell the module then gains
//! the artifact's self-description `tcc_artifact_v1()` (kernel source,
//! each kernel's launch record, function signatures, constants) laid out
//! as the `tcc-abi` table declares it (which `runtime/include/tcc_abi.h` is
//! checked against).

use std::borrow::Cow;

use inkwell::AddressSpace;
use inkwell::builder::Builder;
use inkwell::context::Context as LlvmContext;
use inkwell::module::{Linkage, Module as LlvmModule};
use inkwell::types::{BasicType, BasicTypeEnum, StructType};
use inkwell::values::{
    BasicValueEnum, FunctionValue, GlobalValue, IntValue, PointerValue, StructValue,
};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, Module};

use crate::back::CodegenError;
use crate::back::opencl_c::{ElementType, Program};
use crate::ir::util::{body_ops, body_ops_named, op_name};

/// The ABI version written into artifacts (TCC_ABI_VERSION).
pub const ABI_VERSION: u32 = tcc_abi::ABI_VERSION;

/// `enum tcc_dtype` of tcc_abi.h.
fn dtype_code(element: ElementType, unsigned: bool, minifloat: &str) -> Result<u32, String> {
    if !minifloat.is_empty() {
        if element != ElementType::I8 {
            return Err(format!("{element:?} tensors cannot hold {minifloat} bits"));
        }
        return Ok(match minifloat {
            "f8E4M3FN" => tcc_abi::DTYPE_F8E4M3FN,
            "f8E4M3FNUZ" => tcc_abi::DTYPE_F8E4M3FNUZ,
            "f8E5M2" => tcc_abi::DTYPE_F8E5M2,
            "f8E5M2FNUZ" => tcc_abi::DTYPE_F8E5M2FNUZ,
            "f4E2M1FN" => tcc_abi::DTYPE_F4E2M1,
            other => return Err(format!("unknown minifloat '{other}'")),
        });
    }
    if unsigned {
        return Ok(match element {
            ElementType::I8 => tcc_abi::DTYPE_U8,
            ElementType::I16 => tcc_abi::DTYPE_U16,
            ElementType::I32 => tcc_abi::DTYPE_U32,
            ElementType::I64 => tcc_abi::DTYPE_U64,
            other => return Err(format!("{other:?} tensors cannot be unsigned")),
        });
    }
    Ok(match element {
        ElementType::F32 => tcc_abi::DTYPE_F32,
        ElementType::F16 => tcc_abi::DTYPE_F16,
        ElementType::BF16 => tcc_abi::DTYPE_BF16,
        ElementType::F64 => tcc_abi::DTYPE_F64,
        ElementType::I16 => tcc_abi::DTYPE_I16,
        ElementType::I32 => tcc_abi::DTYPE_I32,
        ElementType::I64 => tcc_abi::DTYPE_I64,
        ElementType::I8 => tcc_abi::DTYPE_I8,
        ElementType::I1 => tcc_abi::DTYPE_BOOL,
        other => return Err(format!("{other:?} tensors cannot cross the artifact ABI")),
    })
}

/// The ABI version an artifact of `functions` declares: the current one
/// where a function has a symbolic dimension (its entry reads the call's
/// shapes), else the version without them, which older runtimes load.
pub fn abi_version(functions: &[FunctionDesc]) -> u32 {
    if functions.iter().any(|f| !f.dims.is_empty()) {
        ABI_VERSION
    } else {
        tcc_abi::ABI_VERSION_STATIC
    }
}

/// A tensor crossing the ABI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    pub name: String,
    pub element: ElementType,
    pub shape: Vec<i64>,
    /// A signless integer tensor that holds unsigned values (ONNX uint*).
    pub unsigned: bool,
    /// An `i8` tensor that holds a minifloat's bits (`tcc.minifloat`):
    /// its MLIR name, "" for none.
    pub minifloat: String,
    /// With a symbolic extent (`ir::memref::DYNAMIC` in `shape`): each
    /// axis's dimension name, "" for a static axis; empty otherwise.
    pub dims: Vec<String>,
}

impl TensorDesc {
    /// The shape as the ABI writes it: a symbolic extent as
    /// `tcc_abi::symbolic::SYMBOLIC`.
    pub fn abi_shape(&self) -> Vec<i64> {
        self.shape
            .iter()
            .map(|&d| {
                if d == crate::ir::memref::DYNAMIC {
                    tcc_abi::symbolic::SYMBOLIC
                } else {
                    d
                }
            })
            .collect()
    }
}

/// `constants` with repeats removed (the first of equal bytes kept), and
/// for each original index the index of its bytes in the result.
fn unique_constants<'b>(
    constants: Vec<Cow<'b, [u8]>>,
    read_only: &[bool],
) -> (Vec<Cow<'b, [u8]>>, Vec<u32>) {
    use std::hash::{Hash, Hasher};
    // A cheap key (the length and the ends); equal keys compare in full.
    let key = |bytes: &[u8]| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.len().hash(&mut hasher);
        bytes[..bytes.len().min(4096)].hash(&mut hasher);
        bytes[bytes.len().saturating_sub(4096)..].hash(&mut hasher);
        hasher.finish()
    };
    let mut unique: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut by_key: std::collections::HashMap<u64, Vec<u32>> = std::collections::HashMap::new();
    let mut canonical = Vec::with_capacity(constants.len());
    for (index, bytes) in constants.into_iter().enumerate() {
        if !read_only[index] {
            canonical.push(unique.len() as u32);
            unique.push(bytes);
            continue;
        }
        let candidates = by_key.entry(key(&bytes)).or_default();
        match candidates
            .iter()
            .find(|&&i| unique[i as usize][..] == bytes[..])
        {
            Some(&i) => canonical.push(i),
            None => {
                let i = unique.len() as u32;
                candidates.push(i);
                canonical.push(i);
                unique.push(bytes);
            }
        }
    }
    (unique, canonical)
}

/// The index in a call's shapes (`rt->shapes`: every input's extents in
/// order, then every output's) of the first input axis named `dim`.
fn shape_slot(function: &FunctionDesc, dim: &str) -> Option<usize> {
    let mut offset = 0;
    for input in &function.inputs {
        if let Some(axis) = input.dims.iter().position(|d| d == dim) {
            return Some(offset + axis);
        }
        offset += input.shape.len();
    }
    None
}

/// Checks that `variant` takes and returns what `generic` does, with the
/// symbolic extents of its bucket fixed (the others kept, with the same
/// ranges): the variant's entry is called with the generic one's buffers
/// and shapes.
fn check_variant(generic: &FunctionDesc, variant: &FunctionDesc) -> Result<(), CodegenError> {
    let same = |a: &[TensorDesc], b: &[TensorDesc]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(g, v)| {
                g.element == v.element
                    && g.unsigned == v.unsigned
                    && g.minifloat == v.minifloat
                    && g.shape.len() == v.shape.len()
                    && g.shape
                        .iter()
                        .zip(&v.shape)
                        .all(|(&gd, &vd)| gd == vd || gd == crate::ir::memref::DYNAMIC)
            })
    };
    // A variant may keep some of the generic function's dimensions
    // symbolic (a bucket of the sequence at every batch): its entry reads
    // their extents from the call's shapes as the generic one does.
    let kept = variant
        .dims
        .iter()
        .all(|d| generic.dims.iter().any(|g| g == d));
    if !kept || !same(&generic.inputs, &variant.inputs) || !same(&generic.outputs, &variant.outputs)
    {
        return Err(CodegenError::new(format!(
            "@{}: the specialization's signature is not @{}'s with its dimensions fixed",
            variant.name, generic.name
        )));
    }
    Ok(())
}

/// A function of the artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionDesc {
    pub name: String,
    pub inputs: Vec<TensorDesc>,
    pub outputs: Vec<TensorDesc>,
    /// Bytes of the function's arena (`tcc-plan-memory`; 0 without a plan).
    pub arena_bytes: u64,
    /// Alignment of every offset in the arena.
    pub arena_alignment: u64,
    /// The symbolic dimensions its tensors name, with their ranges (none
    /// for a static function).
    pub dims: Vec<tcc_abi::symbolic::DimEntry>,
    /// The buckets compiled as static variants whose entries the
    /// function's entry calls (`driver::specialize`), each the values it
    /// fixes by dimension name.
    pub specializations: Vec<Vec<(String, i64)>>,
}

/// The bytes of a tensor (saturating: tensors past
/// `ir::types::MAX_TENSOR_ELEMENTS` never get here, see
/// `tcc-check-supported`, and a saturated size fails the later checks).
pub(super) fn byte_size(desc: &TensorDesc) -> u64 {
    desc.shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))
        .and_then(|n| n.checked_mul(desc.element.size_bytes() as u64))
        .unwrap_or(u64::MAX)
}

/// The raw little-endian bytes of a dense or dense_resource constant
/// (splats expanded, booleans one byte each), borrowed from the attribute
/// where it holds them as they are.
fn constant_bytes<'c>(
    op: OperationRef,
    attribute: melior::ir::Attribute<'c>,
) -> Result<Cow<'c, [u8]>, CodegenError> {
    crate::ir::constant::ConstTensor::attribute_bytes(attribute)
        .map_err(|message| CodegenError::at(&op, message))
}

/// A constant's f32 bytes in the storage `tcc-narrow-storage` chose for it
/// (IEEE half or bfloat16, rounded to nearest even).
fn stored_bytes(
    op: OperationRef,
    bytes: &[u8],
    storage: melior::ir::Type,
) -> Result<Vec<u8>, CodegenError> {
    use melior::ir::r#type::TypeLike;
    let bf16 = storage.is_bf16();
    if !storage.is_f16() && !bf16 {
        return Err(CodegenError::at(
            &op,
            format!("unsupported storage type {storage}"),
        ));
    }
    if !bytes.len().is_multiple_of(4) {
        return Err(CodegenError::at(
            &op,
            "half storage of a constant that is not f32",
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .flat_map(|b| {
            let value = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if bf16 {
                half::bf16::from_f32(value).to_bits().to_le_bytes()
            } else {
                half::f16::from_f32(value).to_bits().to_le_bytes()
            }
        })
        .collect())
}

#[derive(Clone, Copy)]
struct Types<'l> {
    i32: inkwell::types::IntType<'l>,
    i64: inkwell::types::IntType<'l>,
    ptr: inkwell::types::PointerType<'l>,
    tensor_desc: StructType<'l>,
    function_desc: StructType<'l>,
    kernel_arg: StructType<'l>,
    kernel_desc: StructType<'l>,
    constant_desc: StructType<'l>,
    artifact: StructType<'l>,
}

/// The LLVM type of an ABI struct, field by field from the table.
fn struct_type<'l>(context: &'l LlvmContext, layout: &tcc_abi::Struct) -> StructType<'l> {
    let fields: Vec<BasicTypeEnum<'l>> = layout
        .fields
        .iter()
        .map(|(_, scalar)| match scalar {
            tcc_abi::Scalar::U32 => context.i32_type().into(),
            tcc_abi::Scalar::U64 | tcc_abi::Scalar::Word => context.i64_type().into(),
            tcc_abi::Scalar::Ptr => context.ptr_type(AddressSpace::default()).into(),
        })
        .collect();
    context.struct_type(&fields, false)
}

/// A constant of an ABI struct from `(field, value)` pairs: every field of
/// the table exactly once, in any order.
fn struct_value<'l>(
    layout: &tcc_abi::Struct,
    ty: StructType<'l>,
    values: &[(&str, BasicValueEnum<'l>)],
) -> Result<StructValue<'l>, CodegenError> {
    let mut ordered: Vec<Option<BasicValueEnum<'l>>> = vec![None; layout.fields.len()];
    for (name, value) in values {
        let slot = layout
            .position(name)
            .and_then(|i| ordered.get_mut(i))
            .filter(|slot| slot.is_none())
            .ok_or_else(|| {
                CodegenError::new(format!(
                    "internal error: {}.{name} is unknown or given twice",
                    layout.name
                ))
            })?;
        *slot = Some(*value);
    }
    let ordered: Vec<BasicValueEnum<'l>> = ordered
        .into_iter()
        .zip(layout.fields)
        .map(|(value, (name, _))| {
            value.ok_or_else(|| {
                CodegenError::new(format!("internal error: {}.{name} is missing", layout.name))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(ty.const_named_struct(&ordered))
}

impl<'l> Types<'l> {
    fn new(context: &'l LlvmContext) -> Self {
        Self {
            i32: context.i32_type(),
            i64: context.i64_type(),
            ptr: context.ptr_type(AddressSpace::default()),
            tensor_desc: struct_type(context, &tcc_abi::TENSOR_DESC),
            function_desc: struct_type(context, &tcc_abi::FUNCTION_DESC),
            kernel_arg: struct_type(context, &tcc_abi::KERNEL_ARG),
            kernel_desc: struct_type(context, &tcc_abi::KERNEL_DESC),
            constant_desc: struct_type(context, &tcc_abi::CONSTANT_DESC),
            artifact: struct_type(context, &tcc_abi::ARTIFACT),
        }
    }
}

/// Builds the host LLVM module: entries and the artifact description.
pub struct HostWriter<'l> {
    context: &'l LlvmContext,
    pub module: LlvmModule<'l>,
    builder: Builder<'l>,
    types: Types<'l>,
    strings: usize,
    /// Prefix of every exported symbol (`--name=NAME` gives `NAME_`).
    prefix: String,
    /// The kernels as a binary program (SPIR-V) instead of the program's
    /// OpenCL C: the `tcc_source_kind` and the bytes.
    kernel_binary: Option<(u32, Vec<u8>)>,
}

fn llvm_error(error: impl std::fmt::Display) -> CodegenError {
    CodegenError::new(format!("LLVM IR construction failed: {error}"))
}

impl<'l> HostWriter<'l> {
    pub fn new(context: &'l LlvmContext, name: &str) -> Self {
        Self {
            context,
            module: context.create_module(name),
            builder: context.create_builder(),
            types: Types::new(context),
            strings: 0,
            prefix: String::new(),
            kernel_binary: None,
        }
    }

    /// Prefixes every exported symbol with `prefix` (`NAME_tcc_artifact_v1`,
    /// ...). A prefixed artifact defines every optional symbol too (NULL
    /// when empty), so that one declaration links any model.
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_string();
        self
    }

    /// Ships `bytes` (of `tcc_source_kind` `kind`, e.g. SPIR-V) as the
    /// artifact's kernel program instead of the OpenCL C; the program's
    /// kernel list still names and numbers the kernels.
    pub fn with_kernel_binary(mut self, binary: Option<(u32, Vec<u8>)>) -> Self {
        self.kernel_binary = binary;
        self
    }

    /// The artifact's kernel program: its kind, bytes and build options.
    fn kernel_source<'p>(&'p self, program: &'p Program) -> (u32, &'p [u8], &'static str) {
        match &self.kernel_binary {
            Some((kind, bytes)) => (*kind, bytes, ""),
            None => (
                tcc_abi::SOURCE_OPENCL_C,
                program.source.as_bytes(),
                "-cl-std=CL1.2",
            ),
        }
    }

    fn exported(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// `const char *<prefix>tcc_metadata_v1(void)` returning `text`.
    fn metadata_getter(&mut self, text: &str) -> Result<(), CodegenError> {
        let value = self.c_string(text);
        self.string_getter(tcc_abi::METADATA_SYMBOL, Some(value))
    }

    /// An exported `const char *NAME(void)` returning `value` (or NULL).
    fn string_getter(
        &mut self,
        name: &str,
        value: Option<PointerValue<'l>>,
    ) -> Result<(), CodegenError> {
        let getter = self.module.add_function(
            &self.exported(name),
            self.types.ptr.fn_type(&[], false),
            Some(Linkage::External),
        );
        let block = self.context.append_basic_block(getter, "entry");
        self.builder.position_at_end(block);
        let value = value.unwrap_or_else(|| self.types.ptr.const_null());
        self.builder
            .build_return(Some(&value))
            .map_err(llvm_error)?;
        Ok(())
    }

    /// A private constant C string; returns its address.
    /// Bytes (not NUL-terminated) as a private constant, 4-byte aligned
    /// (SPIR-V is read as words).
    fn byte_string(&mut self, bytes: &[u8]) -> PointerValue<'l> {
        let value = self.context.const_string(bytes, false);
        let global =
            self.module
                .add_global(value.get_type(), None, &format!(".bytes.{}", self.strings));
        self.strings += 1;
        global.set_initializer(&value);
        global.set_constant(true);
        global.set_alignment(4);
        global.set_linkage(Linkage::Private);
        global.as_pointer_value()
    }

    fn c_string(&mut self, text: &str) -> PointerValue<'l> {
        let value = self.context.const_string(text.as_bytes(), true);
        let global =
            self.module
                .add_global(value.get_type(), None, &format!(".str.{}", self.strings));
        self.strings += 1;
        global.set_initializer(&value);
        global.set_constant(true);
        global.set_linkage(Linkage::Private);
        global.as_pointer_value()
    }

    fn private_global<T: BasicType<'l>>(
        &mut self,
        ty: T,
        name: &str,
        init: &dyn inkwell::values::BasicValue<'l>,
    ) -> GlobalValue<'l> {
        let global = self.module.add_global(ty, None, name);
        global.set_initializer(init);
        global.set_constant(true);
        global.set_linkage(Linkage::Private);
        global
    }

    /// Writes the whole artifact: one entry per host function, the kernel
    /// program and the constants. Returns the functions it describes.
    ///
    /// With `weights`, the constants go into that separate object
    /// ([`super::weights`], for `triple`) and the module only declares
    /// them; without, they are globals of the module.
    pub fn write<'c>(
        &mut self,
        mlir: &Module<'c>,
        program: &Program,
        ptx: Option<&str>,
        metadata: Option<&str>,
        weights: Option<(&std::path::Path, Option<&str>)>,
    ) -> Result<Vec<FunctionDesc>, CodegenError> {
        let module_op = mlir.as_operation();
        // Constants: every memref.global, in module order.
        let mut constant_index = super::lower::constant_indices(module_op);
        let mut constants: Vec<Cow<'c, [u8]>> = Vec::new();
        let mut read_only: Vec<bool> = Vec::new();
        for op in body_ops(module_op)
            .iter()
            .filter(|op| op_name(*op) == "memref.global")
        {
            let value = op.attribute("initial_value").map_err(|_| {
                CodegenError::at(op, "a constant (memref.global) has no initial value")
            })?;
            // SAFETY: the attribute belongs to `mlir`'s context ('c).
            let value: melior::ir::Attribute<'c> = unsafe {
                melior::ir::Attribute::from_raw(melior::ir::attribute::AttributeLike::to_raw(
                    &value,
                ))
            };
            let bytes = constant_bytes(*op, value)?;
            read_only.push(op.attribute("constant").is_ok());
            constants.push(match crate::ir::storage::op_storage(op) {
                Some(storage) => Cow::Owned(stored_bytes(*op, &bytes, storage)?),
                None => bytes,
            });
        }
        // Globals of equal bytes share one constant (the static variants of
        // `--specialize` import the weights again; folds may repeat one).
        // Writable globals (split-K counters) stay one per kernel.
        let (constants, canonical) = unique_constants(constants, &read_only);
        for index in constant_index.values_mut() {
            *index = canonical[*index as usize];
        }
        // Host functions: built in the LLVM dialect into a module of their
        // own (lower.rs), translated to LLVM IR by MLIR straight into this
        // writer's LLVM context.
        let context_ref = mlir.context();
        // SAFETY: `context_ref` lives to the end of this function, longer
        // than every op built with `context` (the host module is dropped
        // first), and the context itself outlives `mlir`.
        let context = unsafe { context_ref.to_ref() };
        let host = Module::new(mlir.as_operation().location());
        let kernels = super::lower::kernels_of_program(program);
        let mut functions = Vec::new();
        for function in body_ops_named(module_op, "func.func") {
            let mut lowering = function;
            let (_, desc) = super::lower::lower_function(
                context,
                function,
                &constant_index,
                &kernels,
                &mut lowering,
                |entry| host.body().append_operation(entry),
            )?;
            functions.push(desc);
        }
        if !host.as_operation().verify() {
            return Err(CodegenError::new(format!(
                "internal error: the host's LLVM dialect does not verify:\n{}",
                host.as_operation()
            )));
        }
        let translated = unsafe {
            mlir_sys::mlirTranslateModuleToLLVMIR(
                host.as_operation().to_raw(),
                self.context.raw() as *mut _,
            )
        };
        if translated.is_null() {
            return Err(CodegenError::new(
                "internal error: translating the host's LLVM dialect to LLVM IR failed",
            ));
        }
        let name = self.module.get_name().to_string_lossy().into_owned();
        self.module = unsafe { LlvmModule::new(translated as *mut _) };
        self.module.set_name(&name);
        self.module.set_source_file_name(&name);
        let mut entries = Vec::new();
        for function in &functions {
            let entry = self
                .module
                .get_function(&format!("{}{}", tcc_abi::ENTRY_PREFIX, function.name))
                .ok_or_else(|| {
                    CodegenError::new(format!(
                        "internal error: no translated entry for @{}",
                        function.name
                    ))
                })?;
            entries.push(entry);
        }
        let (functions, entries) = self.dispatch_specializations(module_op, functions, entries)?;
        if let Some((path, triple)) = weights {
            super::weights::write_object(path, triple, &self.prefix, &constants)?;
        }
        let kernels = super::launch::launch_records(program, ptx)?;
        self.artifact(
            program,
            &kernels,
            &functions,
            &entries,
            &constants,
            weights.is_some(),
        )?;
        self.description(program, &kernels, &functions, &constants, ptx, metadata)?;
        if let Some(ptx) = ptx {
            self.ptx_getter(ptx)?;
        } else if !self.prefix.is_empty() {
            self.string_getter(tcc_abi::KERNEL_PTX_SYMBOL, None)?;
        }
        if let Some(metadata) = metadata {
            self.metadata_getter(metadata)?;
        } else if !self.prefix.is_empty() {
            self.string_getter(tcc_abi::METADATA_SYMBOL, None)?;
        }
        Ok(functions)
    }

    /// Folds the static variants of `tcc compile --specialize`
    /// (`driver::specialize`) into their generic functions: each generic
    /// function with variants gets an entry that reads the call's shapes
    /// (`rt->shapes`) and calls the variant whose fixed values they
    /// bind, else the generic body; its arena is the largest of theirs
    /// (the session's arena serves whichever runs). The variants leave the
    /// function table: their entries are reached only through it.
    fn dispatch_specializations(
        &mut self,
        module_op: OperationRef,
        functions: Vec<FunctionDesc>,
        entries: Vec<FunctionValue<'l>>,
    ) -> Result<(Vec<FunctionDesc>, Vec<FunctionValue<'l>>), CodegenError> {
        use crate::ir::dynamic::{SPECIALIZATION_OF, SPECIALIZED_DIMS, SPECIALIZED_VALUES};
        use crate::ir::util::{integer_value, string_value};
        // name -> (generic function, [(dimension, value)])
        let mut marked: std::collections::HashMap<String, (String, Vec<(String, i64)>)> =
            std::collections::HashMap::new();
        for op in body_ops_named(module_op, "func.func") {
            let Some(of) = op.attribute(SPECIALIZATION_OF).ok().and_then(string_value) else {
                continue;
            };
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            let list = |attribute: &str| -> Vec<melior::ir::Attribute> {
                op.attribute(attribute)
                    .ok()
                    .and_then(|a| melior::ir::attribute::ArrayAttribute::try_from(a).ok())
                    .map(|a| (0..a.len()).filter_map(|i| a.element(i).ok()).collect())
                    .unwrap_or_default()
            };
            let dims: Vec<String> = list(SPECIALIZED_DIMS)
                .into_iter()
                .filter_map(string_value)
                .collect();
            let values: Vec<i64> = list(SPECIALIZED_VALUES)
                .into_iter()
                .filter_map(integer_value)
                .collect();
            if dims.is_empty() || dims.len() != values.len() {
                return Err(CodegenError::at(
                    &op,
                    format!(
                        "@{name}: a specialization needs as many values as dimensions ({SPECIALIZED_DIMS}, {SPECIALIZED_VALUES})"
                    ),
                ));
            }
            marked.insert(name, (of, dims.into_iter().zip(values).collect()));
        }
        if marked.is_empty() {
            return Ok((functions, entries));
        }
        let mut kept: Vec<(FunctionDesc, FunctionValue<'l>)> = Vec::new();
        // (variant, its entry, the generic function's name, its bucket)
        type Variant<'l> = (FunctionDesc, FunctionValue<'l>, String, Vec<(String, i64)>);
        let mut variants: Vec<Variant<'l>> = Vec::new();
        for (function, entry) in functions.into_iter().zip(entries) {
            match marked.remove(&function.name) {
                Some((of, bucket)) => variants.push((function, entry, of, bucket)),
                None => kept.push((function, entry)),
            }
        }
        for (generic, generic_entry) in kept.iter_mut() {
            let mine: Vec<_> = variants.iter().filter(|v| v.2 == generic.name).collect();
            if mine.is_empty() {
                continue;
            }
            let mut cases = Vec::new();
            for (variant, entry, _, bucket) in &mine {
                check_variant(generic, variant)?;
                let mut slots = Vec::new();
                for (dim, value) in bucket {
                    slots.push((shape_slot(generic, dim).ok_or_else(|| {
                        CodegenError::new(format!(
                            "@{}: its specialization @{} fixes '{dim}', which no input of @{} names",
                            generic.name, variant.name, generic.name
                        ))
                    })?, *value));
                }
                generic.arena_bytes = generic.arena_bytes.max(variant.arena_bytes);
                generic.arena_alignment = generic.arena_alignment.max(variant.arena_alignment);
                generic.specializations.push(bucket.clone());
                cases.push((slots, *entry));
            }
            *generic_entry = self.specialization_dispatch(&generic.name, *generic_entry, &cases)?;
        }
        if let Some((variant, _, of, _)) = variants
            .iter()
            .find(|v| !kept.iter().any(|k| k.0.name == v.2))
        {
            return Err(CodegenError::new(format!(
                "@{}: a specialization of @{of}, which the module does not define",
                variant.name
            )));
        }
        Ok(kept.into_iter().unzip())
    }

    /// The entry of a function with static variants: `cases` are each
    /// variant's (slot of `rt->shapes`, value) conditions and entry, tried
    /// in order; `generic` runs when none holds (or without shapes).
    fn specialization_dispatch(
        &mut self,
        name: &str,
        generic: FunctionValue<'l>,
        cases: &[(Vec<(usize, i64)>, FunctionValue<'l>)],
    ) -> Result<FunctionValue<'l>, CodegenError> {
        let t = self.types;
        let function = self.module.add_function(
            &format!("{}{name}.specialized", tcc_abi::ENTRY_PREFIX),
            generic.get_type(),
            Some(Linkage::Internal),
        );
        let params = function.get_params();
        let args: Vec<inkwell::values::BasicMetadataValueEnum> =
            params.iter().map(|p| (*p).into()).collect();
        let rt = params[0].into_pointer_value();
        let api = struct_type(self.context, &tcc_abi::RUNTIME_API);
        let b = &self.builder;
        let entry = self.context.append_basic_block(function, "entry");
        let fallback = self.context.append_basic_block(function, "generic");
        b.position_at_end(entry);
        let shapes_field = tcc_abi::RUNTIME_API.field("shapes");
        let address = b
            .build_struct_gep(api, rt, shapes_field, "shapes.address")
            .map_err(llvm_error)?;
        let shapes = b
            .build_load(t.ptr, address, "shapes")
            .map_err(llvm_error)?
            .into_pointer_value();
        let missing = b.build_is_null(shapes, "no.shapes").map_err(llvm_error)?;
        let first = self.context.append_basic_block(function, "bucket");
        b.build_conditional_branch(missing, fallback, first)
            .map_err(llvm_error)?;
        let mut current = first;
        for (index, (slots, variant)) in cases.iter().enumerate() {
            b.position_at_end(current);
            let next = if index + 1 == cases.len() {
                fallback
            } else {
                self.context.append_basic_block(function, "bucket")
            };
            let mut all = t
                .i32
                .const_int(1, false)
                .const_truncate(self.context.bool_type());
            for &(slot, value) in slots {
                // SAFETY: `slot` indexes the call's shapes, which hold
                // every input's extents (the runtime passes them for a
                // function on a symbolic dimension).
                let at = unsafe {
                    b.build_in_bounds_gep(
                        t.i64,
                        shapes,
                        &[t.i64.const_int(slot as u64, false)],
                        "extent.address",
                    )
                }
                .map_err(llvm_error)?;
                let extent = b
                    .build_load(t.i64, at, "extent")
                    .map_err(llvm_error)?
                    .into_int_value();
                let equal = b
                    .build_int_compare(
                        inkwell::IntPredicate::EQ,
                        extent,
                        t.i64.const_int(value as u64, false),
                        "bound",
                    )
                    .map_err(llvm_error)?;
                all = b.build_and(all, equal, "all").map_err(llvm_error)?;
            }
            let call = self.context.append_basic_block(function, "variant");
            b.build_conditional_branch(all, call, next)
                .map_err(llvm_error)?;
            b.position_at_end(call);
            let status = b
                .build_call(*variant, &args, "status")
                .map_err(llvm_error)?
                .try_as_basic_value()
                .basic()
                .ok_or_else(|| CodegenError::new("internal error: an entry without a status"))?;
            b.build_return(Some(&status)).map_err(llvm_error)?;
            current = next;
        }
        b.position_at_end(fallback);
        let status = b
            .build_call(generic, &args, "status")
            .map_err(llvm_error)?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| CodegenError::new("internal error: an entry without a status"))?;
        b.build_return(Some(&status)).map_err(llvm_error)?;
        Ok(function)
    }

    /// The exported data symbol `tcc_description_v1`: what the table says,
    /// with the SHA-256 of the constants, checksummed
    /// (`tcc_abi::description`). `tcc inspect` reads it from
    /// the file without loading the artifact; the loader compares it with
    /// the table, and `--verify` with the constants.
    fn description(
        &mut self,
        program: &Program,
        kernels: &[tcc_abi::LaunchRecord],
        functions: &[FunctionDesc],
        constants: &[Cow<'_, [u8]>],
        ptx: Option<&str>,
        metadata: Option<&str>,
    ) -> Result<(), CodegenError> {
        use tcc_abi::description::{self as d, Description, FunctionEntry, TensorEntry};
        let tensors = |ts: &[TensorDesc]| -> Result<Vec<TensorEntry>, CodegenError> {
            ts.iter()
                .map(|t| {
                    Ok(TensorEntry {
                        name: t.name.clone(),
                        dtype: dtype_code(t.element, t.unsigned, &t.minifloat)
                            .map_err(CodegenError::new)?,
                        shape: t.abi_shape(),
                        dims: t.dims.clone(),
                    })
                })
                .collect()
        };
        let description = Description {
            abi_version: abi_version(functions),
            producer: concat!("tcc ", env!("CARGO_PKG_VERSION")).to_string(),
            source_kind: self.kernel_source(program).0,
            source_sha256: d::source_digest(self.kernel_source(program).1),
            build_options: self.kernel_source(program).2.into(),
            kernels: kernels.to_vec(),
            functions: functions
                .iter()
                .map(|f| {
                    Ok(FunctionEntry {
                        name: f.name.clone(),
                        inputs: tensors(&f.inputs)?,
                        outputs: tensors(&f.outputs)?,
                        arena_bytes: f.arena_bytes,
                        arena_alignment: d::normalized_alignment(f.arena_bytes, f.arena_alignment),
                        dims: f.dims.clone(),
                        specializations: f.specializations.clone(),
                    })
                })
                .collect::<Result<_, CodegenError>>()?,
            constant_bytes: constants.iter().map(|c| c.len() as u64).collect(),
            constants_sha256: d::constants_digest(constants.iter().map(|c| &c[..])),
            ptx_sha256: ptx
                .filter(|p| !p.is_empty())
                .map(|p| d::sha256_hex(p.as_bytes())),
            metadata: metadata.filter(|m| !m.is_empty()).map(str::to_string),
        };
        let blob = self.context.const_string(&description.encode(), false);
        let global = self.module.add_global(
            blob.get_type(),
            None,
            &self.exported(tcc_abi::DESCRIPTION_SYMBOL),
        );
        global.set_initializer(&blob);
        global.set_constant(true);
        global.set_linkage(Linkage::External);
        Ok(())
    }

    fn tensor_descs(
        &mut self,
        tensors: &[TensorDesc],
        name: &str,
    ) -> Result<PointerValue<'l>, CodegenError> {
        let t = self.types;
        let mut entries = Vec::new();
        for (index, tensor) in tensors.iter().enumerate() {
            let shape_values: Vec<IntValue> = tensor
                .abi_shape()
                .iter()
                .map(|d| t.i64.const_int(*d as u64, true))
                .collect();
            let shape_array = t.i64.const_array(&shape_values);
            let shape = self.private_global(
                shape_array.get_type(),
                &format!("{name}.shape.{index}"),
                &shape_array,
            );
            let tensor_name = self.c_string(&tensor.name);
            let dtype = dtype_code(tensor.element, tensor.unsigned, &tensor.minifloat)
                .map_err(CodegenError::new)?;
            let t = self.types;
            entries.push(struct_value(
                &tcc_abi::TENSOR_DESC,
                t.tensor_desc,
                &[
                    ("name", tensor_name.into()),
                    ("dtype", t.i32.const_int(dtype as u64, false).into()),
                    (
                        "rank",
                        t.i32.const_int(tensor.shape.len() as u64, false).into(),
                    ),
                    ("shape", shape.as_pointer_value().into()),
                ],
            )?);
        }
        let array = self.types.tensor_desc.const_array(&entries);
        Ok(self
            .private_global(array.get_type(), name, &array)
            .as_pointer_value())
    }

    /// Optional (ABI v2): `const char *tcc_kernel_ptx_v1(void)`, the kernels
    /// as NUL-terminated PTX text, which NVIDIA drivers load instead of
    /// compiling the OpenCL C.
    fn ptx_getter(&mut self, ptx: &str) -> Result<(), CodegenError> {
        let text = self.c_string(ptx);
        self.string_getter(tcc_abi::KERNEL_PTX_SYMBOL, Some(text))
    }

    fn artifact(
        &mut self,
        program: &Program,
        kernels: &[tcc_abi::LaunchRecord],
        functions: &[FunctionDesc],
        entries: &[FunctionValue<'l>],
        constants: &[Cow<'_, [u8]>],
        external_constants: bool,
    ) -> Result<(), CodegenError> {
        // Kernel program and launch records.
        let (source_kind, source_bytes, build_options) = {
            let (kind, bytes, options) = self.kernel_source(program);
            (kind, bytes.to_vec(), options)
        };
        let source = if source_kind == tcc_abi::SOURCE_OPENCL_C {
            self.c_string(&program.source)
        } else {
            self.byte_string(&source_bytes)
        };
        let options = self.c_string(build_options);
        let producer = self.c_string(concat!("tcc ", env!("CARGO_PKG_VERSION")));
        let mut kernel_entries = Vec::new();
        for (index, kernel) in kernels.iter().enumerate() {
            let name = self.c_string(&kernel.name);
            let t = self.types;
            let u32 =
                |n: u32| -> BasicValueEnum<'l> { t.i32.const_int(u64::from(n), false).into() };
            let mut arg_entries = Vec::new();
            for arg in &kernel.args {
                arg_entries.push(struct_value(
                    &tcc_abi::KERNEL_ARG,
                    t.kernel_arg,
                    &[
                        ("kind", u32(arg.kind)),
                        ("dtype", u32(arg.dtype)),
                        ("elements", t.i64.const_int(arg.elements, false).into()),
                        (
                            "flags",
                            u32(if arg.written { tcc_abi::ARG_WRITTEN } else { 0 }),
                        ),
                        ("reserved", u32(0)),
                    ],
                )?);
            }
            let args_array = t.kernel_arg.const_array(&arg_entries);
            let args = self.private_global(
                args_array.get_type(),
                &format!("tcc.kernel{index}.args"),
                &args_array,
            );
            let [x, y, z] = kernel.workgroup_size;
            kernel_entries.push(struct_value(
                &tcc_abi::KERNEL_DESC,
                t.kernel_desc,
                &[
                    ("name", name.into()),
                    ("flops", t.i64.const_int(kernel.flops, false).into()),
                    ("workgroup_x", u32(x)),
                    ("workgroup_y", u32(y)),
                    ("workgroup_z", u32(z)),
                    ("dynamic_local_bytes", u32(kernel.dynamic_local_bytes)),
                    ("num_args", u32(kernel.args.len() as u32)),
                    ("reserved", u32(0)),
                    ("args", args.as_pointer_value().into()),
                ],
            )?);
        }
        let kernels_array = self.types.kernel_desc.const_array(&kernel_entries);
        let kernels_global =
            self.private_global(kernels_array.get_type(), "tcc.kernels", &kernels_array);

        // Functions.
        let mut function_entries = Vec::new();
        for (function, entry) in functions.iter().zip(entries) {
            let inputs =
                self.tensor_descs(&function.inputs, &format!("tcc.{}.inputs", function.name))?;
            let outputs =
                self.tensor_descs(&function.outputs, &format!("tcc.{}.outputs", function.name))?;
            let name = self.c_string(&function.name);
            let t = self.types;
            let count = |n: usize| t.i32.const_int(n as u64, false).into();
            function_entries.push(struct_value(
                &tcc_abi::FUNCTION_DESC,
                t.function_desc,
                &[
                    ("name", name.into()),
                    ("entry", entry.as_global_value().as_pointer_value().into()),
                    ("num_inputs", count(function.inputs.len())),
                    ("num_outputs", count(function.outputs.len())),
                    ("inputs", inputs.into()),
                    ("outputs", outputs.into()),
                    (
                        "arena_bytes",
                        t.i64.const_int(function.arena_bytes, false).into(),
                    ),
                    (
                        "arena_alignment",
                        t.i64.const_int(function.arena_alignment, false).into(),
                    ),
                ],
            )?);
        }
        let functions_array = self.types.function_desc.const_array(&function_entries);
        let functions_global = self.private_global(
            functions_array.get_type(),
            "tcc.functions",
            &functions_array,
        );

        // Constants (weights), 64-byte aligned.
        let mut constant_entries = Vec::new();
        for (index, bytes) in constants.iter().enumerate() {
            let name = super::weights::constant_symbol(&self.prefix, index);
            let global = if external_constants {
                // Defined by the weights object, inside the same library.
                let length = u32::try_from(bytes.len()).map_err(|_| {
                    CodegenError::new(format!(
                        "constant {index} holds {} bytes: the host writer takes at most 4 GiB per constant",
                        bytes.len()
                    ))
                })?;
                let ty = self.context.i8_type().array_type(length);
                let global = self.module.add_global(ty, None, &name);
                global.set_constant(true);
                global.set_linkage(Linkage::External);
                global.set_visibility(inkwell::GlobalVisibility::Hidden);
                global
            } else {
                let data = self.context.const_string(bytes, false);
                self.private_global(data.get_type(), &name, &data)
            };
            global.set_alignment(super::weights::CONSTANT_ALIGNMENT as u32);
            let t = self.types;
            constant_entries.push(struct_value(
                &tcc_abi::CONSTANT_DESC,
                t.constant_desc,
                &[
                    ("data", global.as_pointer_value().into()),
                    ("bytes", t.i64.const_int(bytes.len() as u64, false).into()),
                ],
            )?);
        }
        let constants_array = self.types.constant_desc.const_array(&constant_entries);
        // Exported, so that `tcc inspect --verify` finds the descriptors
        // in the file without loading it.
        let constants_global = self.private_global(
            constants_array.get_type(),
            &self.exported(tcc_abi::CONSTANTS_SYMBOL),
            &constants_array,
        );
        constants_global.set_linkage(Linkage::External);

        let t = self.types;
        let u32 = |n: u64| t.i32.const_int(n, false).into();
        let artifact = struct_value(
            &tcc_abi::ARTIFACT,
            t.artifact,
            &[
                ("abi_version", u32(abi_version(functions) as u64)),
                ("source_kind", u32(source_kind as u64)),
                ("source", source.into()),
                (
                    "source_bytes",
                    t.i64.const_int(source_bytes.len() as u64, false).into(),
                ),
                ("build_options", options.into()),
                ("num_kernels", u32(kernels.len() as u64)),
                ("num_functions", u32(functions.len() as u64)),
                ("kernels", kernels_global.as_pointer_value().into()),
                ("functions", functions_global.as_pointer_value().into()),
                ("num_constants", u32(constants.len() as u64)),
                ("reserved", u32(0)),
                ("constants", constants_global.as_pointer_value().into()),
                ("producer", producer.into()),
            ],
        )?;
        let artifact_type = t.artifact;
        let ptr = t.ptr;
        let artifact_global = self.private_global(artifact_type, "tcc.artifact", &artifact);
        let getter = self.module.add_function(
            &self.exported(tcc_abi::ARTIFACT_SYMBOL),
            ptr.fn_type(&[], false),
            Some(Linkage::External),
        );
        let block = self.context.append_basic_block(getter, "entry");
        self.builder.position_at_end(block);
        self.builder
            .build_return(Some(&artifact_global.as_pointer_value()))
            .map_err(llvm_error)?;
        Ok(())
    }
}
