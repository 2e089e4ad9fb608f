//! A memref type's layout read through the MLIR C API
//! (`mlirMemRefType*`, `mlirStridedLayoutAttr*`): shape, strides, offset,
//! element type, and which kind of layout it carries. Passes and back ends
//! ask this instead of looking for `strided<` in the printed type.

use melior::ir::{Type, TypeLike};

/// The value of a dynamic size, stride or offset (`?` in the printed type;
/// MLIR's `ShapedType::kDynamic`).
pub const DYNAMIC: i64 = i64::MIN;

/// How a memref's layout is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    /// No layout, or an identity affine map: row-major, offset 0.
    Identity,
    /// A `strided<[...], offset: ...>` attribute.
    Strided,
    /// Any other affine map.
    AffineMap,
}

/// A memref type's shape, element type and layout.
#[derive(Debug, Clone)]
pub struct MemRefLayout<'c> {
    /// Dimension sizes ([`DYNAMIC`] where unknown).
    pub shape: Vec<i64>,
    /// Elements between neighbours along each dimension ([`DYNAMIC`] where
    /// unknown); `None` when the layout is an affine map that strides
    /// cannot express.
    pub strides: Option<Vec<i64>>,
    /// Elements from the buffer's start to the first element ([`DYNAMIC`]
    /// where unknown; 0 when `strides` is `None`).
    pub offset: i64,
    pub element: Type<'c>,
    pub kind: LayoutKind,
}

impl<'c> MemRefLayout<'c> {
    /// `None` unless `ty` is a ranked memref type.
    pub fn of(ty: Type<'c>) -> Option<Self> {
        let raw = ty.to_raw();
        if !unsafe { mlir_sys::mlirTypeIsAMemRef(raw) } {
            return None;
        }
        let rank = usize::try_from(unsafe { mlir_sys::mlirShapedTypeGetRank(raw) }).ok()?;
        let shape = (0..rank as isize)
            .map(|i| unsafe { mlir_sys::mlirShapedTypeGetDimSize(raw, i) })
            .collect();
        let layout = unsafe { mlir_sys::mlirMemRefTypeGetLayout(raw) };
        let kind = if unsafe { mlir_sys::mlirAttributeIsAStridedLayout(layout) } {
            LayoutKind::Strided
        } else if unsafe {
            mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(raw))
        } {
            LayoutKind::Identity
        } else {
            LayoutKind::AffineMap
        };
        let mut strides = vec![0i64; rank];
        let mut offset = 0i64;
        let result = unsafe {
            mlir_sys::mlirMemRefTypeGetStridesAndOffset(raw, strides.as_mut_ptr(), &mut offset)
        };
        let strides = (result.value != 0).then_some(strides);
        if strides.is_none() {
            offset = 0;
        }
        Some(Self {
            shape,
            strides,
            offset,
            element: unsafe { Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(raw)) },
            kind,
        })
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Whether every size, stride and the offset are known.
    pub fn is_static(&self) -> bool {
        self.shape.iter().all(|&d| d != DYNAMIC)
            && self
                .strides
                .as_ref()
                .is_some_and(|s| s.iter().all(|&d| d != DYNAMIC))
            && self.offset != DYNAMIC
    }

    /// The strides and offset when all are static (`None` for a dynamic
    /// stride or offset, or a layout strides cannot express).
    pub fn static_strides(&self) -> Option<(Vec<i64>, i64)> {
        let strides = self.strides.as_ref()?;
        (self.offset != DYNAMIC && !strides.contains(&DYNAMIC))
            .then(|| (strides.clone(), self.offset))
    }

    /// The row-major strides of `shape` (what an identity layout has).
    pub fn row_major_strides(shape: &[i64]) -> Vec<i64> {
        let mut strides = vec![1i64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
        }
        strides
    }

    /// Whether the elements are packed row-major from offset 0, however the
    /// layout is written (`strided<[4, 1]>` on a `2x4` memref is).
    pub fn is_row_major_dense(&self) -> bool {
        self.is_static()
            && self.offset == 0
            && self.strides.as_deref() == Some(&Self::row_major_strides(&self.shape)[..])
    }
}

/// Whether `ty` is a memref whose layout is the identity (no `strided<...>`
/// nor affine map written in the type).
pub fn has_identity_layout(ty: Type) -> bool {
    MemRefLayout::of(ty).is_some_and(|layout| layout.kind == LayoutKind::Identity)
}

/// Memref ops whose result is a view of their operand 0 (the same buffer,
/// another shape or layout): what kernels rebuild inside and what the
/// passes follow from a view back to its buffer.
pub const VIEW_OPS: &[&str] = &[
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.subview",
    "memref.reinterpret_cast",
    "memref.cast",
    "memref.transpose",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::parse_type;

    #[test]
    fn reads_an_identity_memref() {
        let context = tcc_dialects::new_context();
        let ty = parse_type(&context, "memref<2x3x4xf16>");
        let layout = MemRefLayout::of(ty).unwrap();
        assert_eq!(layout.shape, vec![2, 3, 4]);
        assert_eq!(layout.strides, Some(vec![12, 4, 1]));
        assert_eq!(layout.offset, 0);
        assert_eq!(layout.element, parse_type(&context, "f16"));
        assert_eq!(layout.kind, LayoutKind::Identity);
        assert!(layout.is_row_major_dense());
        assert!(has_identity_layout(ty));
    }

    #[test]
    fn reads_strided_layouts_static_and_dynamic() {
        let context = tcc_dialects::new_context();
        let ty = parse_type(&context, "memref<2x4xf32, strided<[8, 1], offset: 4>>");
        let layout = MemRefLayout::of(ty).unwrap();
        assert_eq!(layout.kind, LayoutKind::Strided);
        assert_eq!(layout.strides, Some(vec![8, 1]));
        assert_eq!(layout.offset, 4);
        assert!(layout.is_static());
        assert!(!layout.is_row_major_dense());
        assert!(!has_identity_layout(ty));

        let packed = parse_type(&context, "memref<2x4xf32, strided<[4, 1]>>");
        assert!(MemRefLayout::of(packed).unwrap().is_row_major_dense());
        assert!(!has_identity_layout(packed));

        let dynamic = parse_type(&context, "memref<?x4xi32, strided<[?, 1], offset: ?>>");
        let layout = MemRefLayout::of(dynamic).unwrap();
        assert_eq!(layout.shape, vec![DYNAMIC, 4]);
        assert_eq!(layout.strides, Some(vec![DYNAMIC, 1]));
        assert_eq!(layout.offset, DYNAMIC);
        assert!(!layout.is_static());
    }

    #[test]
    fn reads_affine_map_layouts_and_rejects_other_types() {
        let context = tcc_dialects::new_context();
        let transposed = parse_type(
            &context,
            "memref<2x4xf32, affine_map<(d0, d1) -> (d1, d0)>>",
        );
        let layout = MemRefLayout::of(transposed).unwrap();
        assert_eq!(layout.kind, LayoutKind::AffineMap);
        assert!(!has_identity_layout(transposed));

        let shifted = parse_type(&context, "memref<4xf32, affine_map<(d0) -> (d0 + 2)>>");
        let layout = MemRefLayout::of(shifted).unwrap();
        assert_eq!(layout.kind, LayoutKind::AffineMap);
        assert_eq!(layout.strides, Some(vec![1]));
        assert_eq!(layout.offset, 2);

        assert!(MemRefLayout::of(parse_type(&context, "tensor<4xf32>")).is_none());
        assert!(MemRefLayout::of(parse_type(&context, "memref<*xf32>")).is_none());
    }
}
