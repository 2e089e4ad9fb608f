//! The scalar element types kernels and the host ABI handle, read off MLIR
//! types, with their OpenCL C spellings and sizes (shared by the OpenCL C
//! writer and the host back end).
//!
//! The half types (f16, bf16) are storage types: a kernel holds their
//! values in `float` registers and computes in f32, loading with a
//! conversion up and storing rounded to nearest even (`vload_half` /
//! `vstore_half_rte` for f16, which are core OpenCL C 1.2 and need no
//! `cl_khr_fp16`; bf16 is the top half of an f32's bits). f64 computes in
//! `double` (`cl_khr_fp64`).

use melior::ir::Type;
use melior::ir::r#type::{IntegerType, TypeLike};

/// Scalar element types a kernel can touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    F16,
    BF16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
    Index,
}

impl ElementType {
    /// The element type `ty` is, if a kernel can touch it (integers are
    /// signless).
    pub fn of_type(ty: Type) -> Option<Self> {
        if ty.is_f16() {
            return Some(Self::F16);
        }
        if ty.is_bf16() {
            return Some(Self::BF16);
        }
        if ty.is_f32() {
            return Some(Self::F32);
        }
        if ty.is_f64() {
            return Some(Self::F64);
        }
        if ty.is_index() {
            return Some(Self::Index);
        }
        let integer = IntegerType::try_from(ty).ok().filter(|i| i.is_signless())?;
        Some(match integer.width() {
            1 => Self::I1,
            8 => Self::I8,
            16 => Self::I16,
            32 => Self::I32,
            64 => Self::I64,
            _ => return None,
        })
    }

    /// The C type of a value of this type (half types compute in `float`
    /// registers).
    pub fn c_type(self) -> &'static str {
        match self {
            Self::F16 | Self::BF16 => "float",
            Self::F32 => "float",
            Self::F64 => "double",
            Self::I1 => "bool",
            Self::I8 => "char",
            Self::I16 => "short",
            Self::I32 => "int",
            Self::I64 => "long",
            // `int` or `long`, per program (see `IndexWidth`).
            Self::Index => "tcc_index",
        }
    }

    /// How a buffer stores the elements (booleans are bytes, `index`
    /// elements are 64-bit like the host's): what a kernel parameter of
    /// this type declares.
    pub fn storage(self) -> tcc_kernels::Storage {
        use tcc_kernels::Storage;
        match self {
            Self::F16 => Storage::F16,
            Self::BF16 => Storage::BF16,
            Self::F32 => Storage::F32,
            Self::F64 => Storage::F64,
            Self::I1 => Storage::Bool,
            Self::I8 => Storage::I8,
            Self::I16 => Storage::I16,
            Self::I32 => Storage::I32,
            Self::I64 | Self::Index => Storage::I64,
        }
    }

    /// The C type of an element stored in a buffer.
    pub fn storage_type(self) -> &'static str {
        self.storage().c_type()
    }

    pub fn unsigned_type(self) -> &'static str {
        match self {
            Self::I1 => "uchar",
            Self::I8 => "uchar",
            Self::I16 => "ushort",
            Self::I32 => "uint",
            Self::Index => "tcc_uindex",
            _ => "ulong",
        }
    }

    pub fn size_bytes(self) -> usize {
        match self {
            Self::I1 | Self::I8 => 1,
            Self::F16 | Self::BF16 | Self::I16 => 2,
            Self::F32 | Self::I32 => 4,
            Self::F64 | Self::I64 | Self::Index => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::BF16 | Self::F32 | Self::F64)
    }

    /// Whether values are stored narrower than the `float` registers that
    /// hold them (f16, bf16): a value made in a register must be rounded to
    /// the type where its op defines a rounding (casts).
    pub fn is_half(self) -> bool {
        matches!(self, Self::F16 | Self::BF16)
    }
}

#[cfg(test)]
mod tests {
    use super::ElementType;
    use crate::ir::testing::parse_type;

    #[test]
    fn reads_the_element_types_kernels_touch() {
        let context = tcc_dialects::new_context();
        let of = |text: &str| ElementType::of_type(parse_type(&context, text));
        for (text, expected) in [
            ("f16", ElementType::F16),
            ("bf16", ElementType::BF16),
            ("f32", ElementType::F32),
            ("f64", ElementType::F64),
            ("i1", ElementType::I1),
            ("i8", ElementType::I8),
            ("i16", ElementType::I16),
            ("i32", ElementType::I32),
            ("i64", ElementType::I64),
            ("index", ElementType::Index),
        ] {
            assert_eq!(of(text), Some(expected), "{text}");
        }
        for other in ["si8", "ui32", "i4", "tf32", "tensor<2xf32>"] {
            assert_eq!(of(other), None, "{other}");
        }
    }
}
