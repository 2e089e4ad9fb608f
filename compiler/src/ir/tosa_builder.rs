//! Builds TOSA ops in front of an existing op, computing result types from
//! the operand shapes. Used by rewrites that expand one op into several.

use melior::Context;
use melior::ir::attribute::{DenseElementsAttribute, IntegerAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::{IntegerType, RankedTensorType};
use melior::ir::{
    Attribute, BlockLike, BlockRef, Identifier, Location, Type, TypeLike, Value, ValueLike,
};

use super::types::{StaticTensor, broadcast_shapes};
use crate::ir::error::PassError;

pub struct TosaBuilder<'c> {
    context: &'c Context,
    block: BlockRef<'c, 'c>,
    anchor: OperationRef<'c, 'c>,
    location: Location<'c>,
}

impl<'c> TosaBuilder<'c> {
    /// A builder that inserts right before `anchor`, at its location.
    pub fn before(
        context: &'c Context,
        anchor: OperationRef<'c, 'c>,
    ) -> Result<Self, PassError<'c>> {
        let location = anchor.location();
        let block = anchor
            .block()
            .ok_or_else(|| PassError::at(location, "op is not in a block"))?;
        Ok(Self {
            context,
            block,
            anchor,
            location,
        })
    }

    pub fn context(&self) -> &'c Context {
        self.context
    }

    pub fn location(&self) -> Location<'c> {
        self.location
    }

    pub fn error(&self, message: impl Into<String>) -> PassError<'c> {
        PassError::at(self.location, message)
    }

    /// Static tensor type of a value, or an error naming what is wrong.
    pub fn tensor(&self, value: Value<'c, 'c>) -> Result<StaticTensor<'c>, PassError<'c>> {
        StaticTensor::of(value.r#type())
            .ok_or_else(|| self.error("expected a statically shaped ranked tensor"))
    }

    /// Builds op `name` with one result of type `result` before the anchor.
    pub fn insert(
        &self,
        name: &str,
        operands: &[Value<'c, 'c>],
        result: Type<'c>,
        attributes: &[(&str, Attribute<'c>)],
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let attributes: Vec<_> = attributes
            .iter()
            .map(|(n, a)| (Identifier::new(self.context, n), *a))
            .collect();
        let op = OperationBuilder::new(name, self.location)
            .add_operands(operands)
            .add_results(&[result])
            .add_attributes(&attributes)
            .build()
            .map_err(|e| self.error(format!("cannot build {name}: {e}")))?;
        let op = self.block.insert_operation_before(self.anchor, op);
        Ok(op.result(0).map_err(|e| self.error(e.to_string()))?.into())
    }

    /// An elementwise op whose result has the operand's type.
    pub fn unary(&self, name: &str, x: Value<'c, 'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
        self.insert(name, &[x], x.r#type(), &[])
    }

    /// A broadcasting elementwise op of two equal-rank operands.
    pub fn binary(
        &self,
        name: &str,
        a: Value<'c, 'c>,
        b: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let result = self.broadcast_type(a, b)?;
        self.insert(name, &[a, b], result, &[])
    }

    fn broadcast_type(
        &self,
        a: Value<'c, 'c>,
        b: Value<'c, 'c>,
    ) -> Result<Type<'c>, PassError<'c>> {
        // A dynamic extent (`kDynamic`) broadcasts as any other: equal to
        // the other operand's, or against 1.
        let ranked = |v: Value<'c, 'c>| {
            StaticTensor::ranked(v.r#type()).ok_or_else(|| self.error("expected a ranked tensor"))
        };
        let (ta, tb) = (ranked(a)?, ranked(b)?);
        let shape = broadcast_shapes(&ta.shape, &tb.shape).ok_or_else(|| {
            self.error(format!(
                "shapes {:?} and {:?} do not broadcast",
                ta.shape, tb.shape
            ))
        })?;
        Ok(StaticTensor {
            shape,
            element: ta.element,
        }
        .to_type())
    }

    /// `tosa.mul` with a zero shift.
    pub fn mul(&self, a: Value<'c, 'c>, b: Value<'c, 'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
        let result = self.broadcast_type(a, b)?;
        let i8 = IntegerType::new(self.context, 8).into();
        let shift_type = RankedTensorType::new(&[1], i8, None).into();
        let shift = self.constant(
            DenseElementsAttribute::i8_splat(shift_type, 0).into(),
            shift_type,
        )?;
        self.insert("tosa.mul", &[a, b, shift], result, &[])
    }

    /// A TOSA reduction along `axis`, keeping the reduced dimension as 1.
    pub fn reduce(
        &self,
        name: &str,
        x: Value<'c, 'c>,
        axis: usize,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let mut tensor = self.tensor(x)?;
        tensor.shape[axis] = 1;
        let i32 = IntegerType::new(self.context, 32).into();
        let axis_attr = IntegerAttribute::new(i32, axis as i64).into();
        self.insert(name, &[x], tensor.to_type(), &[("axis", axis_attr)])
    }

    /// A `tosa.const` of the given attribute and type.
    pub fn constant(
        &self,
        value: Attribute<'c>,
        ty: Type<'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        self.insert("tosa.const", &[], ty, &[("values", value)])
    }

    /// A `tosa.const` scalar broadcastable against tensors of `rank`
    /// (shape 1x...x1) with element type `element`.
    pub fn scalar(
        &self,
        value: f64,
        rank: usize,
        element: Type<'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let ty = StaticTensor {
            shape: vec![1; rank],
            element,
        }
        .to_type();
        let attr = if element.is_f64() {
            DenseElementsAttribute::f64_splat(ty, value)
        } else if element.is_f32() {
            DenseElementsAttribute::f32_splat(ty, value as f32)
        } else {
            let element_attr =
                melior::ir::attribute::FloatAttribute::new(self.context, element, value);
            DenseElementsAttribute::splat(ty, element_attr.into())
        };
        self.constant(attr.into(), ty)
    }

    /// A `tosa.const_shape` holding `values`.
    pub fn const_shape(&self, values: &[i64]) -> Result<Value<'c, 'c>, PassError<'c>> {
        let index = Type::index(self.context);
        let shape_type = RankedTensorType::new(&[values.len() as u64], index, None).into();
        let elements: Vec<Attribute> = values
            .iter()
            .map(|&d| IntegerAttribute::new(index, d).into())
            .collect();
        let dense = DenseElementsAttribute::new(shape_type, &elements)
            .map_err(|e| self.error(e.to_string()))?;
        let shape_value_type = Type::parse(self.context, &format!("!tosa.shape<{}>", values.len()))
            .ok_or_else(|| self.error("cannot build !tosa.shape type"))?;
        self.insert(
            "tosa.const_shape",
            &[],
            shape_value_type,
            &[("values", dense.into())],
        )
    }

    /// `tosa.reshape` to a static shape of the same element count, or to
    /// a shape with one dynamic dimension (`i64::MIN`, a symbolic batch:
    /// the `-1` extent the reshape infers) where `x` has one.
    pub fn reshape(&self, x: Value<'c, 'c>, shape: &[i64]) -> Result<Value<'c, 'c>, PassError<'c>> {
        let element = RankedTensorType::try_from(x.r#type())
            .map(|t| melior::ir::ShapedTypeLike::element(&t))
            .map_err(|_| self.error("expected a ranked tensor"))?;
        let extents: Vec<i64> = shape
            .iter()
            .map(|&d| if d == i64::MIN { -1 } else { d })
            .collect();
        let shape_value = self.const_shape(&extents)?;
        let result = StaticTensor {
            shape: shape.to_vec(),
            element,
        }
        .to_type();
        self.insert("tosa.reshape", &[x, shape_value], result, &[])
    }

    /// `tosa.transpose` of `x` by `perm` (result dimension `i` is input
    /// dimension `perm[i]`).
    pub fn transpose(
        &self,
        x: Value<'c, 'c>,
        perm: &[usize],
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        // A dynamic dimension (a symbolic batch) moves with its position.
        let result = super::types::permuted_tensor_type(x.r#type(), perm).ok_or_else(|| {
            self.error(format!(
                "{perm:?} is not a permutation of the dimensions of '{}'",
                x.r#type()
            ))
        })?;
        let perms: Vec<i32> = perm.iter().map(|&p| p as i32).collect();
        let perms = melior::ir::attribute::DenseI32ArrayAttribute::new(self.context, &perms);
        self.insert("tosa.transpose", &[x], result, &[("perms", perms.into())])
    }
}
