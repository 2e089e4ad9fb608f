//! The contract between a tcc artifact (`model.so`) and the runtime,
//! declared once.
//!
//! Every struct that crosses the ABI is a [`Struct`]: its C name and its
//! fields in order, each with a [`Scalar`] kind. From this table
//!
//! - the compiler derives the LLVM types of the host code and of the
//!   artifact's self-description (`back/host_llvm`), and finds fields by
//!   name ([`Struct::field`], checked at compile time when used in a
//!   `const`);
//! - the runtime's `#[repr(C)]` mirror (`runtime/src/abi.rs`) is checked
//!   against [`Struct::layout`] by a unit test there;
//! - the C header (`runtime/include/tcc_abi.h`) is checked by this crate's
//!   `c_header` test, which compiles `offsetof`/`sizeof` assertions
//!   generated from the table against it.
//!
//! The numbers of the ABI (version, element type codes, source and argument
//! kinds) and the exported symbols' names are here too, and so is the
//! artifact's checksummed self-description ([`description`]), which the
//! compiler writes and the runtime and `tcc inspect` read. This crate
//! depends on nothing of LLVM or MLIR (serde and sha2 only), so that the
//! runtime stays free of them.

pub mod description;
pub mod minifloat;
pub mod symbolic;

/// `TCC_ABI_VERSION`: the version the runtime implements and the compiler
/// writes into an artifact with a symbolic dimension. Version 3 gave each
/// kernel one launch record ([`KERNEL_DESC`]) in place of a list of names,
/// a separate flops table and comments inside the PTX; version 4 gave the
/// runtime table the call's shapes ([`RUNTIME_API`]'s `shapes`), which
/// the entry of a function on a symbolic dimension reads its extents
/// from ([`symbolic`]).
pub const ABI_VERSION: u32 = 4;
/// The version the compiler writes into an artifact whose functions are
/// all static: they read nothing version 4 added, so runtimes of
/// version 3 load them too.
pub const ABI_VERSION_STATIC: u32 = 3;
/// `TCC_ABI_VERSION_MIN`: the oldest artifact ABI the runtime still loads.
/// Older artifacts (versions 1 and 2, without launch records) are refused
/// with a message that says to rebuild them with this tcc.
pub const ABI_VERSION_MIN: u32 = 3;

/// The most elements a tensor may have (2^32), in the compiler's input
/// (the ONNX importer, `tcc-check-supported`) and so in every artifact:
/// with it, every size computed from shapes (elements, bytes, work items,
/// arena offsets) fits in an `i64` with room to spare.
pub const MAX_TENSOR_ELEMENTS: i64 = 1 << 32;

/// The element count of `shape` when every dimension is non-negative and
/// the product is at most [`MAX_TENSOR_ELEMENTS`] (checked arithmetic),
/// else `None`.
pub fn checked_element_count(shape: &[i64]) -> Option<i64> {
    let mut count: i64 = 1;
    for &d in shape {
        if d < 0 {
            return None;
        }
        count = count.checked_mul(d)?;
    }
    (count <= MAX_TENSOR_ELEMENTS).then_some(count)
}

/// `enum tcc_dtype`.
pub const DTYPE_F32: u32 = 0;
pub const DTYPE_F16: u32 = 1;
pub const DTYPE_I32: u32 = 2;
pub const DTYPE_I64: u32 = 3;
pub const DTYPE_I8: u32 = 4;
/// One byte per element, 0 or 1.
pub const DTYPE_BOOL: u32 = 5;
/// bfloat16: the top 16 bits of an IEEE f32.
pub const DTYPE_BF16: u32 = 6;
pub const DTYPE_F64: u32 = 7;
pub const DTYPE_I16: u32 = 8;
pub const DTYPE_U8: u32 = 9;
pub const DTYPE_U16: u32 = 10;
pub const DTYPE_U32: u32 = 11;
pub const DTYPE_U64: u32 = 12;
/// The minifloats (one byte an element, see [`minifloat`]).
pub const DTYPE_F8E4M3FN: u32 = 13;
pub const DTYPE_F8E4M3FNUZ: u32 = 14;
pub const DTYPE_F8E5M2: u32 = 15;
pub const DTYPE_F8E5M2FNUZ: u32 = 16;
pub const DTYPE_F4E2M1: u32 = 17;

/// `enum tcc_source_kind`: the kernel program's format.
pub const SOURCE_OPENCL_C: u32 = 0;
pub const SOURCE_SPIRV: u32 = 1;
pub const SOURCE_PTX: u32 = 2;

/// `enum tcc_arg_kind`: what a `tcc_arg` holds.
pub const ARG_BUFFER: u32 = 0;
pub const ARG_I32: u32 = 1;
pub const ARG_I64: u32 = 2;
pub const ARG_F32: u32 = 3;

/// `TCC_ARG_WRITTEN`: a [`KERNEL_ARG`]'s `flags` bit: the kernel writes
/// the buffer.
pub const ARG_WRITTEN: u32 = 1;

/// Every enumerator and macro of the header with its value, for the
/// header check.
pub const CONSTANTS: &[(&str, u32)] = &[
    ("TCC_ABI_VERSION", ABI_VERSION),
    ("TCC_ABI_VERSION_MIN", ABI_VERSION_MIN),
    ("TCC_DTYPE_F32", DTYPE_F32),
    ("TCC_DTYPE_F16", DTYPE_F16),
    ("TCC_DTYPE_I32", DTYPE_I32),
    ("TCC_DTYPE_I64", DTYPE_I64),
    ("TCC_DTYPE_I8", DTYPE_I8),
    ("TCC_DTYPE_BOOL", DTYPE_BOOL),
    ("TCC_DTYPE_BF16", DTYPE_BF16),
    ("TCC_DTYPE_F64", DTYPE_F64),
    ("TCC_DTYPE_I16", DTYPE_I16),
    ("TCC_DTYPE_U8", DTYPE_U8),
    ("TCC_DTYPE_U16", DTYPE_U16),
    ("TCC_DTYPE_U32", DTYPE_U32),
    ("TCC_DTYPE_U64", DTYPE_U64),
    ("TCC_DTYPE_F8E4M3FN", DTYPE_F8E4M3FN),
    ("TCC_DTYPE_F8E4M3FNUZ", DTYPE_F8E4M3FNUZ),
    ("TCC_DTYPE_F8E5M2", DTYPE_F8E5M2),
    ("TCC_DTYPE_F8E5M2FNUZ", DTYPE_F8E5M2FNUZ),
    ("TCC_DTYPE_F4E2M1", DTYPE_F4E2M1),
    ("TCC_SOURCE_OPENCL_C", SOURCE_OPENCL_C),
    ("TCC_SOURCE_SPIRV", SOURCE_SPIRV),
    ("TCC_SOURCE_PTX", SOURCE_PTX),
    ("TCC_ARG_BUFFER", ARG_BUFFER),
    ("TCC_ARG_I32", ARG_I32),
    ("TCC_ARG_I64", ARG_I64),
    ("TCC_ARG_F32", ARG_F32),
    ("TCC_ARG_WRITTEN", ARG_WRITTEN),
];

/// The symbol every artifact exports: `const tcc_artifact *tcc_artifact_v1(void)`.
pub const ARTIFACT_SYMBOL: &str = "tcc_artifact_v1";
/// Optional (ABI 2): `const char *tcc_kernel_ptx_v1(void)`.
pub const KERNEL_PTX_SYMBOL: &str = "tcc_kernel_ptx_v1";
/// Optional: `const char *tcc_metadata_v1(void)`.
pub const METADATA_SYMBOL: &str = "tcc_metadata_v1";
/// Optional: `const unsigned char tcc_description_v1[]`, a data symbol:
/// the checksummed description of the table and the constants that `tcc
/// inspect` reads without loading the artifact and the loader compares
/// with the table (runtime/src/artifact/description.rs).
pub const DESCRIPTION_SYMBOL: &str = "tcc_description_v1";
/// Optional: `const tcc_constant_desc tcc_constants_v1[]`, a data symbol:
/// the table's constant descriptors, which `tcc inspect --verify` follows
/// (through the file's relocations) to hash the constants without loading
/// the artifact.
pub const CONSTANTS_SYMBOL: &str = "tcc_constants_v1";
/// The prefix of each function's entry symbol inside the artifact.
pub const ENTRY_PREFIX: &str = "tcc_entry_";

/// The kind of one field: what its bits are, which fixes size and
/// alignment on every 64-bit target tcc supports (x86-64, AArch64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// `uint32_t`.
    U32,
    /// `uint64_t`.
    U64,
    /// Any pointer: data, function or opaque handle.
    Ptr,
    /// `tcc_arg`'s value: a union of a pointer, `int32_t`, `int64_t` and
    /// `float`, 8 bytes.
    Word,
}

impl Scalar {
    /// Size and alignment in bytes on a 64-bit target.
    pub const fn bytes(self) -> usize {
        match self {
            Scalar::U32 => 4,
            Scalar::U64 | Scalar::Ptr | Scalar::Word => 8,
        }
    }
}

/// One C struct of the ABI.
#[derive(Clone, Copy, Debug)]
pub struct Struct {
    /// The C type name (`tcc_runtime_api`, ...).
    pub name: &'static str,
    /// The fields in declaration order.
    pub fields: &'static [(&'static str, Scalar)],
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Struct {
    /// The index of field `name` (the LLVM struct index). Panics when the
    /// struct has no such field, at compile time when used in a `const`.
    pub const fn field(&self, name: &str) -> u32 {
        let mut i = 0;
        while i < self.fields.len() {
            if same(self.fields[i].0, name) {
                return i as u32;
            }
            i += 1;
        }
        panic!("no such field in the ABI struct")
    }

    /// The index of field `name`, if the struct has one.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(field, _)| *field == name)
    }

    /// `(field, offset)` of every field and the struct's size, with C's
    /// layout rules on a 64-bit target.
    pub fn layout(&self) -> (Vec<(&'static str, usize)>, usize) {
        let mut offset: usize = 0;
        let mut align: usize = 1;
        let mut fields = Vec::new();
        for &(name, scalar) in self.fields {
            let bytes = scalar.bytes();
            offset = offset.next_multiple_of(bytes);
            fields.push((name, offset));
            offset += bytes;
            align = align.max(bytes);
        }
        (fields, offset.next_multiple_of(align))
    }
}

use Scalar::{Ptr, U32, U64, Word};

/// `tcc_arg`: one kernel argument (16 bytes).
pub const ARG: Struct = Struct {
    name: "tcc_arg",
    fields: &[("kind", U32), ("reserved", U32), ("value", Word)],
};

/// `tcc_runtime_api`: what the runtime offers the artifact's host code
/// (`ctx`, then the callbacks).
pub const RUNTIME_API: Struct = Struct {
    name: "tcc_runtime_api",
    fields: &[
        ("abi_version", U32),
        ("reserved", U32),
        ("ctx", Ptr),
        ("alloc", Ptr),
        ("release", Ptr),
        ("constant", Ptr),
        ("launch", Ptr),
        ("copy", Ptr),
        ("view", Ptr),
        ("shapes", Ptr),
    ],
};

/// `tcc_tensor_desc`: a tensor crossing the ABI.
pub const TENSOR_DESC: Struct = Struct {
    name: "tcc_tensor_desc",
    fields: &[("name", Ptr), ("dtype", U32), ("rank", U32), ("shape", Ptr)],
};

/// `tcc_function_desc`: a function of the artifact (ABI 2).
pub const FUNCTION_DESC: Struct = Struct {
    name: "tcc_function_desc",
    fields: &[
        ("name", Ptr),
        ("entry", Ptr),
        ("num_inputs", U32),
        ("num_outputs", U32),
        ("inputs", Ptr),
        ("outputs", Ptr),
        ("arena_bytes", U64),
        ("arena_alignment", U64),
    ],
};

/// `tcc_function_desc_v1`: a function of an ABI 1 artifact: the first
/// six fields of [`FUNCTION_DESC`] (no arena).
pub const FUNCTION_DESC_V1: Struct = Struct {
    name: "tcc_function_desc_v1",
    fields: FUNCTION_DESC.fields.split_at(6).0,
};

/// `tcc_kernel_arg`: one argument of a kernel, as its launch record
/// states it (ABI 3): its kind ([`ARG_BUFFER`], ...), the `enum tcc_dtype`
/// of the elements as the buffer stores them, how many elements, and
/// flags ([`ARG_WRITTEN`]).
pub const KERNEL_ARG: Struct = Struct {
    name: "tcc_kernel_arg",
    fields: &[
        ("kind", U32),
        ("dtype", U32),
        ("elements", U64),
        ("flags", U32),
        ("reserved", U32),
    ],
};

/// `tcc_kernel_desc`: one kernel's launch record (ABI 3), the one place an
/// artifact states what launching the kernel takes: its name (in the
/// kernel program), work-group size, the CUDA dynamic shared memory its
/// PTX form needs (0: none), its floating-point operations per launch (0:
/// not counted) and its arguments in order.
pub const KERNEL_DESC: Struct = Struct {
    name: "tcc_kernel_desc",
    fields: &[
        ("name", Ptr),
        ("flops", U64),
        ("workgroup_x", U32),
        ("workgroup_y", U32),
        ("workgroup_z", U32),
        ("dynamic_local_bytes", U32),
        ("num_args", U32),
        ("reserved", U32),
        ("args", Ptr),
    ],
};

/// `tcc_constant_desc`: one constant (weights).
pub const CONSTANT_DESC: Struct = Struct {
    name: "tcc_constant_desc",
    fields: &[("data", Ptr), ("bytes", U64)],
};

/// `tcc_artifact`: what `tcc_artifact_v1()` returns.
pub const ARTIFACT: Struct = Struct {
    name: "tcc_artifact",
    fields: &[
        ("abi_version", U32),
        ("source_kind", U32),
        ("source", Ptr),
        ("source_bytes", U64),
        ("build_options", Ptr),
        ("num_kernels", U32),
        ("num_functions", U32),
        ("kernels", Ptr),
        ("functions", Ptr),
        ("num_constants", U32),
        ("reserved", U32),
        ("constants", Ptr),
        ("producer", Ptr),
    ],
};

/// Every struct of the ABI.
pub const STRUCTS: &[Struct] = &[
    ARG,
    RUNTIME_API,
    TENSOR_DESC,
    FUNCTION_DESC,
    FUNCTION_DESC_V1,
    KERNEL_ARG,
    KERNEL_DESC,
    CONSTANT_DESC,
    ARTIFACT,
];

/// One kernel's launch record as Rust sees it: what [`KERNEL_DESC`] and
/// its [`KERNEL_ARG`]s hold. The compiler builds it from its kernels and
/// writes it into the artifact's table (and its description and
/// metadata); the runtime reads it back from the table.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LaunchRecord {
    pub name: String,
    /// Floating-point operations per launch (0: not counted).
    pub flops: u64,
    /// The work-group size the kernel is launched with (x, y, z).
    pub workgroup_size: [u32; 3],
    /// CUDA dynamic shared memory the kernel's PTX form needs, in bytes
    /// (0: none; only sm_90a PTX of `--backend=cuda` needs any).
    pub dynamic_local_bytes: u32,
    pub args: Vec<KernelArgRecord>,
}

/// One argument of a [`LaunchRecord`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelArgRecord {
    /// `enum tcc_arg_kind` ([`ARG_BUFFER`], ...).
    pub kind: u32,
    /// `enum tcc_dtype` of the elements as stored.
    pub dtype: u32,
    /// How many elements the buffer holds.
    pub elements: u64,
    /// Whether the kernel writes the buffer.
    pub written: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_the_documented_sizes() {
        let size = |s: &Struct| s.layout().1;
        assert_eq!(size(&ARG), 16);
        assert_eq!(size(&RUNTIME_API), 72);
        assert_eq!(size(&TENSOR_DESC), 24);
        assert_eq!(size(&FUNCTION_DESC), 56);
        assert_eq!(size(&FUNCTION_DESC_V1), 40);
        assert_eq!(size(&CONSTANT_DESC), 16);
        assert_eq!(size(&KERNEL_ARG), 24);
        assert_eq!(size(&KERNEL_DESC), 48);
        let (fields, _) = KERNEL_DESC.layout();
        assert!(fields.contains(&("dynamic_local_bytes", 28)));
        assert!(fields.contains(&("args", 40)));
        assert_eq!(size(&ARTIFACT), 80);
        let (fields, _) = ARTIFACT.layout();
        assert!(fields.contains(&("num_constants", 56)));
        assert!(fields.contains(&("producer", 72)));
    }

    #[test]
    fn fields_are_found_by_name() {
        const VIEW: u32 = RUNTIME_API.field("view");
        assert_eq!(VIEW, 8);
        assert_eq!(ARG.field("value"), 2);
    }

    #[test]
    #[should_panic(expected = "no such field")]
    fn an_unknown_field_is_refused() {
        RUNTIME_API.field("free");
    }
}
