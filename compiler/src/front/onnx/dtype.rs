//! ONNX element types and their MLIR spelling.

use std::fmt;

/// An ONNX tensor element type (`TensorProto.DataType`) the importer can
/// at least read. Only [`DType::in_graph`] types may appear in the MLIR it
/// writes; the others can be folded away at import time (shape
/// computations) but never reach tcc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    F64,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    U64,
    Bool,
    /// The narrow types (`narrow.rs` in ops): float8 of four encodings,
    /// float4e2m1, int4/uint4, int2/uint2. One element per byte in the
    /// graph (`i8`; ONNX packs the 4- and 2-bit types, the decoder unpacks
    /// them, sign-extended for int4/int2), taken by Cast, CastLike,
    /// QuantizeLinear, DequantizeLinear and data movement only.
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F4E2M1,
    I4,
    U4,
    I2,
    U2,
}

impl DType {
    /// The type of an ONNX `TensorProto.DataType` code.
    pub fn from_onnx(code: i32) -> Option<DType> {
        Some(match code {
            1 => DType::F32,
            2 => DType::U8,
            3 => DType::I8,
            4 => DType::U16,
            5 => DType::I16,
            6 => DType::I32,
            7 => DType::I64,
            9 => DType::Bool,
            10 => DType::F16,
            11 => DType::F64,
            12 => DType::U32,
            13 => DType::U64,
            16 => DType::BF16,
            17 => DType::F8E4M3FN,
            18 => DType::F8E4M3FNUZ,
            19 => DType::F8E5M2,
            20 => DType::F8E5M2FNUZ,
            21 => DType::U4,
            22 => DType::I4,
            23 => DType::F4E2M1,
            25 => DType::U2,
            26 => DType::I2,
            _ => return None,
        })
    }

    /// The ONNX name of a `TensorProto.DataType` code (also for codes the
    /// importer cannot read), for error messages.
    pub fn onnx_code_name(code: i32) -> String {
        match code {
            0 => "undefined".into(),
            8 => "string".into(),
            14 => "complex64".into(),
            15 => "complex128".into(),
            17 => "float8e4m3fn".into(),
            18 => "float8e4m3fnuz".into(),
            19 => "float8e5m2".into(),
            20 => "float8e5m2fnuz".into(),
            21 => "uint4".into(),
            22 => "int4".into(),
            23 => "float4e2m1".into(),
            24 => "float8e8m0".into(),
            25 => "uint2".into(),
            26 => "int2".into(),
            _ => match DType::from_onnx(code) {
                Some(dtype) => dtype.to_string(),
                None => format!("data type {code}"),
            },
        }
    }

    /// The `TensorProto.DataType` code of a type's name as Cast-1 gives it
    /// (`"FLOAT"`, `"INT64"`, the enum's names).
    pub fn onnx_code_of_name(name: &str) -> Option<i32> {
        Some(match name {
            "FLOAT" => 1,
            "UINT8" => 2,
            "INT8" => 3,
            "UINT16" => 4,
            "INT16" => 5,
            "INT32" => 6,
            "INT64" => 7,
            "STRING" => 8,
            "BOOL" => 9,
            "FLOAT16" => 10,
            "DOUBLE" => 11,
            "UINT32" => 12,
            "UINT64" => 13,
            "COMPLEX64" => 14,
            "COMPLEX128" => 15,
            "BFLOAT16" => 16,
            _ => return None,
        })
    }

    /// The ONNX `TensorProto.DataType` code.
    pub fn onnx_code(self) -> i32 {
        match self {
            DType::F32 => 1,
            DType::U8 => 2,
            DType::I8 => 3,
            DType::U16 => 4,
            DType::I16 => 5,
            DType::I32 => 6,
            DType::I64 => 7,
            DType::Bool => 9,
            DType::F16 => 10,
            DType::F64 => 11,
            DType::U32 => 12,
            DType::U64 => 13,
            DType::BF16 => 16,
            DType::F8E4M3FN => 17,
            DType::F8E4M3FNUZ => 18,
            DType::F8E5M2 => 19,
            DType::F8E5M2FNUZ => 20,
            DType::U4 => 21,
            DType::I4 => 22,
            DType::F4E2M1 => 23,
            DType::U2 => 25,
            DType::I2 => 26,
        }
    }

    /// Bytes per element in the importer's little-endian layout (ONNX's
    /// raw layout, except that the 4- and 2-bit types take a byte each).
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F4E2M1
            | DType::I4
            | DType::U4
            | DType::I2
            | DType::U2 => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool && !self.is_minifloat()
    }

    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::U4 | DType::U2
        )
    }

    /// The float8 types and float4e2m1 (bits in an `i8`).
    pub fn is_minifloat(self) -> bool {
        matches!(
            self,
            DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2 | DType::F8E5M2FNUZ | DType::F4E2M1
        )
    }

    /// The narrow types: minifloats and the 4- and 2-bit integers.
    /// The smallest and largest value of an integer type of a byte or
    /// more (bool: 0 and 1); `None` for the others.
    pub fn int_bounds(self) -> Option<(i128, i128)> {
        if self == DType::Bool {
            return Some((0, 1));
        }
        if !self.is_int() || self.is_narrow() {
            return None;
        }
        let bits = 8 * self.size() as u32;
        Some(if self.is_unsigned() {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        })
    }

    pub fn is_narrow(self) -> bool {
        self.is_minifloat() || matches!(self, DType::I4 | DType::U4 | DType::I2 | DType::U2)
    }

    /// The layout of a minifloat type.
    pub fn minifloat(self) -> Option<Minifloat> {
        Some(match self {
            DType::F8E4M3FN => Minifloat::F8E4M3FN,
            DType::F8E4M3FNUZ => Minifloat::F8E4M3FNUZ,
            DType::F8E5M2 => Minifloat::F8E5M2,
            DType::F8E5M2FNUZ => Minifloat::F8E5M2FNUZ,
            DType::F4E2M1 => Minifloat::F4E2M1,
            _ => return None,
        })
    }

    /// Whether a graph input or output of this type can cross the
    /// artifact's interface: the 4- and 2-bit integers do as int8/uint8
    /// (one value a byte), the minifloats as the runtime's one-byte
    /// minifloat types.
    pub fn at_interface(self) -> bool {
        self.in_graph()
    }

    /// Whether tcc compiles tensors of this type (the runtime ABI's types).
    pub fn in_graph(self) -> bool {
        matches!(
            self,
            DType::F32
                | DType::F16
                | DType::BF16
                | DType::F64
                | DType::I64
                | DType::I32
                | DType::I16
                | DType::I8
                | DType::U64
                | DType::U32
                | DType::U16
                | DType::U8
                | DType::Bool
        ) || self.is_narrow()
    }

    /// The MLIR element type.
    pub fn mlir(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I64 | DType::U64 => "i64",
            DType::I32 | DType::U32 => "i32",
            DType::I16 | DType::U16 => "i16",
            DType::I8 | DType::U8 => "i8",
            DType::Bool => "i1",
            _ => "i8",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "float",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F64 => "double",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::I16 => "int16",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bool => "bool",
            DType::F8E4M3FN => "float8e4m3fn",
            DType::F8E4M3FNUZ => "float8e4m3fnuz",
            DType::F8E5M2 => "float8e5m2",
            DType::F8E5M2FNUZ => "float8e5m2fnuz",
            DType::F4E2M1 => "float4e2m1",
            DType::I4 => "int4",
            DType::U4 => "uint4",
            DType::I2 => "int2",
            DType::U2 => "uint2",
        })
    }
}

pub use tcc_abi::minifloat::{Minifloat, Specials};

/// The value of a 4- or 2-bit integer's low bits (sign-extended for int4
/// and int2), or of any value wrapped to the type, as the byte the
/// importer keeps.
pub fn wrap_narrow_int(dtype: DType, value: i64) -> u8 {
    let bits = match dtype {
        DType::I4 | DType::U4 => 4,
        _ => 2,
    };
    let low = (value as u64) & ((1 << bits) - 1);
    if matches!(dtype, DType::I4 | DType::I2) && low >> (bits - 1) == 1 {
        (low as i64 - (1 << bits)) as i8 as u8
    } else {
        low as u8
    }
}

/// A statically shaped tensor type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TType {
    pub dtype: DType,
    pub shape: Vec<i64>,
}

impl TType {
    pub fn new(dtype: DType, shape: Vec<i64>) -> Self {
        Self { dtype, shape }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (the shape's dimensions are validated to be
    /// non-negative and their product to fit when a type is created from
    /// untrusted input, see [`checked_numel`]).
    pub fn numel(&self) -> i64 {
        self.shape.iter().product()
    }

    pub fn with_shape(&self, shape: Vec<i64>) -> Self {
        Self {
            dtype: self.dtype,
            shape,
        }
    }

    pub fn with_dtype(&self, dtype: DType) -> Self {
        Self {
            dtype,
            shape: self.shape.clone(),
        }
    }

    /// `tensor<2x3xf32>` (`tensor<f32>` for rank 0; a negative extent,
    /// a symbolic dimension, is `?`).
    pub fn mlir(&self) -> String {
        let mut text = String::from("tensor<");
        for d in &self.shape {
            if *d < 0 {
                text.push('?');
            } else {
                text.push_str(&d.to_string());
            }
            text.push('x');
        }
        text.push_str(self.dtype.mlir());
        text.push('>');
        text
    }
}

impl fmt::Display for TType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}]",
            self.dtype,
            self.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The largest tensor tcc accepts (elements), in the importer and at the
/// input of `tcc compile` alike: [`tcc_abi::MAX_TENSOR_ELEMENTS`] (the one
/// constant, in the crate the ONNX fuzz target, which compiles this module
/// on its own, links too).
pub const MAX_ELEMENTS: i64 = tcc_abi::MAX_TENSOR_ELEMENTS;

/// The element count of a shape from untrusted input: every dimension
/// non-negative and the product at most [`MAX_ELEMENTS`] (checked
/// arithmetic; [`tcc_abi::checked_element_count`]).
pub fn checked_numel(shape: &[i64]) -> Option<i64> {
    tcc_abi::checked_element_count(shape)
}

/// A shape for messages: `3x224x224`, `[]` for a scalar.
pub fn shape_text(shape: &[i64]) -> String {
    if shape.is_empty() {
        return "[]".into();
    }
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// IEEE half-precision bits to f32.
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = ((bits >> 15) & 1) as u32;
    let exponent = ((bits >> 10) & 0x1f) as u32;
    let mantissa = (bits & 0x3ff) as u32;
    let value = if exponent == 0 {
        // Zero or subnormal: mantissa * 2^-24.
        (mantissa as f32) * f32::from_bits(0x3380_0000)
    } else if exponent == 31 {
        if mantissa == 0 {
            f32::INFINITY
        } else {
            f32::NAN
        }
    } else {
        f32::from_bits(((exponent + 127 - 15) << 23) | (mantissa << 13))
    };
    if sign == 1 { -value } else { value }
}

/// f32 to IEEE half-precision bits, rounding to nearest even.
pub fn f32_to_f16(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    if value.is_nan() {
        return sign | 0x7e00;
    }
    let magnitude = value.abs();
    if magnitude >= 65520.0 {
        return sign | 0x7c00;
    }
    if magnitude < f32::from_bits(0x3880_0000) {
        // Below the smallest normal half (2^-14): subnormal, in units of 2^-24.
        let units = (magnitude * 16_777_216.0).round_ties_even() as u16;
        return sign | units;
    }
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    let mut half = ((exponent as u32) << 10) | (mantissa >> 13);
    let rest = mantissa & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && half & 1 == 1) {
        half += 1;
    }
    sign | half as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_trips() {
        for value in [
            0.0f32,
            1.0,
            -2.5,
            65504.0,
            6.1035156e-5,
            5.9604645e-8,
            0.33325195,
        ] {
            assert_eq!(f16_to_f32(f32_to_f16(value)), value, "{value}");
        }
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn types_print_as_mlir() {
        assert_eq!(TType::new(DType::F32, vec![2, 3]).mlir(), "tensor<2x3xf32>");
        assert_eq!(TType::new(DType::Bool, vec![]).mlir(), "tensor<i1>");
        assert_eq!(checked_numel(&[-1, 2]), None);
        assert_eq!(checked_numel(&[i64::MAX, 2]), None);
        assert_eq!(checked_numel(&[]), Some(1));
    }
}
