//! The tcc dialect and the registration of every dialect and pass.
//!
//! The dialect is defined in ODS (`td/TccOps.td`) with hand-written C++
//! verifiers (`cpp/TccDialect.cpp`); `cpp/TccCAPI.cpp` adds the C entry
//! points that MLIR's C API lacks. This crate wraps them for Rust:
//! [`register_all_dialects`], [`register_all_passes`],
//! [`register_rust_pass`], [`register_pass_pipeline`] and [`opt_main`];
//! [`strategy`] reads and writes the typed kernel strategy
//! (`td/TccAttrs.td`), [`target`] the target attribute (`#tcc.target`)
//! and [`conv`] the convolution op (`tcc.conv`) and its typed window
//! (`td/TccConv.td`, `cpp/TccConv.cpp`); [`dims`]
//! the symbolic dimensions of a module and their ranges (`#tcc.dims`).

pub mod conv;
pub mod dims;
pub mod strategy;
pub mod target;

use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::Mutex;

use mlir_sys::MlirDialectRegistry;
pub use mlir_sys::{MlirLogicalResult, MlirOperation, MlirStringCallback, MlirStringRef};

/// Checks a pass option string; on failure reports through the callback.
pub type CheckOptionsFn = unsafe extern "C" fn(
    pass: *const c_void,
    options: MlirStringRef,
    error: MlirStringCallback,
    error_user_data: *mut c_void,
) -> MlirLogicalResult;

/// Runs a pass on an operation with its option string.
pub type RunFn = unsafe extern "C" fn(
    pass: *const c_void,
    options: MlirStringRef,
    op: MlirOperation,
) -> MlirLogicalResult;

/// Receives one `key`/`value` pair of a split option string.
pub type OptionPairFn =
    unsafe extern "C" fn(key: MlirStringRef, value: MlirStringRef, user_data: *mut c_void);

/// Splits an option string into its pairs, calling `pair` for each.
pub type SplitOptionsFn = unsafe extern "C" fn(
    options: MlirStringRef,
    pair: OptionPairFn,
    user_data: *mut c_void,
) -> MlirLogicalResult;

#[repr(C)]
struct TccRustPassInfo {
    argument: *const c_char,
    summary: *const c_char,
    anchor: *const c_char,
    dependent_dialects: *const c_char,
    options: *const c_char,
    pass: *const c_void,
    check_options: CheckOptionsFn,
    run: RunFn,
    split_options: SplitOptionsFn,
}

/// The kind of value a pass option takes, as `--help` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassOptionKind {
    Bool,
    Int,
    String,
}

/// One option of a Rust pass, for `--help` and for printing pipelines.
#[derive(Clone, Copy, Debug)]
pub struct PassOptionInfo {
    pub name: &'static str,
    pub kind: PassOptionKind,
    /// The value the pass uses when the option is absent, written as the
    /// option string would write it (`""` for an unset optional value).
    pub default: &'static str,
    pub description: &'static str,
}

unsafe extern "C" {
    fn tccRegisterAllDialects(registry: MlirDialectRegistry);
    fn tccRegisterAllPasses();
    fn tccRegisterRustPass(info: *const TccRustPassInfo) -> bool;
    fn tccRegisterPassPipeline(
        argument: *const c_char,
        summary: *const c_char,
        pipeline: *const c_char,
    );
    fn tccOptMain(argc: c_int, argv: *mut *mut c_char, version: *const c_char) -> c_int;
    fn tccLinalgHoistParallelDims(op: MlirOperation) -> c_int;
    fn tccParseModule(
        context: mlir_sys::MlirContext,
        source: MlirStringRef,
        name: MlirStringRef,
    ) -> mlir_sys::MlirModule;
    fn tccLinalgLowerToParallelLoops(op: MlirOperation) -> bool;
    fn tccLinalgGeneralize(op: MlirOperation) -> bool;
    fn tccLinalgCollapseContraction(op: MlirOperation) -> c_int;
    fn tccSimplifyMath(root: MlirOperation) -> bool;
    fn tccLowerMathForShader(root: MlirOperation) -> bool;
    fn tccFuseElementwise(
        root: MlirOperation,
        max_ops: i64,
        recompute_broadcast_math: bool,
    ) -> bool;
    fn tccBuildLaunchFunc(
        before: MlirOperation,
        kernel: MlirOperation,
        grid: *const i64,
        block: *const i64,
        num_operands: isize,
        operands: *const mlir_sys::MlirValue,
        location: mlir_sys::MlirLocation,
    ) -> MlirOperation;
    fn tccLaunchFuncAppendKernelOperands(
        launch: MlirOperation,
        num_operands: isize,
        operands: *const mlir_sys::MlirValue,
    ) -> bool;
    fn tccDedupeKernels(root: MlirOperation) -> i64;
    fn tccDenseResourceBlob(
        attr: mlir_sys::MlirAttribute,
        data: *mut *const c_void,
        size: *mut usize,
    ) -> bool;
    fn tccInstallOutOfMemoryHandlers();
    fn tccDenseResourceKey(
        attr: mlir_sys::MlirAttribute,
        key: *mut mlir_sys::MlirStringRef,
    ) -> bool;
    fn tccDenseResourceSetBlob(
        attr: mlir_sys::MlirAttribute,
        data: *const c_void,
        size: usize,
        align: usize,
        deleter: Option<unsafe extern "C" fn(*mut c_void)>,
        user_data: *mut c_void,
    ) -> bool;
    fn tccDenseResourceReshape(
        attr: mlir_sys::MlirAttribute,
        ty: mlir_sys::MlirType,
    ) -> mlir_sys::MlirAttribute;
    fn tccTosaShapeTypeGet(context: mlir_sys::MlirContext, rank: isize) -> mlir_sys::MlirType;
    fn tccLinalgIteratorTypeGet(
        context: mlir_sys::MlirContext,
        reduction: bool,
    ) -> mlir_sys::MlirAttribute;
}

/// TOSA's `!tosa.shape<rank>` (the type of `tosa.const_shape`), which the
/// C API cannot build.
pub fn tosa_shape_type(context: &melior::Context, rank: usize) -> melior::ir::Type<'_> {
    let rank = isize::try_from(rank).unwrap_or(isize::MAX);
    // SAFETY: the context is live; the type belongs to it.
    unsafe { melior::ir::Type::from_raw(tccTosaShapeTypeGet(context.to_raw(), rank)) }
}

/// `#linalg.iterator_type<reduction>` (or `<parallel>`), an entry of a
/// `linalg.generic`'s `iterator_types`, which the C API cannot build.
pub fn linalg_iterator_type(
    context: &melior::Context,
    reduction: bool,
) -> melior::ir::Attribute<'_> {
    // SAFETY: the context is live; the attribute belongs to it.
    unsafe {
        melior::ir::Attribute::from_raw(tccLinalgIteratorTypeGet(context.to_raw(), reduction))
    }
}

/// The key of the resource a `dense_resource` attribute names, as the
/// context holds it (`None` for other attributes).
///
/// # Safety
/// `attr` must be a valid attribute.
pub unsafe fn dense_resource_key(attr: mlir_sys::MlirAttribute) -> Option<String> {
    let mut key = mlir_sys::MlirStringRef {
        data: std::ptr::null(),
        length: 0,
    };
    if !unsafe { tccDenseResourceKey(attr, &mut key) } {
        return None;
    }
    if key.data.is_null() {
        return Some(String::new());
    }
    let bytes = unsafe { std::slice::from_raw_parts(key.data as *const u8, key.length) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

/// Gives the resource a `dense_resource` attribute names the bytes `data`
/// without copying them: `owner` keeps them alive and is dropped when the
/// context no longer needs them (when it is destroyed or the blob
/// replaced). Returns false (dropping `owner`) when `attr` is not a
/// `dense_resource` attribute.
///
/// # Safety
/// `attr` must be a valid attribute, and `data` must stay valid and
/// unchanged for as long as `owner` lives.
pub unsafe fn set_dense_resource_blob<T: Send + 'static>(
    attr: mlir_sys::MlirAttribute,
    data: &[u8],
    align: usize,
    owner: T,
) -> bool {
    unsafe extern "C" fn drop_owner<T>(user_data: *mut c_void) {
        drop(unsafe { Box::from_raw(user_data as *mut T) });
    }
    let user_data = Box::into_raw(Box::new(owner)) as *mut c_void;
    let set = unsafe {
        tccDenseResourceSetBlob(
            attr,
            data.as_ptr() as *const c_void,
            data.len(),
            align,
            Some(drop_owner::<T>),
            user_data,
        )
    };
    if !set {
        unsafe { drop_owner::<T>(user_data) };
    }
    set
}

/// The `dense_resource` attribute `attr` as the static shaped type `ty`
/// (same element type and count): the same resource, so its blob is
/// shared, not copied. `None` for other attributes or types that differ.
///
/// # Safety
/// `attr` and `ty` must be valid and of one context.
pub unsafe fn dense_resource_reshape(
    attr: mlir_sys::MlirAttribute,
    ty: mlir_sys::MlirType,
) -> Option<mlir_sys::MlirAttribute> {
    let reshaped = unsafe { tccDenseResourceReshape(attr, ty) };
    (!reshaped.ptr.is_null()).then_some(reshaped)
}

/// The bytes of a `dense_resource` attribute's blob (without MLIR's
/// alignment prefix), borrowed from the context that owns the attribute.
/// `None` when `attr` is not a `dense_resource` attribute or its key has no
/// blob in the resource section.
///
/// # Safety
/// `attr` must be a valid attribute, and the slice must not outlive its
/// context.
pub unsafe fn dense_resource_blob<'a>(attr: mlir_sys::MlirAttribute) -> Option<&'a [u8]> {
    let mut data: *const c_void = std::ptr::null();
    let mut size = 0usize;
    if !unsafe { tccDenseResourceBlob(attr, &mut data, &mut size) } {
        return None;
    }
    if size == 0 || data.is_null() {
        return Some(&[]);
    }
    Some(unsafe { std::slice::from_raw_parts(data as *const u8, size) })
}

/// Inserts a `gpu.launch_func` of `kernel` (a `gpu.func` inside a
/// `gpu.module`) before `before`: `grid` work-groups of `block` work-items
/// (index constants inserted there too), passing `operands`. Returns the
/// launch.
///
/// # Safety
/// `before` must be a live op in a block, `kernel` a live `gpu.func`
/// nested in a `gpu.module`, and the operands live values.
pub unsafe fn build_launch_func(
    before: MlirOperation,
    kernel: MlirOperation,
    grid: [i64; 3],
    block: [i64; 3],
    operands: &[mlir_sys::MlirValue],
    location: mlir_sys::MlirLocation,
) -> MlirOperation {
    unsafe {
        tccBuildLaunchFunc(
            before,
            kernel,
            grid.as_ptr(),
            block.as_ptr(),
            operands.len() as isize,
            operands.as_ptr(),
            location,
        )
    }
}

/// Adds `operands` to a `gpu.launch_func`'s kernel operands through the
/// op's typed accessor, which keeps its operand segments right, after its
/// buffers and before its `index` (scalar) operands, if any. Returns
/// false (and leaves the op) when `launch` is not a `gpu.launch_func`.
///
/// # Safety
/// `launch` must be a live op and the operands live values.
pub unsafe fn append_launch_kernel_operands(
    launch: MlirOperation,
    operands: &[mlir_sys::MlirValue],
) -> bool {
    unsafe { tccLaunchFuncAppendKernelOperands(launch, operands.len() as isize, operands.as_ptr()) }
}

/// Merges kernels that are equal but for their names: in every
/// `gpu.module` under `root`, a kernel equal to an earlier one (attributes,
/// signature and body, locations aside) is erased and its launches launch
/// the earlier one. Returns how many kernels were erased.
///
/// # Safety
/// `root` must be a live op that no one else is walking or editing.
pub unsafe fn dedupe_kernels(root: MlirOperation) -> i64 {
    unsafe { tccDedupeKernels(root) }
}

/// What [`hoist_parallel_dims`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hoisted {
    Changed,
    AlreadyOuter,
    NotPossible,
}

/// Moves a linalg op's parallel iteration dimensions before its reduction
/// dimensions (upstream `generalizeNamedOp` + `interchangeGenericOp`), so
/// that its loop nest is one parallel nest over every output dimension.
///
/// # Safety
/// `op` must be a live operation that no one else is mutating.
pub unsafe fn hoist_parallel_dims(op: MlirOperation) -> Hoisted {
    match unsafe { tccLinalgHoistParallelDims(op) } {
        1 => Hoisted::Changed,
        0 => Hoisted::AlreadyOuter,
        _ => Hoisted::NotPossible,
    }
}

/// Rewrites a named linalg op as the equivalent `linalg.generic`
/// (upstream `generalizeNamedOp`), keeping its discardable attributes;
/// false (the op untouched) for a generic or an op that cannot be.
///
/// # Safety
/// `op` must be a live operation that no one else is mutating; on success
/// it is erased and must not be used again.
pub unsafe fn generalize(op: MlirOperation) -> bool {
    unsafe { tccLinalgGeneralize(op) }
}

/// What [`collapse_contraction`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collapsed {
    /// The op was replaced (and must not be used again).
    Replaced,
    /// Not a contraction generic, or no reduction dimensions to merge.
    Unchanged,
    /// Upstream's collapse failed; the op is untouched.
    Failed,
}

/// Merges each run of consecutive reduction dimensions of a contraction
/// `linalg.generic` that every operand indexes contiguously and in order
/// into one (upstream `collapseOpIterationDims`), and rewrites the result
/// as the named op it is, where it is one (`specializeGenericOp`: a
/// `linalg.batch_matmul`).
///
/// # Safety
/// `op` must be a live operation that no one else is mutating; after
/// [`Collapsed::Replaced`] it is erased and must not be used again.
pub unsafe fn collapse_contraction(op: MlirOperation) -> Collapsed {
    match unsafe { tccLinalgCollapseContraction(op) } {
        1 => Collapsed::Replaced,
        0 => Collapsed::Unchanged,
        _ => Collapsed::Failed,
    }
}

/// Applies upstream's algebraic simplification of math ops (`powf` by a
/// constant exponent as multiplications, `sqrt`, `rsqrt`, ...) under
/// `root`; false if the rewrite did not converge.
///
/// # Safety
/// `root` must be a live operation that no one else is mutating.
pub unsafe fn simplify_math(root: MlirOperation) -> bool {
    unsafe { tccSimplifyMath(root) }
}

/// Rewrites under `root` what Vulkan's Shader SPIR-V has no exact
/// instruction for: f32 `math.erf` as the rational function of the OpenCL
/// C prelude's `tcc_erf` (GLSL.std.450 has no erf), and
/// `arith.minimumf`/`maximumf` as compares and selects that keep signed
/// zeros (GLSL's FMin/FMax leave them undefined), f32 `math.log` of a
/// subnormal through a scaling by 2^24; false if the rewrite did not
/// converge.
///
/// # Safety
/// `root` must be a live operation that no one else is mutating.
pub unsafe fn lower_math_for_shader(root: MlirOperation) -> bool {
    unsafe { tccLowerMathForShader(root) }
}

/// Upstream's elementwise fusion (the patterns of
/// `linalg-fuse-elementwise-ops`) under `root`, with two generics left
/// unfused when their fused body would hold more than `max_ops`
/// operations (0: no cap), and, without `recompute_broadcast_math`, a
/// producer of transcendental math left unfused where its consumer reads
/// it broadcast over many more iterations; false if the rewrite did not
/// converge.
///
/// # Safety
/// `root` must be a live operation that no one else is mutating.
pub unsafe fn fuse_elementwise(
    root: MlirOperation,
    max_ops: i64,
    recompute_broadcast_math: bool,
) -> bool {
    unsafe { tccFuseElementwise(root, max_ops, recompute_broadcast_math) }
}

/// Replaces a linalg op on buffers by its loop nest (upstream
/// `linalgOpToParallelLoops`); false if not possible.
///
/// # Safety
/// `op` must be a live operation that no one else is mutating; it is
/// destroyed on success.
pub unsafe fn lower_to_parallel_loops(op: MlirOperation) -> bool {
    unsafe { tccLinalgLowerToParallelLoops(op) }
}

/// The ops of the tcc dialect (kept in step with `td/TccOps.td`).
pub const TCC_OPS: &[&str] = &[
    "tcc.gelu",
    "tcc.layer_norm",
    "tcc.log_softmax",
    "tcc.silu",
    "tcc.softmax",
];

/// Adds every upstream dialect and extension, the LLVM IR translations and the
/// tcc dialect to `registry`.
pub fn register_all_dialects(registry: &melior::dialect::DialectRegistry) {
    unsafe { tccRegisterAllDialects(registry.to_raw()) }
}

/// Registers every upstream pass. Idempotent (MLIR's own registration
/// double-frees when called twice; this guards it).
pub fn register_all_passes() {
    unsafe { tccRegisterAllPasses() }
}

/// A pass implemented in Rust, registered under `argument` in MLIR's pass
/// registry so that textual pipelines and `tcc-opt --ARGUMENT` reach it.
pub struct RustPassRegistration {
    pub argument: &'static str,
    pub summary: &'static str,
    /// Operation the pass is anchored on (`None`: any operation).
    pub anchor: Option<&'static str>,
    /// Dialects whose ops the pass creates (loaded before it runs).
    pub dependent_dialects: &'static [&'static str],
    /// The options the pass reads.
    pub options: &'static [PassOptionInfo],
    /// Opaque `'static` pointer handed back to the callbacks.
    pub pass: *const c_void,
    pub check_options: CheckOptionsFn,
    pub run: RunFn,
    pub split_options: SplitOptionsFn,
}

static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn c_string(text: &str) -> CString {
    CString::new(text).expect("registration strings contain no NUL")
}

/// Registers a Rust pass. Registering the same argument twice is a no-op, so
/// that tools and tests may call their registration functions freely.
pub fn register_rust_pass(registration: &RustPassRegistration) {
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if registered.iter().any(|a| a == registration.argument) {
        return;
    }
    let argument = c_string(registration.argument);
    let summary = c_string(registration.summary);
    let anchor = registration.anchor.map(c_string);
    let dialects = c_string(&registration.dependent_dialects.join(","));
    let options = c_string(
        &registration
            .options
            .iter()
            .map(|o| {
                let kind = match o.kind {
                    PassOptionKind::Bool => "bool",
                    PassOptionKind::Int => "int",
                    PassOptionKind::String => "string",
                };
                format!("{}\t{kind}\t{}\t{}\n", o.name, o.default, o.description)
            })
            .collect::<String>(),
    );
    let info = TccRustPassInfo {
        argument: argument.as_ptr(),
        summary: summary.as_ptr(),
        anchor: anchor.as_ref().map_or(std::ptr::null(), |a| a.as_ptr()),
        dependent_dialects: dialects.as_ptr(),
        options: options.as_ptr(),
        pass: registration.pass,
        check_options: registration.check_options,
        run: registration.run,
        split_options: registration.split_options,
    };
    // The C++ side copies the strings.
    let known = unsafe { tccRegisterRustPass(&info) };
    assert!(
        known,
        "pass {} names an unknown dependent dialect",
        registration.argument
    );
    registered.push(registration.argument.to_string());
}

/// Registers a named pipeline: `NAME` in textual pipelines and `--NAME` in
/// tcc-opt expand to `pipeline`. Registering a name twice is a no-op.
pub fn register_pass_pipeline(argument: &str, summary: &str, pipeline: &str) {
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if registered.iter().any(|a| a == argument) {
        return;
    }
    let (a, s, p) = (c_string(argument), c_string(summary), c_string(pipeline));
    unsafe { tccRegisterPassPipeline(a.as_ptr(), s.as_ptr(), p.as_ptr()) };
    registered.push(argument.to_string());
}

/// Runs the mlir-opt driver over `args` (including the program name) with
/// every dialect and every registered pass; returns the exit code.
pub fn opt_main(args: impl IntoIterator<Item = String>) -> i32 {
    opt_main_with_version(args, "")
}

/// As [`opt_main`]; `--version` prints `tcc-opt VERSION` and LLVM's version.
pub fn opt_main_with_version(args: impl IntoIterator<Item = String>, version: &str) -> i32 {
    let version = CString::new(version).unwrap_or_default();
    let owned: Vec<CString> = args
        .into_iter()
        .map(|a| CString::new(a).unwrap_or_else(|_| c_string("<argument with NUL>")))
        .collect();
    let mut argv: Vec<*mut c_char> = owned.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    argv.push(std::ptr::null_mut());
    unsafe { tccOptMain(owned.len() as c_int, argv.as_mut_ptr(), version.as_ptr()) }
}

/// Parses MLIR text into a module, with `name` as the file name in
/// locations; top-level ops other than a module are wrapped in an implicit
/// module (as mlir-opt does). `None` after emitting diagnostics on failure.
pub fn parse_module<'c>(
    context: &'c melior::Context,
    source: &str,
    name: &str,
) -> Option<melior::ir::Module<'c>> {
    let source_ref = MlirStringRef {
        data: source.as_ptr() as *const c_char,
        length: source.len(),
    };
    let name_ref = MlirStringRef {
        data: name.as_ptr() as *const c_char,
        length: name.len(),
    };
    let raw = unsafe { tccParseModule(context.to_raw(), source_ref, name_ref) };
    if raw.ptr.is_null() {
        None
    } else {
        Some(unsafe { melior::ir::Module::from_raw(raw) })
    }
}

/// A melior context with every dialect registered and loaded lazily.
/// Installs the out-of-memory handlers first: a failed MLIR or LLVM
/// allocation is then an error line and exit 1, not an abort.
pub fn new_context() -> melior::Context {
    // SAFETY: installs process-wide handlers once; no preconditions.
    unsafe { tccInstallOutOfMemoryHandlers() };
    let registry = melior::dialect::DialectRegistry::new();
    register_all_dialects(&registry);
    let context = melior::Context::new();
    context.append_dialect_registry(&registry);
    context
}
