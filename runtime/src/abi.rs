//! `#[repr(C)]` mirror of `runtime/include/tcc_abi.h`, the fixed contract
//! between a compiled model artifact (`model.so`) and this runtime.
//!
//! The layout is declared once, in the `tcc-abi` crate's table; the numbers
//! below come from there. Every type here has the exact layout of its C
//! counterpart: checked against the table by the unit test below, and
//! against the C compiler's own `offsetof` by the `abi_layout` integration
//! test (the C header itself is checked against the table in `tcc-abi`). Nothing in this module
//! is safe to dereference on its own: `artifact.rs` validates the artifact's
//! tables and `session/callbacks.rs` implements the callback table.

use std::ffi::{c_char, c_void};

/// `TCC_ABI_VERSION`: the ABI version this runtime implements.
pub const TCC_ABI_VERSION: u32 = tcc_abi::ABI_VERSION;
/// `TCC_ABI_VERSION_MIN`: the oldest artifact ABI this runtime still loads
/// (older artifacts, without launch records, are refused: rebuild them).
pub const TCC_ABI_VERSION_MIN: u32 = tcc_abi::ABI_VERSION_MIN;

/// `enum tcc_dtype`.
pub const TCC_DTYPE_F32: u32 = tcc_abi::DTYPE_F32;
pub const TCC_DTYPE_F16: u32 = tcc_abi::DTYPE_F16;
pub const TCC_DTYPE_I32: u32 = tcc_abi::DTYPE_I32;
pub const TCC_DTYPE_I64: u32 = tcc_abi::DTYPE_I64;
pub const TCC_DTYPE_I8: u32 = tcc_abi::DTYPE_I8;
pub const TCC_DTYPE_BOOL: u32 = tcc_abi::DTYPE_BOOL;
pub const TCC_DTYPE_BF16: u32 = tcc_abi::DTYPE_BF16;
pub const TCC_DTYPE_F64: u32 = tcc_abi::DTYPE_F64;
pub const TCC_DTYPE_I16: u32 = tcc_abi::DTYPE_I16;
pub const TCC_DTYPE_U8: u32 = tcc_abi::DTYPE_U8;
pub const TCC_DTYPE_U16: u32 = tcc_abi::DTYPE_U16;
pub const TCC_DTYPE_U32: u32 = tcc_abi::DTYPE_U32;
pub const TCC_DTYPE_U64: u32 = tcc_abi::DTYPE_U64;
pub const TCC_DTYPE_F8E4M3FN: u32 = tcc_abi::DTYPE_F8E4M3FN;
pub const TCC_DTYPE_F8E4M3FNUZ: u32 = tcc_abi::DTYPE_F8E4M3FNUZ;
pub const TCC_DTYPE_F8E5M2: u32 = tcc_abi::DTYPE_F8E5M2;
pub const TCC_DTYPE_F8E5M2FNUZ: u32 = tcc_abi::DTYPE_F8E5M2FNUZ;
pub const TCC_DTYPE_F4E2M1: u32 = tcc_abi::DTYPE_F4E2M1;

/// `enum tcc_source_kind`.
pub const TCC_SOURCE_OPENCL_C: u32 = tcc_abi::SOURCE_OPENCL_C;
pub const TCC_SOURCE_SPIRV: u32 = tcc_abi::SOURCE_SPIRV;
pub const TCC_SOURCE_PTX: u32 = tcc_abi::SOURCE_PTX;

/// `enum tcc_arg_kind`.
pub const TCC_ARG_BUFFER: u32 = tcc_abi::ARG_BUFFER;
pub const TCC_ARG_I32: u32 = tcc_abi::ARG_I32;
pub const TCC_ARG_I64: u32 = tcc_abi::ARG_I64;
pub const TCC_ARG_F32: u32 = tcc_abi::ARG_F32;

/// `tcc_buffer`: opaque to the artifact. The runtime hands out the OpenCL
/// `cl_mem` handle itself as the `tcc_buffer *` and checks every pointer it
/// gets back against the buffers it handed out.
#[repr(C)]
pub struct TccBuffer {
    _opaque: [u8; 0],
}

/// The anonymous union inside `tcc_arg`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union TccArgValue {
    pub buffer: *mut TccBuffer,
    pub i32: i32,
    pub i64: i64,
    pub f32: f32,
}

/// `tcc_arg`: one kernel argument (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TccArg {
    pub kind: u32,
    pub reserved: u32,
    pub value: TccArgValue,
}

/// Calls the macro `$then` with every callback of `tcc_runtime_api` after
/// `ctx`, in table order, as `/// doc name: FnType(parameters) -> status;`
/// (`ctx: *mut c_void` comes first in each): the one list that the
/// function-pointer types below and the runtime's C entry points
/// (`session/callbacks.rs`) are written from.
macro_rules! runtime_callbacks {
    ($then:ident) => {
        $then! {
            /// Allocates a temporary of `bytes` bytes into `*out`.
            alloc: AllocFn(bytes: u64, out: *mut *mut TccBuffer) -> i32;
            /// Gives a temporary back.
            release: ReleaseFn(buffer: *mut TccBuffer);
            /// The session's buffer of constant `index` into `*out`.
            constant: ConstantFn(index: u32, out: *mut *mut TccBuffer) -> i32;
            /// Enqueues kernel `kernel` over `dims` dimensions.
            launch: LaunchFn(kernel: u32, dims: u32, global: *const u64, local: *const u64,
                             num_args: u32, args: *const TccArg) -> i32;
            /// Copies `bytes` bytes between buffers.
            copy: CopyFn(dst: *mut TccBuffer, dst_offset: u64, src: *mut TccBuffer,
                         src_offset: u64, bytes: u64) -> i32;
            /// A view of `bytes` bytes at `offset` of the function's arena into `*out`.
            view: ViewFn(offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> i32;
        }
    };
}
pub(crate) use runtime_callbacks;

/// The callbacks' function-pointer types.
macro_rules! callback_types {
    ($($(#[$doc:meta])* $field:ident: $type:ident($($arg:ident: $ty:ty),*) $(-> $status:ty)?;)*) => {
        $($(#[$doc])* pub type $type = unsafe extern "C" fn(ctx: *mut c_void, $($arg: $ty),*) $(-> $status)?;)*
    };
}
runtime_callbacks!(callback_types);

/// `tcc_runtime_api`: what the runtime offers the artifact's host code.
#[repr(C)]
pub struct TccRuntimeApi {
    pub abi_version: u32,
    pub reserved: u32,
    pub ctx: *mut c_void,
    pub alloc: Option<AllocFn>,
    pub release: Option<ReleaseFn>,
    pub constant: Option<ConstantFn>,
    pub launch: Option<LaunchFn>,
    pub copy: Option<CopyFn>,
    pub view: Option<ViewFn>,
    /// (ABI 4) The call's shapes: every input's extents, then every
    /// output's; what a function on a symbolic dimension reads them from.
    pub shapes: *const i64,
}

/// `tcc_tensor_desc`.
#[repr(C)]
pub struct TccTensorDesc {
    pub name: *const c_char,
    pub dtype: u32,
    pub rank: u32,
    pub shape: *const i64,
}

/// `tcc_entry_fn`.
pub type TccEntryFn = unsafe extern "C" fn(
    rt: *const TccRuntimeApi,
    inputs: *const *mut TccBuffer,
    outputs: *const *mut TccBuffer,
) -> i32;

/// `tcc_function_desc_v1`: the function descriptor of ABI version 1.
#[repr(C)]
pub struct TccFunctionDescV1 {
    pub name: *const c_char,
    pub entry: Option<TccEntryFn>,
    pub num_inputs: u32,
    pub num_outputs: u32,
    pub inputs: *const TccTensorDesc,
    pub outputs: *const TccTensorDesc,
}

/// `tcc_function_desc`: version 1's fields, then the arena's.
#[repr(C)]
pub struct TccFunctionDesc {
    pub v1: TccFunctionDescV1,
    pub arena_bytes: u64,
    pub arena_alignment: u64,
}

/// `tcc_kernel_arg`: one argument of a launch record.
#[repr(C)]
pub struct TccKernelArg {
    pub kind: u32,
    pub dtype: u32,
    pub elements: u64,
    pub flags: u32,
    pub reserved: u32,
}

/// `tcc_kernel_desc`: one kernel's launch record.
#[repr(C)]
pub struct TccKernelDesc {
    pub name: *const c_char,
    pub flops: u64,
    pub workgroup_x: u32,
    pub workgroup_y: u32,
    pub workgroup_z: u32,
    pub dynamic_local_bytes: u32,
    pub num_args: u32,
    pub reserved: u32,
    pub args: *const TccKernelArg,
}

/// `tcc_constant_desc`.
#[repr(C)]
pub struct TccConstantDesc {
    pub data: *const c_void,
    pub bytes: u64,
}

/// `tcc_artifact`.
#[repr(C)]
pub struct TccArtifact {
    pub abi_version: u32,
    pub source_kind: u32,
    pub source: *const c_char,
    pub source_bytes: u64,
    pub build_options: *const c_char,
    pub num_kernels: u32,
    pub num_functions: u32,
    pub kernels: *const TccKernelDesc,
    pub functions: *const TccFunctionDesc,
    pub num_constants: u32,
    pub reserved: u32,
    pub constants: *const TccConstantDesc,
    pub producer: *const c_char,
}

/// `const tcc_artifact *tcc_artifact_v1(void)`.
pub type TccArtifactV1Fn = unsafe extern "C" fn() -> *const TccArtifact;

/// Name of the symbol every artifact exports.
pub const ARTIFACT_SYMBOL: &[u8] = tcc_abi::ARTIFACT_SYMBOL.as_bytes();

/// `const char *tcc_kernel_ptx_v1(void)`: optional, the kernels as
/// NUL-terminated PTX text for NVIDIA drivers (the OpenCL C in the artifact
/// table stays the portable form).
pub type TccKernelPtxV1Fn = unsafe extern "C" fn() -> *const c_char;

/// The optional PTX symbol.
pub const KERNEL_PTX_SYMBOL: &[u8] = tcc_abi::KERNEL_PTX_SYMBOL.as_bytes();

/// `const char *tcc_metadata_v1(void)`: optional, a NUL-terminated JSON
/// object the compiler writes about the artifact (target, kernels with
/// kind, work-group size and flops, tcc version and git hash), read by
/// `tcc inspect`. Its keys may grow; the runtime never depends on it.
pub type TccMetadataV1Fn = unsafe extern "C" fn() -> *const c_char;

/// The optional metadata symbol.
pub const METADATA_SYMBOL: &[u8] = tcc_abi::METADATA_SYMBOL.as_bytes();

/// A `launch` callback's sizes and arguments, read from its pointers once
/// checked as the ABI requires (the same checks and messages on every
/// backend): 1 to 3 dimensions, a global size, `expected_args` arguments
/// (what the kernel declares) and their array when there are any. A local
/// size of all zeros is none (the runtime chooses).
pub(crate) struct LaunchArgs<'a> {
    pub global: &'a [u64],
    pub local: Option<&'a [u64]>,
    pub args: &'a [TccArg],
}

/// Reads a `launch` callback's pointers for kernel `name`.
///
/// # Safety
/// Non-null `global`, `local` and `args` must point at `dims`, `dims` and
/// `num_args` entries, as the ABI says; `dims` is checked first.
pub(crate) unsafe fn launch_args<'a>(
    name: &str,
    dims: u32,
    global: *const u64,
    local: *const u64,
    num_args: u32,
    args: *const TccArg,
    expected_args: usize,
) -> crate::Result<LaunchArgs<'a>> {
    use crate::Error;
    if !(1..=3).contains(&dims) {
        return Err(Error::InvalidInput(format!(
            "kernel `{name}`: dims must be 1, 2 or 3, got {dims}"
        )));
    }
    if global.is_null() {
        return Err(Error::InvalidInput(format!(
            "kernel `{name}`: global size is NULL"
        )));
    }
    if num_args as usize != expected_args {
        return Err(Error::InvalidInput(format!(
            "kernel `{name}` takes {expected_args} arguments, launch passed {num_args}"
        )));
    }
    if num_args > 0 && args.is_null() {
        return Err(Error::InvalidInput(format!(
            "kernel `{name}`: args is NULL"
        )));
    }
    // SAFETY: non-null, `dims` entries per the ABI (the caller's promise).
    let global = unsafe { std::slice::from_raw_parts(global, dims as usize) };
    let local = if local.is_null() {
        None
    } else {
        // SAFETY: as above.
        let l = unsafe { std::slice::from_raw_parts(local, dims as usize) };
        l.iter().any(|&x| x != 0).then_some(l)
    };
    let args: &[TccArg] = if num_args == 0 {
        &[]
    } else {
        // SAFETY: non-null, `num_args` entries per the ABI.
        unsafe { std::slice::from_raw_parts(args, num_args as usize) }
    };
    Ok(LaunchArgs {
        global,
        local,
        args,
    })
}

/// `(type name, field name, offset)` for every field, plus `(type, "sizeof",
/// size)`, in a fixed order; the `abi_layout` test compares this list with
/// the same list computed by a C compiler from the header.
pub fn layout_table() -> Vec<(&'static str, &'static str, usize)> {
    use std::mem::{offset_of, size_of};
    // A field is named by its path (`v1.name`); the table knows it by its
    // last part.
    macro_rules! last {
        ($f:ident) => { stringify!($f) };
        ($f:ident . $($rest:ident).+) => { last!($($rest).+) };
    }
    macro_rules! fields {
        ($t:ty, $c:literal; $($($f:ident).+),*) => {
            vec![$(($c, last!($($f).+), offset_of!($t, $($f).+)),)* ($c, "sizeof", size_of::<$t>())]
        };
    }
    [
        fields!(TccArg, "tcc_arg"; kind, reserved, value),
        fields!(TccRuntimeApi, "tcc_runtime_api"; abi_version, reserved, ctx, alloc, release, constant, launch, copy, view, shapes),
        fields!(TccTensorDesc, "tcc_tensor_desc"; name, dtype, rank, shape),
        fields!(TccFunctionDesc, "tcc_function_desc"; v1.name, v1.entry, v1.num_inputs, v1.num_outputs, v1.inputs, v1.outputs, arena_bytes, arena_alignment),
        fields!(TccFunctionDescV1, "tcc_function_desc_v1"; name, entry, num_inputs, num_outputs, inputs, outputs),
        fields!(TccKernelArg, "tcc_kernel_arg"; kind, dtype, elements, flags, reserved),
        fields!(TccKernelDesc, "tcc_kernel_desc"; name, flops, workgroup_x, workgroup_y, workgroup_z, dynamic_local_bytes, num_args, reserved, args),
        fields!(TccConstantDesc, "tcc_constant_desc"; data, bytes),
        fields!(TccArtifact, "tcc_artifact"; abi_version, source_kind, source, source_bytes, build_options, num_kernels, num_functions, kernels, functions, num_constants, reserved, constants, producer),
    ]
    .concat()
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    /// The mirror has the table's layout: same structs, same fields in the
    /// same order, same offsets and sizes.
    #[test]
    fn the_mirror_has_the_tables_layout() {
        let mut table = Vec::new();
        for s in tcc_abi::STRUCTS {
            let (fields, size) = s.layout();
            table.extend(fields.into_iter().map(|(f, o)| (s.name, f, o)));
            table.push((s.name, "sizeof", size));
        }
        assert_eq!(super::layout_table(), table);
    }
}

#[cfg(test)]
mod callback_tests {
    /// The C type a callback parameter's Rust type stands for.
    fn c_type(rust: &str) -> String {
        let rust = rust.replace(' ', "");
        let base = |name: &str| match name {
            "u32" => "uint32_t",
            "u64" => "uint64_t",
            "i32" => "int32_t",
            "TccBuffer" => "tcc_buffer",
            "TccArg" => "tcc_arg",
            other => panic!("no C type for `{other}`: extend c_type"),
        };
        let mut stars = String::new();
        let mut rest = rust.as_str();
        let mut konst = false;
        loop {
            if let Some(r) = rest.strip_prefix("*mut") {
                stars.push('*');
                rest = r;
            } else if let Some(r) = rest.strip_prefix("*const") {
                stars.push('*');
                konst = true;
                rest = r;
            } else {
                break;
            }
        }
        format!("{}{}{stars}", if konst { "const " } else { "" }, base(rest))
    }

    /// One `_Static_assert` per callback: the header's field has exactly
    /// the function-pointer type the Rust list declares.
    macro_rules! c_assertions {
        ($($(#[$doc:meta])* $field:ident: $type:ident($($arg:ident: $ty:ty),*) $(-> $status:ty)?;)*) => {{
            let mut text = String::new();
            $(
                let parameters: Vec<String> =
                    std::iter::once("void *".to_string()).chain([$(c_type(stringify!($ty))),*]).collect();
                let result: &[&str] = &[$(stringify!($status)),*];
                let result = result.first().map_or("void".to_string(), |r| c_type(r));
                text.push_str(&format!(
                    "_Static_assert(__builtin_types_compatible_p(__typeof__(((tcc_runtime_api *)0)->{}), {} (*)({})), \"{}\");\n",
                    stringify!($field), result, parameters.join(", "), stringify!($field)
                ));
            )*
            text
        }};
    }

    #[test]
    fn the_headers_callbacks_have_the_rust_lists_signatures() {
        let assertions = super::runtime_callbacks!(c_assertions);
        assert_eq!(assertions.lines().count(), 6, "{assertions}");
        let directory = tempfile::tempdir().unwrap();
        let source = directory.path().join("callbacks.c");
        std::fs::write(
            &source,
            format!("#include \"tcc_abi.h\"\n#include <stdint.h>\n{assertions}"),
        )
        .unwrap();
        let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let output = std::process::Command::new(&compiler)
            .args(["-std=gnu11", "-fsyntax-only", "-I"])
            .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
            .arg(&source)
            .output()
            .expect("a C compiler (cc or $CC)");
        assert!(
            output.status.success(),
            "tcc_abi.h's callbacks disagree with runtime_callbacks!:\n{}\n{assertions}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
