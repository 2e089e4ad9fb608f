//! The typed builder of `linalg.generic` bodies: the op importers build a
//! body from block arguments, `arith`/`math` ops, `linalg.index` and
//! `tensor.extract` of values defined outside, each op recorded with its
//! operands, typed attributes and result type; the value returned to the
//! emitter is yielded. The op importers write no MLIR text for bodies:
//! the emitter alone turns the recorded ops into IR.

use super::super::dtype::DType;
use super::Val;
use super::ir::Use;

/// The type of a scalar inside a body: a tensor element type or `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    Elem(DType),
    Index,
}

impl From<DType> for Scalar {
    fn from(d: DType) -> Self {
        Scalar::Elem(d)
    }
}

/// A value of a body: a block argument or an op's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sv {
    pub(super) id: usize,
    pub ty: Scalar,
}

impl Sv {
    /// Which value: block argument `i` for `i` below the argument count,
    /// else the result of the body's op `i - count`.
    pub fn index(self) -> usize {
        self.id
    }
}

/// `arith.cmpi` predicates (the attribute's integer values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IPred {
    Eq = 0,
    Ne = 1,
    Slt = 2,
    Sle = 3,
    Sgt = 4,
    Sge = 5,
    Ult = 6,
    Ule = 7,
    Ugt = 8,
    Uge = 9,
}

/// `arith.cmpf` predicates (the attribute's integer values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FPred {
    Oeq = 1,
    Ogt = 2,
    Oge = 3,
    Olt = 4,
    Ole = 5,
    One = 6,
    Ord = 7,
    Ueq = 8,
    Ugt = 9,
    Uge = 10,
    Ult = 11,
    Ule = 12,
    Une = 13,
    Uno = 14,
}

/// A typed attribute of a body op.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyAttr {
    /// An integer (or `i1`, or `index`) of the given type.
    Int(i64, Scalar),
    /// A float of the given type.
    Float(f64, DType),
    /// An integer of the given type that is a symbolic dimension's extent
    /// (`k` times arguments' extents), read at run time: the value of an
    /// `arith.constant` the two probe imports gave different multiples
    /// of the probes (`importer/symbolic.rs`).
    Extent(super::ir::RuntimeExtent, Scalar),
}

/// One recorded op: `name(operands) {attrs} -> result`.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyOp {
    pub name: &'static str,
    /// A tensor defined outside the body, read first (`tensor.extract`).
    pub tensor: Option<Use>,
    pub operands: Vec<Sv>,
    pub attrs: Vec<(&'static str, BodyAttr)>,
    pub result: Sv,
}

/// A body under construction: the block arguments (the inputs' elements,
/// then the output's) and the ops, in order.
pub struct Body {
    args: Vec<Scalar>,
    ops: Vec<BodyOp>,
    next: usize,
}

impl Body {
    /// A body with block arguments of the given types.
    pub(super) fn new(args: Vec<Scalar>) -> Self {
        let next = args.len();
        Self {
            args,
            ops: Vec::new(),
            next,
        }
    }

    /// The block arguments.
    pub fn args(&self) -> Vec<Sv> {
        self.args
            .iter()
            .enumerate()
            .map(|(id, &ty)| Sv { id, ty })
            .collect()
    }

    fn push(
        &mut self,
        name: &'static str,
        tensor: Option<Use>,
        operands: &[Sv],
        attrs: Vec<(&'static str, BodyAttr)>,
        ty: Scalar,
    ) -> Sv {
        let result = Sv { id: self.next, ty };
        self.next += 1;
        self.ops.push(BodyOp {
            name,
            tensor,
            operands: operands.to_vec(),
            attrs,
            result,
        });
        result
    }

    /// `arith.constant` of `value` in type `ty` (integer, `i1` or float by
    /// the type).
    pub fn constant(&mut self, value: f64, ty: DType) -> Sv {
        let attr = if ty.is_float() {
            BodyAttr::Float(value, ty)
        } else {
            BodyAttr::Int(value as i64, Scalar::Elem(ty))
        };
        self.push(
            "arith.constant",
            None,
            &[],
            vec![("value", attr)],
            ty.into(),
        )
    }

    /// An integer `arith.constant` (exact for every i64).
    pub fn int(&mut self, value: i64, ty: DType) -> Sv {
        let attr = BodyAttr::Int(value, Scalar::Elem(ty));
        self.push(
            "arith.constant",
            None,
            &[],
            vec![("value", attr)],
            ty.into(),
        )
    }

    /// An `index` `arith.constant`.
    pub fn index_constant(&mut self, value: i64) -> Sv {
        let attr = BodyAttr::Int(value, Scalar::Index);
        self.push(
            "arith.constant",
            None,
            &[],
            vec![("value", attr)],
            Scalar::Index,
        )
    }

    /// `linalg.index dim`: the iteration's position along loop `dim`.
    pub fn index(&mut self, dim: usize) -> Sv {
        let attr = BodyAttr::Int(dim as i64, Scalar::Elem(DType::I64));
        self.push(
            "linalg.index",
            None,
            &[],
            vec![("dim", attr)],
            Scalar::Index,
        )
    }

    /// An op whose result has its first operand's type (`arith.addf`,
    /// `arith.maxsi`, `math.sqrt`, ...).
    pub fn op(&mut self, name: &'static str, operands: &[Sv]) -> Sv {
        let ty = operands[0].ty;
        self.push(name, None, operands, Vec::new(), ty)
    }

    /// A conversion (`arith.sitofp`, `arith.index_cast`, ...) to `to`.
    pub fn cast(&mut self, name: &'static str, x: Sv, to: impl Into<Scalar>) -> Sv {
        self.push(name, None, &[x], Vec::new(), to.into())
    }

    /// `arith.cmpi`.
    pub fn cmpi(&mut self, predicate: IPred, a: Sv, b: Sv) -> Sv {
        let attr = BodyAttr::Int(predicate as i64, Scalar::Elem(DType::I64));
        let ty = DType::Bool.into();
        self.push("arith.cmpi", None, &[a, b], vec![("predicate", attr)], ty)
    }

    /// `arith.cmpf`.
    pub fn cmpf(&mut self, predicate: FPred, a: Sv, b: Sv) -> Sv {
        let attr = BodyAttr::Int(predicate as i64, Scalar::Elem(DType::I64));
        let ty = DType::Bool.into();
        self.push("arith.cmpf", None, &[a, b], vec![("predicate", attr)], ty)
    }

    /// `arith.select`.
    pub fn select(&mut self, condition: Sv, a: Sv, b: Sv) -> Sv {
        self.push("arith.select", None, &[condition, a, b], Vec::new(), a.ty)
    }

    /// `tensor.extract tensor[indices]` of a tensor defined outside.
    pub fn extract(&mut self, tensor: &Val, indices: &[Sv]) -> Sv {
        let ty = tensor.dtype().into();
        self.push(
            "tensor.extract",
            Some(tensor.operand()),
            indices,
            Vec::new(),
            ty,
        )
    }

    /// The recorded ops (moved out).
    pub(super) fn into_ops(self) -> Vec<BodyOp> {
        self.ops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_record_operands_typed_attributes_and_result_types() {
        let mut b = Body::new(vec![DType::F32.into(), DType::F32.into()]);
        let a = b.args();
        let zero = b.constant(0.0, DType::F32);
        let below = b.cmpf(FPred::Olt, a[0], zero);
        let i = b.index(2);
        let r = b.select(below, zero, a[0]);
        let ops = b.into_ops();
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[0].name, "arith.constant");
        assert_eq!(
            ops[0].attrs,
            vec![("value", BodyAttr::Float(0.0, DType::F32))]
        );
        assert_eq!(ops[1].operands, vec![a[0], zero]);
        assert_eq!(
            ops[1].attrs,
            vec![("predicate", BodyAttr::Int(4, Scalar::Elem(DType::I64)))]
        );
        assert_eq!(ops[1].result.ty, Scalar::Elem(DType::Bool));
        assert_eq!(ops[2].name, "linalg.index");
        assert_eq!((r.ty, i.ty), (Scalar::Elem(DType::F32), Scalar::Index));
    }
}
