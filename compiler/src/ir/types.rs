//! Reading static tensor shapes off MLIR types.

use melior::ir::r#type::RankedTensorType;
use melior::ir::{ShapedTypeLike, Type, TypeLike};

/// The most elements tcc accepts in one tensor (2^32), at the input of
/// `tcc compile` (`tcc-check-supported`) and in the ONNX importer alike
/// (one constant, `tcc_abi::MAX_TENSOR_ELEMENTS`). With it, every size tcc
/// computes from shapes (elements, bytes, work items, arena offsets) fits
/// in an `i64` with room to spare.
pub const MAX_TENSOR_ELEMENTS: i64 = tcc_abi::MAX_TENSOR_ELEMENTS;

/// The element count of `shape` when every dimension is non-negative and
/// the product is at most [`MAX_TENSOR_ELEMENTS`] (checked arithmetic).
pub fn checked_element_count(shape: &[i64]) -> Option<i64> {
    tcc_abi::checked_element_count(shape)
}

/// A statically shaped ranked tensor type: its dimensions and element type.
#[derive(Debug, Clone)]
pub struct StaticTensor<'c> {
    pub shape: Vec<i64>,
    pub element: Type<'c>,
}

impl<'c> StaticTensor<'c> {
    /// `None` unless `ty` is a ranked tensor with a static shape.
    pub fn of(ty: Type<'c>) -> Option<Self> {
        if !ty.is_ranked_tensor() {
            return None;
        }
        let tensor = RankedTensorType::try_from(ty).ok()?;
        if !tensor.has_static_shape() {
            return None;
        }
        let shape = (0..tensor.rank())
            .map(|i| unsafe { mlir_sys::mlirShapedTypeGetDimSize(tensor.to_raw(), i as isize) })
            .collect();
        Some(Self {
            shape,
            element: tensor.element(),
        })
    }

    /// As [`StaticTensor::of`], but a dynamic dimension (a symbolic batch)
    /// is kept as `ShapedType::kDynamic` (`i64::MIN`): for code that reads
    /// only the rank, the element type and the static dimensions.
    pub fn ranked(ty: Type<'c>) -> Option<Self> {
        if !ty.is_ranked_tensor() {
            return None;
        }
        let tensor = RankedTensorType::try_from(ty).ok()?;
        let shape = ranked_shape(ty)?
            .into_iter()
            .map(|d| d.unwrap_or(i64::MIN))
            .collect();
        Some(Self {
            shape,
            element: tensor.element(),
        })
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The element count (saturating: shapes past
    /// [`MAX_TENSOR_ELEMENTS`] are rejected at the input, but a pass run
    /// on its own must not overflow either).
    pub fn num_elements(&self) -> i64 {
        self.shape
            .iter()
            .fold(1i64, |n, &d| n.saturating_mul(d.max(0)))
    }

    pub fn to_type(&self) -> Type<'c> {
        let dims: Vec<u64> = self.shape.iter().map(|&d| d as u64).collect();
        RankedTensorType::new(&dims, self.element, None).into()
    }
}

/// The dimensions of any statically shaped type (tensor or memref).
pub fn static_shape(ty: Type) -> Option<Vec<i64>> {
    let raw = ty.to_raw();
    if !unsafe { mlir_sys::mlirTypeIsAShaped(raw) }
        || !unsafe { mlir_sys::mlirShapedTypeHasRank(raw) }
        || !unsafe { mlir_sys::mlirShapedTypeHasStaticShape(raw) }
    {
        return None;
    }
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(raw) };
    Some(
        (0..rank)
            .map(|i| unsafe { mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize) })
            .collect(),
    )
}

/// The dimensions of any ranked shaped type (tensor or memref), a dynamic
/// one (`?`) as `None`: what the passes that accept a symbolic leading
/// dimension (issue 33) read where [`static_shape`] would refuse.
pub fn ranked_shape(ty: Type) -> Option<Vec<Option<i64>>> {
    let raw = ty.to_raw();
    if !unsafe { mlir_sys::mlirTypeIsAShaped(raw) }
        || !unsafe { mlir_sys::mlirShapedTypeHasRank(raw) }
    {
        return None;
    }
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(raw) };
    Some(
        (0..rank)
            .map(|i| {
                if unsafe { mlir_sys::mlirShapedTypeIsDynamicDim(raw, i as isize) } {
                    None
                } else {
                    Some(unsafe { mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize) })
                }
            })
            .collect(),
    )
}

/// The ranked tensor type `ty` with its dimensions permuted (result
/// dimension `i` is dimension `perm[i]`), a dynamic one staying dynamic;
/// `None` unless `ty` is a ranked tensor of `perm`'s rank.
pub fn permuted_tensor_type<'c>(ty: Type<'c>, perm: &[usize]) -> Option<Type<'c>> {
    let tensor = RankedTensorType::try_from(ty).ok()?;
    let shape = ranked_shape(ty)?;
    if perm.len() != shape.len() || perm.iter().any(|&p| p >= shape.len()) {
        return None;
    }
    // `ShapedType::kDynamic` (i64::MIN) as melior's u64 extents.
    let dims: Vec<u64> = perm
        .iter()
        .map(|&p| shape[p].unwrap_or(i64::MIN) as u64)
        .collect();
    Some(RankedTensorType::new(&dims, tensor.element(), None).into())
}

/// Resolves a possibly negative axis against `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let rank = rank as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    (0..rank).contains(&axis).then_some(axis as usize)
}

/// NumPy-style broadcast of two equal-rank shapes (TOSA requires equal rank).
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    if a.len() != b.len() {
        return None;
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_resolve_from_either_end() {
        assert_eq!(normalize_axis(-1, 3), Some(2));
        assert_eq!(normalize_axis(0, 3), Some(0));
        assert_eq!(normalize_axis(3, 3), None);
        assert_eq!(normalize_axis(-4, 3), None);
    }

    #[test]
    fn shapes_broadcast_over_ones() {
        assert_eq!(
            broadcast_shapes(&[2, 1, 4], &[1, 3, 4]),
            Some(vec![2, 3, 4])
        );
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 3]), None);
        assert_eq!(broadcast_shapes(&[2], &[2, 1]), None);
    }
}
