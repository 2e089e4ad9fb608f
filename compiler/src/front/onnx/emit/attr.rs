//! Typed attributes of the ops the op importers ask the emitter for
//! (`axis`, `perms`, convolution windows, `acc_type`, ...): the op
//! importers name an attribute's kind and value, and `front::build`
//! alone makes the MLIR attribute.

use super::super::dtype::DType;

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// An integer of the given type (`3 : i32`).
    Int(i64, DType),
    /// A float of the given type (`1.0e-5 : f32`).
    Float(f64, DType),
    /// A string (`"tanh"`).
    Str(String),
    /// A type (`acc_type = f32`).
    Type(DType),
    /// A dense i64 array (`array<i64: 1, 2>`).
    I64s(Vec<i64>),
    /// A dense i32 array (`array<i32: 0, 2, 1>`).
    I32s(Vec<i64>),
    /// An i64 elements attribute (`dense<[1, 2]> : tensor<2xi64>`; linalg
    /// named ops' strides and dilations).
    I64Elements(Vec<i64>),
}

impl Attr {
    /// An `i32` integer (TOSA's axes).
    pub fn i32(value: impl TryInto<i64>) -> Self {
        Attr::Int(value.try_into().unwrap_or(i64::MAX), DType::I32)
    }

    /// An `i64` integer (tcc's composites' axes).
    pub fn i64(value: impl TryInto<i64>) -> Self {
        Attr::Int(value.try_into().unwrap_or(i64::MAX), DType::I64)
    }
}
