//! Indexing maps and iterator types of linalg structured ops, read and
//! built through the MLIR C API: affine maps as [`AffineMap`] values
//! (identity queries by `mlirAffineMapIsIdentity`), iterator types as
//! `#linalg.iterator_type<...>` attributes compared by identity, never by
//! their printed text.

use melior::Context;
use melior::ir::attribute::{ArrayAttribute, AttributeLike};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{AffineExpr, AffineMap, Attribute};

/// The affine map held by an affine map attribute; `None` for any other
/// attribute.
pub fn affine_map<'c>(attribute: Attribute<'c>) -> Option<AffineMap<'c>> {
    let raw = attribute.to_raw();
    if !unsafe { mlir_sys::mlirAttributeIsAAffineMap(raw) } {
        return None;
    }
    Some(unsafe { AffineMap::from_raw(mlir_sys::mlirAffineMapAttrGetValue(raw)) })
}

/// `map` as an attribute (for `indexing_maps`).
pub fn map_attribute<'c>(map: AffineMap<'c>) -> Attribute<'c> {
    unsafe { Attribute::from_raw(mlir_sys::mlirAffineMapAttrGet(map.to_raw())) }
}

/// `(d0, ..., d{rank-1}) -> (d0, ..., d{rank-1})` as an attribute.
pub fn identity_map_attribute(context: &Context, rank: usize) -> Attribute<'_> {
    map_attribute(AffineMap::multi_dim_identity(context, rank))
}

/// `(d0, ..., d{dims-1}) -> (d{results[0]}, d{results[1]}, ...)` as an
/// attribute (a projection or permutation of the loop dimensions).
pub fn projection_map_attribute<'c>(
    context: &'c Context,
    dims: usize,
    results: &[usize],
) -> Attribute<'c> {
    let exprs: Vec<_> = results
        .iter()
        .map(|&d| AffineExpr::dim(context, d))
        .collect();
    map_attribute(AffineMap::new(context, dims, 0, &exprs))
}

/// Whether `attribute` is an affine map attribute holding an identity map
/// (as many results as dimensions, `d0, d1, ...` in order, no symbols).
pub fn is_identity_map(attribute: Attribute) -> bool {
    affine_map(attribute).is_some_and(|map| map.is_identity())
}

/// The `indexing_maps` of a linalg structured op, one per operand; `None`
/// when the op has no such attribute (or an element is not an affine map).
pub fn indexing_maps<'c>(op: OperationRef<'c, 'c>) -> Option<Vec<AffineMap<'c>>> {
    let maps = ArrayAttribute::try_from(op.attribute("indexing_maps").ok()?).ok()?;
    (0..maps.len())
        .map(|i| affine_map(maps.element(i).ok()?))
        .collect()
}

/// A loop's kind in a linalg structured op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IteratorType {
    Parallel,
    Reduction,
}

impl IteratorType {
    fn text(self) -> &'static str {
        match self {
            Self::Parallel => "#linalg.iterator_type<parallel>",
            Self::Reduction => "#linalg.iterator_type<reduction>",
        }
    }

    /// This iterator type as a `#linalg.iterator_type<...>` attribute of
    /// `context` (the linalg dialect is loaded on the way).
    fn raw_attribute(self, context: mlir_sys::MlirContext) -> mlir_sys::MlirAttribute {
        let text = self.text();
        let text = mlir_sys::MlirStringRef {
            data: text.as_ptr() as *const _,
            length: text.len(),
        };
        unsafe { mlir_sys::mlirAttributeParseGet(context, text) }
    }

    /// This iterator type as an attribute (for building `iterator_types`).
    pub fn attribute(self, context: &Context) -> Attribute<'_> {
        unsafe { Attribute::from_raw(self.raw_attribute(context.to_raw())) }
    }

    /// The iterator type `attribute` holds, compared as attributes; `None`
    /// for any other attribute.
    pub fn of(attribute: Attribute) -> Option<Self> {
        let context = unsafe { mlir_sys::mlirAttributeGetContext(attribute.to_raw()) };
        [Self::Parallel, Self::Reduction]
            .into_iter()
            .find(|kind| unsafe {
                mlir_sys::mlirAttributeEqual(kind.raw_attribute(context), attribute.to_raw())
            })
    }
}

/// The `iterator_types` of a linalg structured op (`linalg.generic` and
/// ops that store them); `None` when the op has no such attribute or an
/// element is not an iterator type.
pub fn iterator_types(op: OperationRef) -> Option<Vec<IteratorType>> {
    let types = ArrayAttribute::try_from(op.attribute("iterator_types").ok()?).ok()?;
    (0..types.len())
        .map(|i| IteratorType::of(types.element(i).ok()?))
        .collect()
}

/// Whether `op` stores iterator types and one of them is a reduction.
pub fn has_reduction_iterator(op: OperationRef) -> bool {
    iterator_types(op).is_some_and(|types| types.contains(&IteratorType::Reduction))
}

/// An `iterator_types` array attribute for `types`.
pub fn iterator_types_attribute<'c>(context: &'c Context, types: &[IteratorType]) -> Attribute<'c> {
    let elements: Vec<_> = types.iter().map(|t| t.attribute(context)).collect();
    ArrayAttribute::new(context, &elements).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{first_op, parse};

    const GENERIC: &str = r#"
        #id = affine_map<(d0, d1) -> (d0, d1)>
        #row = affine_map<(d0, d1) -> (d0)>
        func.func @f(%a: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
          %0 = linalg.generic {indexing_maps = [#id, #row],
                               iterator_types = ["parallel", "reduction"]}
              ins(%a : tensor<4x8xf32>) outs(%b : tensor<4xf32>) {
          ^bb0(%x: f32, %acc: f32):
            %s = arith.addf %x, %acc : f32
            linalg.yield %s : f32
          } -> tensor<4xf32>
          return %0 : tensor<4xf32>
        }
    "#;

    #[test]
    fn reads_indexing_maps_and_identity() {
        let context = tcc_dialects::new_context();
        let module = parse(&context, GENERIC);
        let generic = first_op(&module, "linalg.generic");
        let maps = indexing_maps(generic).unwrap();
        assert_eq!(maps.len(), 2);
        assert!(maps[0].is_identity());
        assert!(!maps[1].is_identity());
        assert_eq!(maps[1].dim_count(), 2);
        assert_eq!(maps[1].result_count(), 1);
        assert!(indexing_maps(first_op(&module, "func.func")).is_none());
        let id = identity_map_attribute(&context, 2);
        assert!(is_identity_map(id));
        assert_eq!(affine_map(id), Some(maps[0]));
        assert!(!is_identity_map(map_attribute(maps[1])));
        assert_eq!(
            affine_map(projection_map_attribute(&context, 2, &[0])),
            Some(maps[1])
        );
        assert_eq!(projection_map_attribute(&context, 2, &[0, 1]), id);
    }

    #[test]
    fn reads_and_builds_iterator_types() {
        let context = tcc_dialects::new_context();
        let module = parse(&context, GENERIC);
        let generic = first_op(&module, "linalg.generic");
        assert_eq!(
            iterator_types(generic),
            Some(vec![IteratorType::Parallel, IteratorType::Reduction])
        );
        assert!(has_reduction_iterator(generic));
        assert!(!has_reduction_iterator(first_op(&module, "linalg.yield")));
        let built = iterator_types_attribute(&context, &[IteratorType::Parallel]);
        assert_eq!(
            built,
            generic
                .attribute("iterator_types")
                .map(|a| {
                    let a = ArrayAttribute::try_from(a).unwrap();
                    ArrayAttribute::new(&context, &[a.element(0).unwrap()]).into()
                })
                .unwrap()
        );
        let string = melior::ir::attribute::StringAttribute::new(&context, "parallel");
        assert_eq!(IteratorType::of(string.into()), None);
    }
}
