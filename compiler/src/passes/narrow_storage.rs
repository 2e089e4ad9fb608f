//! `tcc-narrow-storage`: keeps the model's weights and intermediate
//! activations in device memory as IEEE half (fp16, `type=f16`, the
//! default) or bfloat16 (`type=bf16`) while every kernel still computes in
//! f32 registers (`tcc compile --precision=fp16|bf16`, and
//! `--storage=fp16`). It halves the artifact's weights and the bytes each
//! kernel reads and writes; devices without fp16 arithmetic (NVIDIA's
//! OpenCL has no `cl_khr_fp16`) load and store half through OpenCL C's
//! `vload_half`/`vstore_half`, which every OpenCL device has, and bf16 as
//! 16-bit integers shifted into the top of a float's bits. The GEMM
//! template's tensor-core body reads such operands as they are stored.
//!
//! The IR keeps f32 memref types (the element type is the type kernels
//! compute in, and `gpu.launch_func` operands must match their kernel's
//! signature); the pass marks what is stored narrower with
//! `tcc.storage = f16` (or `bf16`):
//!
//! - on a constant `memref.global` (the host writer converts its bytes),
//! - on an intermediate `memref.alloc` (`tcc-plan-memory` sizes it by the
//!   storage type),
//! - on each `gpu.func` argument such a buffer is passed to (an argument
//!   attribute: the kernel writers load and store it as half).
//!
//! A buffer stays f32 when any of this holds:
//! - it is a function argument (model inputs and outputs keep their types);
//! - the host uses it other than by views, launches and deallocation (a
//!   `memref.copy` copies bytes and must see equal storage on both sides);
//! - a loop kernel both loads and stores it (an accumulation through memory,
//!   such as a convolution or a reduction summing into its output, would
//!   round every partial sum to half: the error would grow with the length
//!   of the sum instead of staying one rounding);
//! - it is a split-K GEMM's partial-tile workspace;
//! - a row-reduction kernel (`#tcc.row_reduce`) writes it: its result is
//!   a statistic that later kernels may still scale (a mean whose division
//!   elementwise fusion moved into the consumer's loads leaves a sum, and
//!   EfficientNet's squeeze-and-excitation pools sum 12,544 values: a sum
//!   of such length can pass half's 65504 where the mean would not), and
//!   there is one element per reduced row, so keeping it f32 costs little;
//!
//! A kernel launched with half buffers in one place and f32 ones in another
//! (one layer-norm kernel for every layer, the last of which writes the
//! model's f32 output) is specialized: each distinct storage of its
//! arguments gets a copy of the kernel (`NAME_sN`) and the launches that
//! pass it, so one f32 buffer does not keep every buffer of the kernel f32.
//!
//! Run it after the kernels are in their final form and before
//! `tcc-plan-memory`.

use std::collections::{HashMap, HashSet};

use melior::Context;
use melior::ir::attribute::TypeAttribute;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::r#type::TypeLike;
use melior::ir::{Attribute, BlockLike, RegionLike, Type, Value, ValueLike};

use super::outline_kernels::KERNEL_MODULE;
use super::pass::{
    self, PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, TccPass,
};
use crate::ir::memref::VIEW_OPS;
use crate::ir::strategy::{self, KernelStrategy};
use crate::ir::util::{body_ops_named, collect_ops, op_name, string_value, users};

/// The attribute that marks a buffer (or kernel argument) stored narrower
/// than its element type: a type attribute, `f16` or `bf16`.
pub use crate::ir::attr_names::STORAGE as STORAGE_ATTR;
pub use crate::ir::storage::{argument_storage, op_storage};

pub struct NarrowStorage;

/// The 16-bit type buffers are stored as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HalfType {
    /// IEEE binary16: 11 significant bits, finite up to 65504.
    #[default]
    F16,
    /// bfloat16: f32's exponent range, 8 significant bits.
    BF16,
}

impl HalfType {
    /// The MLIR type of the `tcc.storage` mark.
    pub fn mlir_type(self, context: &Context) -> Type<'_> {
        match self {
            HalfType::F16 => Type::float16(context),
            HalfType::BF16 => Type::bfloat16(context),
        }
    }

    /// How `tcc compile`'s flags and the artifact's metadata name it.
    pub fn name(self) -> &'static str {
        match self {
            HalfType::F16 => "fp16",
            HalfType::BF16 => "bf16",
        }
    }
}

#[derive(Debug, Default)]
pub struct NarrowStorageOptions {
    pub half: HalfType,
}

impl PassOptions for NarrowStorageOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[PassOptionInfo {
        name: "type",
        kind: PassOptionKind::String,
        default: "f16",
        description: "The 16-bit storage type: f16 (IEEE half) or bf16 (bfloat16)",
    }];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match (key, value) {
            ("type", "f16") => self.half = HalfType::F16,
            ("type", "bf16") => self.half = HalfType::BF16,
            ("type", other) => {
                return Err(format!("type must be f16 or bf16, not '{other}'"));
            }
            (other, _) => return Err(format!("unknown option '{other}'")),
        }
        Ok(())
    }
}

impl TccPass for NarrowStorage {
    const ARGUMENT: &'static str = "tcc-narrow-storage";
    const SUMMARY: &'static str = "Store weights and intermediate activations as fp16 or bf16 (kernels still compute in f32): mark buffers and kernel arguments tcc.storage = f16 or bf16; a kernel launched with both f32 and half buffers at one argument is specialized per storage (`NAME_sN`)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    type Options = NarrowStorageOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: pass::Root<'c>,
        options: &NarrowStorageOptions,
    ) -> PassResult<'c> {
        let kernels = kernel_functions(module);
        let narrowable: HashMap<String, Vec<bool>> = kernels
            .iter()
            .map(|(name, kernel)| (name.clone(), narrowable_arguments(*kernel)))
            .collect();
        let globals = constant_globals(module);
        let plan = Plan::build(module, &kernels, &narrowable, &globals)?;
        plan.apply(context, options.half, &kernels, &globals)
    }
}

/// The `gpu.func`s of the kernel module, by name.
fn kernel_functions<'c>(module: OperationRef<'c, 'c>) -> HashMap<String, OperationRef<'c, 'c>> {
    let mut kernels = HashMap::new();
    for kernel_module in body_ops_named(module, "gpu.module") {
        if symbol_name(kernel_module).as_deref() != Some(KERNEL_MODULE) {
            continue;
        }
        for kernel in body_ops_named(kernel_module, "gpu.func") {
            if let Some(name) = symbol_name(kernel) {
                kernels.insert(name, kernel);
            }
        }
    }
    kernels
}

/// The constant f32 `memref.global`s, by symbol.
fn constant_globals<'c>(module: OperationRef<'c, 'c>) -> HashMap<String, OperationRef<'c, 'c>> {
    body_ops_named(module, "memref.global")
        .into_iter()
        .filter(|global| global.attribute("constant").is_ok())
        .filter(|global| {
            global
                .attribute("type")
                .ok()
                .and_then(|a| TypeAttribute::try_from(a).ok())
                .is_some_and(|t| is_f32_memref(t.value()))
        })
        .filter_map(|global| Some((symbol_name(global)?, global)))
        .collect()
}

fn symbol_name(op: OperationRef) -> Option<String> {
    op.attribute("sym_name").ok().and_then(string_value)
}

fn is_f32_memref(ty: Type) -> bool {
    ty.is_mem_ref()
        && unsafe { Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw())) }.is_f32()
}

/// For each argument of a kernel, whether it may be stored as half: an f32
/// memref that a loop kernel never both loads and stores, and not a split-K
/// workspace or counter.
fn narrowable_arguments(kernel: OperationRef) -> Vec<bool> {
    let Some(block) = kernel.region(0).ok().and_then(|r| r.first_block()) else {
        return Vec::new();
    };
    let count = block.argument_count();
    let kernel_strategy = strategy::of(&kernel);
    // tcc-attach-split-k-scratch appends the workspace and the counters
    // after the kernel's own buffers, and tcc-attach-tensor-map-slots the
    // slots after those; host indices (a symbolic extent's) may follow
    // them all, so the scratch is found among the buffers, from the last.
    let slots = usize::from(
        kernel
            .attribute(crate::ir::attr_names::TENSOR_MAP_SLOTS)
            .is_ok(),
    );
    let scratch = match kernel_strategy {
        Some(KernelStrategy::Gemm { config, .. }) if config.split_k > 1 => 2,
        _ => 0,
    };
    let buffers: Vec<usize> = (0..count)
        .filter(|&index| {
            block
                .argument(index)
                .is_ok_and(|argument| Value::from(argument).r#type().is_mem_ref())
        })
        .collect();
    let appended = &buffers[buffers.len().saturating_sub(scratch + slots)..];
    let loops = !kernel_strategy.is_some_and(|s| s.is_template());
    let row_reduce = matches!(kernel_strategy, Some(KernelStrategy::RowReduce { .. }));
    (0..count)
        .map(|index| {
            let Ok(argument) = block.argument(index) else {
                return false;
            };
            let value: Value = argument.into();
            if appended.contains(&index) || !is_f32_memref(value.r#type()) {
                return false;
            }
            let access = Access::of(value);
            access.understood
                && !(loops && access.loaded && access.stored)
                && !(row_reduce && access.stored)
        })
        .collect()
}

/// How a kernel uses one buffer argument (through its views).
#[derive(Default)]
struct Access {
    loaded: bool,
    stored: bool,
    /// Every use is a load, a store, a view or an operand of a linalg or
    /// tcc op (a template kernel's root, which its writer reads).
    understood: bool,
}

impl Access {
    fn of(value: Value) -> Self {
        let mut access = Access {
            understood: true,
            ..Access::default()
        };
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            for user in users(value) {
                let name = op_name(&user);
                match name.as_str() {
                    "memref.load" => access.loaded = true,
                    "memref.store" => {
                        // Storing the buffer itself as a value is not
                        // something half storage can mean.
                        let stores_into = user.operand(1).is_ok_and(|target| target == value);
                        access.stored = true;
                        access.understood &= stores_into;
                    }
                    view if VIEW_OPS.contains(&view) => {
                        if let Ok(result) = user.result(0) {
                            pending.push(result.into());
                        }
                    }
                    // A template kernel's root op (a linalg op, or tcc's
                    // row ops): its writer reads and writes the buffer
                    // through the storage-aware accessors.
                    other if other.starts_with("linalg.") || other.starts_with("tcc.") => {}
                    _ => access.understood = false,
                }
            }
        }
        access
    }
}

/// Where a host buffer comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Root {
    /// A constant `memref.global`, by symbol (all its `get_global`s).
    Global(String),
    /// An intermediate `memref.alloc`, by the op's address.
    Alloc(usize),
}

/// Which buffers the pass narrows.
struct Plan<'c> {
    narrowed: HashSet<Root>,
    allocs: HashMap<usize, OperationRef<'c, 'c>>,
    /// Kernel arguments to mark: `(kernel, argument index)`.
    arguments: HashSet<(String, usize)>,
    /// Launches to point at a specialized copy of their kernel:
    /// `(launch, original kernel, copy's name)`.
    specialized: Vec<(OperationRef<'c, 'c>, String, String)>,
}

/// One launch: its kernel and, for each f32 buffer argument, what reaches it.
struct Launch<'c> {
    op: OperationRef<'c, 'c>,
    kernel: String,
    reaching: Vec<(usize, Option<Root>)>,
}

impl<'c> Plan<'c> {
    fn build(
        module: OperationRef<'c, 'c>,
        kernels: &HashMap<String, OperationRef<'c, 'c>>,
        narrowable: &HashMap<String, Vec<bool>>,
        globals: &HashMap<String, OperationRef<'c, 'c>>,
    ) -> Result<Self, PassError<'c>> {
        let mut candidates: HashSet<Root> = HashSet::new();
        let mut vetoed: HashSet<Root> = HashSet::new();
        let mut allocs = HashMap::new();
        // What reaches each launch's kernel arguments: a root, or `None` for
        // a buffer that must stay f32 (a function argument, an unknown value).
        let mut launches: Vec<Launch<'c>> = Vec::new();
        for function in body_ops_named(module, "func.func") {
            let mut roots: HashMap<usize, Root> = HashMap::new();
            for op in collect_ops(function) {
                let name = op_name(&op);
                let result_key = || op.result(0).ok().map(|r| value_key(r.into()));
                match name.as_str() {
                    "memref.alloc" if op.operand_count() == 0 => {
                        let Ok(result) = op.result(0) else { continue };
                        if is_f32_memref(Value::from(result).r#type()) {
                            let root = Root::Alloc(op_key(op));
                            allocs.insert(op_key(op), op);
                            candidates.insert(root.clone());
                            roots.insert(value_key(result.into()), root);
                        }
                    }
                    "memref.get_global" => {
                        let symbol = op.attribute("name").ok().and_then(leaf_symbol);
                        if let (Some(symbol), Some(key)) = (symbol, result_key())
                            && globals.contains_key(&symbol)
                        {
                            let root = Root::Global(symbol);
                            candidates.insert(root.clone());
                            roots.insert(key, root);
                        }
                    }
                    view if VIEW_OPS.contains(&view) => {
                        let source = op.operand(0).ok().map(value_key);
                        if let (Some(source), Some(key)) = (source, result_key())
                            && let Some(root) = roots.get(&source).cloned()
                        {
                            roots.insert(key, root);
                        }
                    }
                    "gpu.launch_func" => {
                        let Some(kernel) = op.attribute("kernel").ok().and_then(leaf_symbol) else {
                            continue;
                        };
                        let Some(kernel_op) = kernels.get(&kernel) else {
                            continue;
                        };
                        let arity = kernel_arity(*kernel_op);
                        let first = kernel_operands_start(op, arity).ok_or_else(|| {
                            PassError::at(
                                op.location(),
                                format!("launch of @{kernel} does not pass its {arity} arguments"),
                            )
                        })?;
                        let mut reaching = Vec::new();
                        for index in 0..arity {
                            let Ok(operand) = op.operand(first + index) else {
                                continue;
                            };
                            if !is_f32_memref(operand.r#type()) {
                                continue;
                            }
                            let root = roots.get(&value_key(operand)).cloned();
                            if let Some(root) = &root
                                && !narrowable.get(&kernel).is_some_and(|n| n[index])
                            {
                                vetoed.insert(root.clone());
                            }
                            reaching.push((index, root));
                        }
                        launches.push(Launch {
                            op,
                            kernel,
                            reaching,
                        });
                    }
                    _ => {}
                }
                // Any other host use of a tracked buffer keeps it f32.
                if !matches!(
                    name.as_str(),
                    "gpu.launch_func" | "memref.dealloc" | "memref.get_global" | "memref.alloc"
                ) && !VIEW_OPS.contains(&name.as_str())
                {
                    for index in 0..op.operand_count() {
                        if let Ok(operand) = op.operand(index)
                            && let Some(root) = roots.get(&value_key(operand))
                        {
                            vetoed.insert(root.clone());
                        }
                    }
                }
            }
        }
        let narrowed: HashSet<Root> = candidates.difference(&vetoed).cloned().collect();
        // Each launch's storage signature: the arguments it passes narrowed
        // buffers to. A kernel's first signature (in launch order) keeps
        // the kernel; each further one gets a specialized copy.
        let mut signatures: HashMap<String, Vec<Vec<usize>>> = HashMap::new();
        let mut arguments = HashSet::new();
        let mut specialized = Vec::new();
        let mut taken: HashSet<String> = kernels.keys().cloned().collect();
        let mut names: HashMap<(String, Vec<usize>), String> = HashMap::new();
        for launch in &launches {
            let signature: Vec<usize> = launch
                .reaching
                .iter()
                .filter(|(_, root)| root.as_ref().is_some_and(|r| narrowed.contains(r)))
                .map(|(index, _)| *index)
                .collect();
            let seen = signatures.entry(launch.kernel.clone()).or_default();
            let name = if seen.is_empty() || seen[0] == signature {
                if seen.is_empty() {
                    seen.push(signature.clone());
                }
                launch.kernel.clone()
            } else {
                let key = (launch.kernel.clone(), signature.clone());
                if !names.contains_key(&key) {
                    let mut n = seen.len();
                    let mut candidate = format!("{}_s{n}", launch.kernel);
                    while taken.contains(&candidate) {
                        n += 1;
                        candidate = format!("{}_s{n}", launch.kernel);
                    }
                    taken.insert(candidate.clone());
                    seen.push(signature.clone());
                    names.insert(key.clone(), candidate);
                }
                let name = names[&key].clone();
                specialized.push((launch.op, launch.kernel.clone(), name.clone()));
                name
            };
            for index in signature {
                arguments.insert((name.clone(), index));
            }
        }
        Ok(Self {
            narrowed,
            allocs,
            arguments,
            specialized,
        })
    }

    fn apply(
        &self,
        context: &'c melior::Context,
        half: HalfType,
        kernels: &HashMap<String, OperationRef<'c, 'c>>,
        globals: &HashMap<String, OperationRef<'c, 'c>>,
    ) -> Result<(), PassError<'c>> {
        let f16: Attribute = TypeAttribute::new(half.mlir_type(context)).into();
        for root in &self.narrowed {
            let op = match root {
                Root::Global(symbol) => globals.get(symbol),
                Root::Alloc(key) => self.allocs.get(key),
            };
            if let Some(op) = op {
                crate::ir::util::set_discardable_attribute(*op, STORAGE_ATTR, f16);
            }
        }
        // The specialized copies, each inserted after its kernel, and the
        // launches pointed at them.
        let mut copies: HashMap<String, OperationRef<'c, 'c>> = HashMap::new();
        for (launch, kernel, name) in &self.specialized {
            let Some(original) = kernels.get(kernel) else {
                continue;
            };
            if !copies.contains_key(name) {
                let Some(block) = original.block() else {
                    continue;
                };
                let copy = unsafe {
                    melior::ir::Operation::from_raw(mlir_sys::mlirOperationClone(original.to_raw()))
                };
                let copy = block.insert_operation_after(*original, copy);
                unsafe { OperationRefMut::from_raw(copy.to_raw()) }.set_attribute(
                    "sym_name",
                    melior::ir::attribute::StringAttribute::new(context, name).into(),
                );
                copies.insert(name.clone(), copy);
            }
            let module_name = launch
                .attribute("kernel")
                .ok()
                .and_then(crate::ir::util::symbol_names)
                .map_or_else(|| KERNEL_MODULE.to_string(), |(root, _)| root);
            let reference = Attribute::parse(context, &format!("@{module_name}::@{name}"))
                .ok_or_else(|| {
                    PassError::at(launch.location(), format!("cannot name kernel @{name}"))
                })?;
            unsafe { OperationRefMut::from_raw(launch.to_raw()) }
                .set_attribute("kernel", reference);
        }
        for (kernel, index) in &self.arguments {
            if let Some(kernel) = kernels.get(kernel).or_else(|| copies.get(kernel)) {
                crate::ir::util::set_argument_attribute(
                    context,
                    *kernel,
                    *index,
                    STORAGE_ATTR,
                    f16,
                );
            }
        }
        Ok(())
    }
}

fn value_key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

fn op_key(op: OperationRef) -> usize {
    op.to_raw().ptr as usize
}

/// The leaf of a symbol reference (`@name` gives `name`, and
/// `@module::@name` too).
fn leaf_symbol(attribute: Attribute) -> Option<String> {
    crate::ir::util::symbol_names(attribute).map(|(_, leaf)| leaf)
}

fn kernel_arity(kernel: OperationRef) -> usize {
    kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .map_or(0, |b| b.argument_count())
}

/// The index of a `gpu.launch_func`'s first kernel operand: its kernel
/// operands are the segment before the (optional) async object, the last.
fn kernel_operands_start(launch: OperationRef, arity: usize) -> Option<usize> {
    let segments = crate::ir::dense::operand_segment_sizes(launch)?;
    let (&async_object, rest) = segments.split_last()?;
    let &kernel_operands = rest.last()?;
    if usize::try_from(kernel_operands).ok()? != arity {
        return None;
    }
    launch
        .operand_count()
        .checked_sub(usize::try_from(async_object).ok()?)?
        .checked_sub(arity)
}

/// The 16-bit type the module stores constants or kernels' buffers as,
/// if any (what the artifact's metadata reports).
pub fn half_storage(module: OperationRef) -> Option<HalfType> {
    let kind = |ty: Type| {
        if ty.is_bf16() {
            HalfType::BF16
        } else {
            HalfType::F16
        }
    };
    body_ops_named(module, "memref.global")
        .iter()
        .find_map(|global| op_storage(global).map(kind))
        .or_else(|| {
            crate::ir::util::ops_named(module, "gpu.func")
                .iter()
                .find_map(|kernel| {
                    (0..kernel_arity(*kernel)).find_map(|i| argument_storage(*kernel, i).map(kind))
                })
        })
}

/// Whether the module stores a constant or a kernel's buffer as half.
pub fn uses_half_storage(module: OperationRef) -> bool {
    half_storage(module).is_some()
}
