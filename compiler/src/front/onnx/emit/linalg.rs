//! The linalg/tensor escape hatch, for what TOSA cannot express: an
//! elementwise `linalg.generic`, `linalg.generic`s with explicit indexing
//! maps, `linalg.fill`, named linalg ops and `tensor.empty`.

use super::super::dtype::TType;
use super::body::{Body, Scalar, Sv};
use super::ir::{Expr, Generic, Kind, Use};
use super::{Attr, Emitter, Val};

impl Emitter {
    /// A `linalg.generic` over `ins` into `init` (its loops `reductions`),
    /// whose body `body` builds from the block arguments (the inputs', then
    /// the output's); the value it returns is yielded.
    fn record_generic(
        &mut self,
        reductions: Vec<bool>,
        ins: Vec<(Use, Vec<Expr>)>,
        init: (&Val, Vec<Expr>),
        body: &dyn Fn(&mut Body, &[Sv], Sv) -> Sv,
    ) -> Val {
        let out = init.0.ty.clone();
        let mut args: Vec<Scalar> = ins
            .iter()
            .map(|(u, _)| match &u.ty {
                super::ir::ResultType::Tensor(t) => t.dtype.into(),
                super::ir::ResultType::Shape(_) => Scalar::Index,
            })
            .collect();
        args.push(out.dtype.into());
        let mut built = Body::new(args.clone());
        let values = built.args();
        let yielded = body(&mut built, &values[..ins.len()], values[ins.len()]);
        let generic = Generic {
            reductions,
            ins,
            init: (init.0.operand(), init.1),
            args,
            body: built.into_ops(),
            yielded,
        };
        self.push_tensor(Kind::Generic(Box::new(generic)), out)
    }

    /// An elementwise `linalg.generic` over `inputs` (numpy-broadcast to the
    /// result shape) whose body `body` builds from the inputs' block
    /// arguments; the value it returns is yielded.
    pub fn map(
        &mut self,
        inputs: &[&Val],
        out: TType,
        body: &dyn Fn(&mut Body, &[Sv]) -> Sv,
    ) -> Val {
        let rank = out.rank();
        let ins = inputs
            .iter()
            .map(|input| {
                let offset = rank - input.rank();
                let exprs = (0..input.rank())
                    .map(|j| {
                        if input.shape()[j] == 1 && out.shape[j + offset] != 1 {
                            Expr::Zero
                        } else {
                            Expr::Dim(j + offset)
                        }
                    })
                    .collect();
                (input.operand(), exprs)
            })
            .collect();
        let empty = self.empty(&out);
        let identity = (0..rank).map(Expr::Dim).collect();
        self.record_generic(vec![false; rank], ins, (&empty, identity), &|b, a, _| {
            body(b, a)
        })
    }

    /// A filled `tensor.empty` (linalg inits).
    pub fn filled(&mut self, ty: &TType, value: f64) -> Val {
        self.push_tensor(Kind::Fill(value, Vec::new()), ty.clone())
    }

    /// A linalg named op `name` (convolution or pooling) with `attrs`,
    /// inputs and an init; returns the result of the init's type.
    pub fn linalg_named(
        &mut self,
        name: &str,
        attrs: &[(&str, Attr)],
        inputs: &[&Val],
        init: &Val,
    ) -> Val {
        let kind = Kind::Named {
            name: name.to_string(),
            attrs: attrs
                .iter()
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect(),
            ins: inputs.iter().map(|v| v.operand()).collect(),
            init: init.operand(),
        };
        self.push_tensor(kind, init.ty.clone())
    }

    /// An empty tensor of a type (shape-only operands such as pooling windows).
    pub fn empty(&mut self, ty: &TType) -> Val {
        self.push_tensor(Kind::Empty(Vec::new()), ty.clone())
    }
}

/// An operand of [`Emitter::generic`]: a value and its indexing map, the
/// loop dimension each of its dimensions follows (a projection).
pub struct Operand<'a> {
    pub value: &'a Val,
    pub dims: Vec<usize>,
}

impl<'a> Operand<'a> {
    /// `value` indexed by the loop dimensions `dims`, in order.
    pub fn dims(value: &'a Val, dims: &[usize]) -> Self {
        Operand {
            value,
            dims: dims.to_vec(),
        }
    }

    fn map(&self) -> Vec<Expr> {
        self.dims.iter().map(|&d| Expr::Dim(d)).collect()
    }
}

impl Emitter {
    /// A `linalg.generic` over `loops` dimensions (those in `reductions`
    /// reduced, the others parallel) with explicit indexing maps and one
    /// output, initialised by `init`. `body` gets the block arguments of
    /// the inputs and of the accumulator; it may read `linalg.index` and
    /// `tensor.extract` tensors defined outside (data gathered at computed
    /// coordinates); the value it returns is yielded.
    pub fn generic(
        &mut self,
        loops: usize,
        reductions: &[usize],
        ins: &[Operand],
        init: Operand,
        body: &dyn Fn(&mut Body, &[Sv], Sv) -> Sv,
    ) -> Val {
        let iterators = (0..loops).map(|d| reductions.contains(&d)).collect();
        let uses = ins.iter().map(|o| (o.value.operand(), o.map())).collect();
        self.record_generic(iterators, uses, (init.value, init.map()), body)
    }
}
