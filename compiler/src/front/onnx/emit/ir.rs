//! The function the emitter records: typed ops on numbered values (no
//! text). The symbolic-dimension import merges two recorded functions op
//! by op (`importer/symbolic.rs`); `front::build` makes MLIR ops of one.

use std::rc::Rc;

use super::super::dtype::TType;
use super::super::tensor::Const;
use super::attr::Attr;
use super::body::{BodyOp, Scalar, Sv};

/// Which value: a function argument, the result of a recorded op, or
/// none (a placeholder that is never emitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueId {
    Arg(usize),
    Op(usize),
    None,
}

/// The type of an op's result: a tensor, or TOSA's `!tosa.shape<N>`.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultType {
    Tensor(TType),
    Shape(usize),
}

/// An operand: a value and its type.
#[derive(Clone, Debug, PartialEq)]
pub struct Use {
    pub id: ValueId,
    pub ty: ResultType,
}

/// How a `tosa.const`'s elements are given.
#[derive(Clone, Debug)]
pub enum Elements {
    /// The elements themselves (a dense elements attribute).
    Dense(Const),
    /// A `dense_resource` whose bytes are the import's [`super::Blob`] of
    /// this key.
    Blob(String),
}

impl PartialEq for Elements {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Elements::Dense(a), Elements::Dense(b)) => {
                a.dtype == b.dtype && a.shape == b.shape && a.splat == b.splat && a.bytes == b.bytes
            }
            (Elements::Blob(a), Elements::Blob(b)) => a == b,
            _ => false,
        }
    }
}

/// A result of a `linalg.generic` operand's indexing map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expr {
    /// Loop dimension `d`.
    Dim(usize),
    /// The constant 0 (a broadcast dimension of size 1).
    Zero,
}

/// A `linalg.generic`: its loops (`true` for a reduction), operands with
/// their indexing maps, the block arguments' types and the body.
#[derive(Clone, Debug, PartialEq)]
pub struct Generic {
    pub reductions: Vec<bool>,
    pub ins: Vec<(Use, Vec<Expr>)>,
    pub init: (Use, Vec<Expr>),
    pub args: Vec<Scalar>,
    pub body: Vec<BodyOp>,
    pub yielded: Sv,
}

/// The extent of a result's `?` dimension at run time: `factor` times
/// the product of the graph arguments' extents `(argument, axis)` (the
/// monomial of symbolic dimensions `importer/symbolic.rs` found).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeExtent {
    pub factor: i64,
    pub dims: Vec<(usize, usize)>,
}

/// What a [`Kind::Broadcast`] repeats.
#[derive(Clone, Debug, PartialEq)]
pub enum Broadcasted {
    /// A recorded value.
    Value(Use),
    /// Constant elements (a `tosa.const` of their own shape).
    Elements(Elements),
    /// Values that also grow along one dynamic axis: `seed + i * step`
    /// at index `i` along `axis` (both constants with extent 1 there; an
    /// `arange` over the batch, a gather's flat indices over batch x
    /// tokens).
    Ramp {
        seed: Const,
        step: Const,
        axis: usize,
    },
}

/// What an op is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// An op with operands and attributes and nothing else (TOSA's, tcc's
    /// composites).
    Plain {
        name: String,
        operands: Vec<Use>,
        attrs: Vec<(String, Attr)>,
    },
    /// `tosa.const`.
    Const(Elements),
    /// `tosa.const_shape`.
    ConstShape(Vec<i64>),
    /// `tensor.empty`, with the run-time extents of its type's `?`s.
    Empty(Vec<RuntimeExtent>),
    /// A `tensor.empty` filled with a value (`linalg.fill`), with the
    /// run-time extents of its type's `?`s.
    Fill(f64, Vec<RuntimeExtent>),
    /// A value or constant broadcast along its extent-1 axes to the
    /// result type, whose `?` extents are read at run time (a constant or
    /// `tosa.tile` whose size follows a symbolic dimension: the class
    /// token of a vision transformer expanded to the batch, a position
    /// index tiled to it).
    Broadcast {
        source: Broadcasted,
        extents: Vec<RuntimeExtent>,
    },
    /// The leading part of a constant of type `source` along the result
    /// type's `?` axes, whose extents are read at run time (a
    /// `linalg.generic` reading the constant at its own indices): a
    /// position-embedding table or a causal mask cut to the call's
    /// sequence length.
    ConstPrefix {
        elements: Elements,
        source: TType,
        extents: Vec<RuntimeExtent>,
    },
    /// A reshape whose result has several extents that follow symbolic
    /// dimensions (`batch x sequence x hidden` from `(batch*sequence) x
    /// hidden`), which `tosa.reshape`'s one inferred `-1` cannot state:
    /// the source collapsed to one axis and expanded to the result type,
    /// its `?` extents read at run time.
    Reshape {
        source: Use,
        extents: Vec<RuntimeExtent>,
    },
    /// A linalg named op (convolution, pooling) on `ins` into `init`.
    Named {
        name: String,
        attrs: Vec<(String, Attr)>,
        ins: Vec<Use>,
        init: Use,
    },
    Generic(Box<Generic>),
}

/// One recorded op, with its one result's type and its location (the
/// ONNX node's name).
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: Kind,
    pub ty: ResultType,
    pub loc: Rc<str>,
}

impl Op {
    /// The values the op reads (a body's `tensor.extract`s included).
    pub fn uses(&self) -> Vec<&Use> {
        match &self.kind {
            Kind::Plain { operands, .. } => operands.iter().collect(),
            Kind::Named { ins, init, .. } => ins.iter().chain([init]).collect(),
            Kind::Broadcast {
                source: Broadcasted::Value(u),
                ..
            }
            | Kind::Reshape { source: u, .. } => vec![u],
            Kind::Generic(g) => g
                .ins
                .iter()
                .map(|(u, _)| u)
                .chain([&g.init.0])
                .chain(g.body.iter().filter_map(|op| op.tensor.as_ref()))
                .collect(),
            _ => Vec::new(),
        }
    }
}
