//! An elementwise copy as a `linalg.generic` (identity maps, all parallel),
//! on buffers (no result) or on tensors (the copied tensor as result).

use melior::Context;
use melior::ir::attribute::{ArrayAttribute, DenseI32ArrayAttribute};
use melior::ir::operation::{Operation, OperationBuilder};
use melior::ir::{
    Block, BlockLike, Identifier, Location, Region, RegionLike, Type, TypeLike, Value, ValueLike,
};

use crate::ir::affine::{IteratorType, identity_map_attribute, iterator_types_attribute};
use crate::ir::error::PassError;

/// `linalg.generic ins(source) outs(target) { yield in }`; with
/// `result = Some(type)` on tensors.
pub fn elementwise_copy<'c>(
    context: &'c Context,
    location: Location<'c>,
    source: Value<'c, '_>,
    target: Value<'c, '_>,
    result: Option<Type<'c>>,
) -> Result<Operation<'c>, PassError<'c>> {
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(source.r#type().to_raw()) } as usize;
    let identity = identity_map_attribute(context, rank);
    let element = unsafe {
        Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(
            source.r#type().to_raw(),
        ))
    };
    let region = Region::new();
    let inner = region.append_block(Block::new(&[(element, location), (element, location)]));
    let input: Value = inner
        .argument(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into();
    inner.append_operation(
        OperationBuilder::new("linalg.yield", location)
            .add_operands(&[input])
            .build()
            .map_err(|e| PassError::at(location, e.to_string()))?,
    );
    let mut builder = OperationBuilder::new("linalg.generic", location)
        .add_operands(&[source, target])
        .add_attributes(&[
            (
                Identifier::new(context, "indexing_maps"),
                ArrayAttribute::new(context, &[identity, identity]).into(),
            ),
            (
                Identifier::new(context, "iterator_types"),
                iterator_types_attribute(context, &vec![IteratorType::Parallel; rank]),
            ),
            (
                Identifier::new(context, "operandSegmentSizes"),
                DenseI32ArrayAttribute::new(context, &[1, 1]).into(),
            ),
        ])
        .add_regions([region]);
    if let Some(result) = result {
        builder = builder.add_results(&[result]);
    }
    builder
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build a copy: {e}")))
}
