//! Records the imported function as typed ops on numbered values
//! ([`ir`]): TOSA ops and tcc's composites, a few linalg/tensor ops where
//! TOSA has no match (elementwise and indexed `linalg.generic`s with
//! bodies built through [`Body`], named convolutions and poolings,
//! `linalg.fill`, `tensor.empty`), constants as their elements or as
//! `dense_resource` blobs (`front::build` makes the MLIR ops).
//!
//! Every helper returns the new value with its static type; broadcasting
//! helpers reshape operands to a common rank first, as TOSA requires.

use std::rc::Rc;

use super::dtype::{DType, TType};
use super::error::{ImportError, Result, bail};
use super::tensor::Const;

/// A value of the function being built, with its static type. The op
/// importers see only the type: which value it is, is the emitter's
/// business.
#[derive(Clone, Debug)]
pub struct Val {
    id: ValueId,
    pub ty: TType,
}

impl Val {
    /// The function's argument `index`.
    pub fn argument(index: usize, ty: TType) -> Self {
        Val {
            id: ValueId::Arg(index),
            ty,
        }
    }

    /// Whether the value is an argument of the function.
    pub fn is_argument(&self) -> bool {
        matches!(self.id, ValueId::Arg(_))
    }

    /// The same value read as another element type of the same MLIR
    /// type (a signed integer as the unsigned one of its width).
    pub fn relabeled(&self, dtype: DType) -> Self {
        Val {
            id: self.id,
            ty: self.ty.with_dtype(dtype),
        }
    }

    /// The same value with another type of its shape's rank (the
    /// symbolic-dimension merge's `?` extents).
    pub(crate) fn retyped(&self, ty: TType) -> Self {
        Val { id: self.id, ty }
    }

    /// A value that is never emitted, for code that needs only a type.
    pub fn placeholder(ty: TType) -> Self {
        Val {
            id: ValueId::None,
            ty,
        }
    }

    /// Which value it is.
    pub fn id(&self) -> ValueId {
        self.id
    }

    /// The value as an operand.
    pub(crate) fn operand(&self) -> Use {
        Use {
            id: self.id,
            ty: ResultType::Tensor(self.ty.clone()),
        }
    }

    pub fn shape(&self) -> &[i64] {
        &self.ty.shape
    }
    pub fn rank(&self) -> usize {
        self.ty.shape.len()
    }
    pub fn dtype(&self) -> DType {
        self.ty.dtype
    }
}

/// How constants with many elements are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstStyle {
    /// Their elements: a dense elements attribute (`dense<"0x...">`),
    /// which every tcc back end reads.
    Hex,
    /// A `dense_resource` attribute whose blob is the constant's bytes,
    /// shared with the mapped model file ([`Emitter::take_blobs`]), never
    /// copied where they are aligned: what `tcc compile` uses, so that a
    /// 500 MB model's weights are neither copied nor encoded.
    Resource,
}

/// A large constant's bytes ([`ConstStyle::Resource`]), named by its
/// `dense_resource` key.
#[derive(Clone, Debug)]
pub struct Blob {
    pub key: String,
    /// The raw little-endian elements (shared, not copied).
    pub bytes: bytes::Bytes,
    /// The element size: the alignment the blob asks for.
    pub alignment: usize,
}

/// Constants with at most this many elements are written as element lists.
pub const INLINE_ELEMENTS: usize = 64;

pub struct Emitter {
    ops: Vec<Op>,
    loc: Rc<str>,
    style: ConstStyle,
    blobs: Vec<Blob>,
    /// The first operand type with a zero dimension given to a TOSA op
    /// since it was last taken ([`Emitter::take_empty_operand`]):
    /// TOSA has no empty tensors, so the node walk turns it into an error
    /// naming the node rather than leaving it to the verifier.
    empty_operand: Option<(String, String)>,
}

mod attr;
mod body;
pub mod ir;
mod linalg;
mod literal;
mod tosa;

pub use attr::Attr;
pub use body::{Body, BodyAttr, BodyOp, FPred, IPred, Scalar, Sv};
use ir::{Elements, Kind, Op, ResultType, Use, ValueId};
pub use linalg::Operand;
pub use literal::{sanitize, string_literal};

/// numpy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

impl Emitter {
    pub fn new(style: ConstStyle) -> Self {
        Self {
            ops: Vec::new(),
            loc: Rc::from("unknown"),
            style,
            blobs: Vec::new(),
            empty_operand: None,
        }
    }

    /// The op and operand type of the first empty tensor given to a TOSA
    /// op since the last call, if any.
    pub fn take_empty_operand(&mut self) -> Option<(String, String)> {
        self.empty_operand.take()
    }

    /// The blobs of [`ConstStyle::Resource`] constants recorded so far
    /// (moved out).
    pub fn take_blobs(&mut self) -> Vec<Blob> {
        std::mem::take(&mut self.blobs)
    }

    /// The recorded ops (moved out).
    pub fn take_function(&mut self) -> Vec<Op> {
        std::mem::take(&mut self.ops)
    }

    /// Ops recorded from now on carry the location `loc("name")`.
    pub fn set_location(&mut self, name: &str) {
        self.loc = Rc::from(name);
    }

    /// Records `kind` with a result of type `ty`; returns the result's id.
    fn push(&mut self, kind: Kind, ty: ResultType) -> ValueId {
        self.ops.push(Op {
            kind,
            ty,
            loc: self.loc.clone(),
        });
        ValueId::Op(self.ops.len() - 1)
    }

    /// Records `kind` with a tensor result of type `ty`.
    fn push_tensor(&mut self, kind: Kind, ty: TType) -> Val {
        let id = self.push(kind, ResultType::Tensor(ty.clone()));
        Val { id, ty }
    }

    /// An op `name` on `operands` (values or shapes) with attributes and
    /// one result.
    fn op_uses(
        &mut self,
        name: &str,
        operands: Vec<Use>,
        attrs: &[(&str, Attr)],
        ty: ResultType,
    ) -> ValueId {
        if self.empty_operand.is_none()
            && name.starts_with("tosa.")
            && let Some(empty) = operands.iter().find_map(|u| match &u.ty {
                ResultType::Tensor(t) if t.shape.contains(&0) => Some(t.mlir()),
                _ => None,
            })
        {
            self.empty_operand = Some((name.to_string(), empty));
        }
        let attrs = attrs
            .iter()
            .map(|(n, a)| (n.to_string(), a.clone()))
            .collect();
        self.push(
            Kind::Plain {
                name: name.to_string(),
                operands,
                attrs,
            },
            ty,
        )
    }

    /// An op `name` on values with the attributes `attrs` and one result
    /// of type `ty`.
    pub fn op(&mut self, name: &str, operands: &[&Val], attrs: &[(&str, Attr)], ty: TType) -> Val {
        let operands = operands.iter().map(|v| v.operand()).collect();
        let id = self.op_uses(name, operands, attrs, ResultType::Tensor(ty.clone()));
        Val { id, ty }
    }

    // ---- constants -------------------------------------------------------

    /// How `c` is recorded: its elements, or a `dense_resource` blob
    /// (registered here, named after `hint`).
    fn elements(&mut self, c: &Const, hint: &str) -> Elements {
        let count = c.numel();
        if count == 0 || c.uniform() || count <= INLINE_ELEMENTS || c.dtype == DType::Bool {
            return Elements::Dense(c.clone());
        }
        // Blobs of the element types tcc's host writer reads back.
        let resource_type = matches!(c.dtype, DType::F32 | DType::I64 | DType::I32 | DType::I8);
        match self.style {
            ConstStyle::Resource if resource_type => {
                let key = format!("{}_b{}", sanitize(hint), self.blobs.len());
                self.blobs.push(Blob {
                    key: key.clone(),
                    bytes: c.bytes.clone(),
                    alignment: c.dtype.size().max(1),
                });
                Elements::Blob(key)
            }
            _ => Elements::Dense(c.clone()),
        }
    }

    /// A `tosa.const` of `c` (which must have a type tcc compiles).
    pub fn constant(&mut self, c: &Const, hint: &str) -> Result<Val> {
        if !c.dtype.in_graph() {
            bail!(
                "constant {hint} has element type {}, which tcc does not support",
                c.dtype
            );
        }
        let ty = c.ty();
        if ty.numel() == 0 {
            // No elements (TOSA has no empty constants): an empty tensor.
            return Ok(self.empty(&ty));
        }
        let elements = self.elements(c, hint);
        Ok(self.push_tensor(Kind::Const(elements), ty))
    }

    /// A constant of `shape` with every element `value`.
    pub fn splat(&mut self, dtype: DType, shape: Vec<i64>, value: f64) -> Val {
        let c = if dtype.is_float() {
            Const::splat_f64(dtype, shape, value)
        } else {
            Const::splat_i64(dtype, shape, value as i64)
        };
        self.constant(&c, "splat").expect("splat of a graph type")
    }

    /// A scalar broadcastable against a rank-`rank` tensor (shape 1x...x1).
    pub fn scalar(&mut self, dtype: DType, rank: usize, value: f64) -> Val {
        self.splat(dtype, vec![1; rank], value)
    }

    /// A `tensor<1xT>` zero (TOSA zero points, pad values).
    pub fn zero_point(&mut self, dtype: DType) -> Val {
        self.splat(dtype, vec![1], 0.0)
    }

    /// `tosa.const_shape` for reshape/slice/pad/tile operands.
    pub fn shape_operand(&mut self, values: &[i64]) -> Use {
        let ty = ResultType::Shape(values.len());
        let id = self.push(Kind::ConstShape(values.to_vec()), ty.clone());
        Use { id, ty }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_operands_of_tosa_ops_are_reported_once() {
        let mut e = Emitter::new(ConstStyle::Hex);
        let x = Val::argument(0, TType::new(DType::F32, vec![2, 0]));
        let _ = e.unary("tosa.abs", &x);
        assert_eq!(
            e.take_empty_operand(),
            Some(("tosa.abs".to_string(), "tensor<2x0xf32>".to_string()))
        );
        assert_eq!(e.take_empty_operand(), None);
    }

    #[test]
    fn shapes_broadcast_like_numpy() {
        assert_eq!(broadcast_shapes(&[2, 3], &[3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[2, 1], &[1, 3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[2, 3], &[2]), None);
        assert_eq!(broadcast_shapes(&[], &[4]), Some(vec![4]));
        assert_eq!(sanitize("onnx::Conv_3"), "onnx__Conv_3");
        assert_eq!(sanitize("0"), "_0");
    }
}
