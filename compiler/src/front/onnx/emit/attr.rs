//! Typed attributes of the ops the op importers ask the emitter for
//! (`axis`, `perms`, convolution windows, `acc_type`, ...): the op
//! importers name an attribute's kind and value, and the emitter alone
//! decides how it is written.

use super::super::dtype::DType;
use super::{float_literal, string_literal};

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

    /// The attribute's MLIR literal.
    pub(super) fn literal(&self) -> String {
        let list = |values: &[i64]| {
            values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Attr::Int(v, d) => format!("{v} : {}", d.mlir()),
            Attr::Float(v, d) => format!("{} : {}", float_literal(*v, *d), d.mlir()),
            Attr::Str(s) => string_literal(s),
            Attr::Type(d) => d.mlir().to_string(),
            Attr::I64s(v) if v.is_empty() => "array<i64>".into(),
            Attr::I64s(v) => format!("array<i64: {}>", list(v)),
            Attr::I32s(v) if v.is_empty() => "array<i32>".into(),
            Attr::I32s(v) => format!("array<i32: {}>", list(v)),
            Attr::I64Elements(v) => format!("dense<[{}]> : tensor<{}xi64>", list(v), v.len()),
        }
    }
}

/// `name = literal, ...` of named attributes.
pub(super) fn dictionary(attrs: &[(&str, Attr)]) -> String {
    attrs
        .iter()
        .map(|(name, a)| format!("{name} = {}", a.literal()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_write_their_mlir_literals() {
        assert_eq!(Attr::i32(3usize).literal(), "3 : i32");
        assert_eq!(Attr::Float(1e-5, DType::F32).literal(), "1.0e-5 : f32");
        assert_eq!(Attr::Str("tanh".into()).literal(), "\"tanh\"");
        assert_eq!(Attr::Type(DType::F32).literal(), "f32");
        assert_eq!(Attr::I64s(vec![1, 2]).literal(), "array<i64: 1, 2>");
        assert_eq!(Attr::I64s(vec![]).literal(), "array<i64>");
        assert_eq!(Attr::I32s(vec![0, 2, 1]).literal(), "array<i32: 0, 2, 1>");
        assert_eq!(
            Attr::I64Elements(vec![1, 1, 2]).literal(),
            "dense<[1, 1, 2]> : tensor<3xi64>"
        );
        assert_eq!(
            dictionary(&[
                ("axis", Attr::i64(1)),
                ("epsilon", Attr::Float(0.5, DType::F32))
            ]),
            "axis = 1 : i64, epsilon = 5.0e-1 : f32"
        );
    }
}
