//! Constant tensors on the host: read from `dense<...>` and
//! `dense_resource<...>` attributes, computed on (transpose, broadcast,
//! elementwise f32 arithmetic, slices, concatenation) and written back as
//! dense attributes. Compile-time folding passes (`tcc-fold-constants`,
//! `tcc-fold-batch-norm`) and the host writer share it, so that every
//! constant, whatever its attribute kind, is read one way.

use melior::ir::attribute::{AttributeLike, DenseElementsAttribute};
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, Type, TypeLike, Value};

use super::types::StaticTensor;
use super::util::{defining_op, op_name};
use crate::ir::element_type::ElementType;

/// The most elements a folding pass materializes for one constant: beyond
/// it, the op stays and runs on the device (a guard against a broadcast of
/// a small constant into a huge one bloating the artifact).
pub const FOLD_ELEMENT_LIMIT: i64 = 1 << 26;

/// A constant tensor's shape, element type and little-endian bytes (splats
/// expanded, booleans one byte each).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstTensor {
    pub shape: Vec<i64>,
    pub element: ElementType,
    pub bytes: Vec<u8>,
}

fn element_of(ty: Type) -> Option<ElementType> {
    ElementType::of_type(unsafe {
        Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw()))
    })
}

fn shape_of(ty: Type) -> Result<Vec<i64>, String> {
    StaticTensor::of(ty)
        .map(|t| t.shape)
        .ok_or_else(|| format!("constant of type {ty} has no static shape"))
}

fn element_count(shape: &[i64]) -> Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| {
            usize::try_from(d).ok().and_then(|d| n.checked_mul(d))
        })
        .ok_or_else(|| format!("constant shape {shape:?} is too large"))
}

impl ConstTensor {
    /// Reads a `dense` or `dense_resource` elements attribute.
    pub fn from_attribute(attribute: Attribute) -> Result<Self, String> {
        let ty = attribute.r#type();
        let shape = shape_of(ty)?;
        let element = element_of(ty).ok_or_else(|| format!("unsupported constant type {ty}"))?;
        let count = element_count(&shape)?;
        let raw = attribute.to_raw();
        if unsafe { mlir_sys::mlirAttributeIsADenseResourceElements(raw) } {
            let bytes = resource_bytes(attribute, element, count)?;
            return Ok(Self {
                shape,
                element,
                bytes,
            });
        }
        let dense = DenseElementsAttribute::try_from(attribute)
            .map_err(|_| format!("constant {ty} is neither dense nor dense_resource"))?;
        let bytes = if element == ElementType::I1 {
            (0..count)
                .map(
                    |i| unsafe { mlir_sys::mlirDenseElementsAttrGetBoolValue(raw, i as isize) }
                        as u8,
                )
                .collect()
        } else if count == 0 {
            Vec::new()
        } else {
            let size = element.size_bytes();
            let data = dense.raw_data() as *const u8;
            let splat = unsafe { mlir_sys::mlirDenseElementsAttrIsSplat(raw) };
            let stored = if splat { size } else { size * count };
            if data.is_null() {
                return Err(format!("constant {ty} has no data"));
            }
            let stored_bytes = unsafe { std::slice::from_raw_parts(data, stored) };
            if splat {
                stored_bytes.repeat(count)
            } else {
                stored_bytes.to_vec()
            }
        };
        Ok(Self {
            shape,
            element,
            bytes,
        })
    }

    /// The bytes [`ConstTensor::from_attribute`] reads, borrowed from the
    /// attribute where it stores them as they are (a `dense_resource`
    /// blob, a dense attribute that is not a splat) and copied only where
    /// they must be converted (splats expanded, booleans normalized): the
    /// host writer writes weights without copying them.
    pub fn attribute_bytes<'c>(
        attribute: Attribute<'c>,
    ) -> Result<std::borrow::Cow<'c, [u8]>, String> {
        use std::borrow::Cow;
        let ty = attribute.r#type();
        let shape = shape_of(ty)?;
        let element = element_of(ty).ok_or_else(|| format!("unsupported constant type {ty}"))?;
        let count = element_count(&shape)?;
        let raw = attribute.to_raw();
        if element != ElementType::I1 && count > 0 {
            let size = element.size_bytes();
            let expected = count
                .checked_mul(size)
                .ok_or_else(|| format!("constant {ty} is too large"))?;
            if unsafe { mlir_sys::mlirAttributeIsADenseResourceElements(raw) } {
                // SAFETY: the blob lives as long as the context ('c).
                if let Some(blob) = unsafe { tcc_dialects::dense_resource_blob(raw) }
                    && blob.len() == expected
                {
                    return Ok(Cow::Borrowed(blob));
                }
            } else if let Ok(dense) = DenseElementsAttribute::try_from(attribute)
                && !unsafe { mlir_sys::mlirDenseElementsAttrIsSplat(raw) }
            {
                let data = dense.raw_data() as *const u8;
                if !data.is_null() {
                    // SAFETY: a dense attribute's storage is uniqued in and
                    // owned by the context ('c); non-splat storage holds
                    // every element.
                    return Ok(Cow::Borrowed(unsafe {
                        std::slice::from_raw_parts(data, expected)
                    }));
                }
            }
        }
        Self::from_attribute(attribute).map(|tensor| Cow::Owned(tensor.bytes))
    }

    /// The constant a value holds, when it is the result of `tosa.const`
    /// or `arith.constant` with a dense or dense_resource attribute.
    pub fn of_value(value: Value) -> Option<Self> {
        let op = defining_op(value)?;
        let attribute = match op_name(&op).as_str() {
            "tosa.const" => op.attribute("values").ok()?,
            "arith.constant" => op.attribute("value").ok()?,
            _ => return None,
        };
        Self::from_attribute(attribute).ok()
    }

    /// Whether `value` is produced by a constant op (without reading it).
    pub fn is_constant(value: Value) -> bool {
        defining_op(value)
            .is_some_and(|op| matches!(op_name(&op).as_str(), "tosa.const" | "arith.constant"))
    }

    pub fn len(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as f32 (`None` unless the element type is f32).
    pub fn f32s(&self) -> Option<Vec<f32>> {
        (self.element == ElementType::F32).then(|| {
            self.bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
    }

    pub fn from_f32s(shape: Vec<i64>, values: &[f32]) -> Self {
        Self {
            shape,
            element: ElementType::F32,
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// A dense elements attribute of type `ty` (whose shape and element
    /// type must match) holding these bytes; a splat when every element is
    /// the same.
    pub fn to_attribute<'c>(&self, ty: Type<'c>) -> Result<Attribute<'c>, String> {
        if element_of(ty) != Some(self.element) || shape_of(ty)? != self.shape {
            return Err(format!(
                "constant of {:?} {:?} does not match type {ty}",
                self.shape, self.element
            ));
        }
        if self.element == ElementType::I1 {
            return Err("boolean constants are not materialized by folding".into());
        }
        let size = self.element.size_bytes();
        let splat = self.bytes.len() >= size
            && self
                .bytes
                .chunks_exact(size)
                .all(|c| c == &self.bytes[..size]);
        let data: &[u8] = if splat {
            &self.bytes[..size]
        } else {
            &self.bytes
        };
        let raw = unsafe {
            mlir_sys::mlirDenseElementsAttrRawBufferGet(
                ty.to_raw(),
                data.len(),
                data.as_ptr() as *const std::ffi::c_void,
            )
        };
        if raw.ptr.is_null() {
            return Err(format!("cannot build a dense attribute of type {ty}"));
        }
        Ok(unsafe { Attribute::from_raw(raw) })
    }

    /// Row-major strides in elements.
    fn strides(shape: &[i64]) -> Vec<usize> {
        let mut strides = vec![1usize; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1].max(0) as usize;
        }
        strides
    }

    /// `tosa.transpose` semantics: result dimension `i` is input dimension
    /// `perm[i]`.
    pub fn transpose(&self, perm: &[usize]) -> Result<Self, String> {
        let rank = self.shape.len();
        let mut seen = vec![false; rank];
        if perm.len() != rank
            || perm
                .iter()
                .any(|&p| p >= rank || std::mem::replace(&mut seen[p], true))
        {
            return Err(format!("{perm:?} is not a permutation of rank {rank}"));
        }
        let size = self.element.size_bytes();
        let shape: Vec<i64> = perm.iter().map(|&p| self.shape[p]).collect();
        let in_strides = Self::strides(&self.shape);
        let moved: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
        let count = self.len();
        let mut bytes = Vec::with_capacity(count * size);
        let mut index = vec![0i64; rank];
        for _ in 0..count {
            let source: usize = index
                .iter()
                .zip(&moved)
                .map(|(&i, &s)| i as usize * s)
                .sum();
            bytes.extend_from_slice(&self.bytes[source * size..(source + 1) * size]);
            for axis in (0..rank).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(Self {
            shape,
            element: self.element,
            bytes,
        })
    }

    /// The same bytes under another shape of equal element count.
    pub fn reshape(&self, shape: &[i64]) -> Result<Self, String> {
        if element_count(shape)? != self.len() {
            return Err(format!("cannot reshape {:?} to {shape:?}", self.shape));
        }
        Ok(Self {
            shape: shape.to_vec(),
            ..self.clone()
        })
    }

    /// NumPy-style broadcast to `shape` (equal rank, size-1 dims repeated).
    pub fn broadcast_to(&self, shape: &[i64]) -> Result<Self, String> {
        if shape == self.shape.as_slice() {
            return Ok(self.clone());
        }
        if shape.len() != self.shape.len()
            || self
                .shape
                .iter()
                .zip(shape)
                .any(|(&have, &want)| have != want && have != 1)
        {
            return Err(format!("cannot broadcast {:?} to {shape:?}", self.shape));
        }
        let size = self.element.size_bytes();
        let in_strides = Self::strides(&self.shape);
        let steps: Vec<usize> = self
            .shape
            .iter()
            .zip(&in_strides)
            .map(|(&d, &s)| if d == 1 { 0 } else { s })
            .collect();
        let count = element_count(shape)?;
        let mut bytes = Vec::with_capacity(count * size);
        let mut index = vec![0i64; shape.len()];
        for _ in 0..count {
            let source: usize = index
                .iter()
                .zip(&steps)
                .map(|(&i, &s)| i as usize * s)
                .sum();
            bytes.extend_from_slice(&self.bytes[source * size..(source + 1) * size]);
            for axis in (0..shape.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(Self {
            shape: shape.to_vec(),
            element: self.element,
            bytes,
        })
    }

    /// `tosa.slice`: `size` elements from `start` along each dimension.
    pub fn slice(&self, start: &[i64], size: &[i64]) -> Result<Self, String> {
        let rank = self.shape.len();
        if start.len() != rank
            || size.len() != rank
            || (0..rank).any(|i| {
                start[i] < 0
                    || size[i] < 0
                    || start[i]
                        .checked_add(size[i])
                        .is_none_or(|e| e > self.shape[i])
            })
        {
            return Err(format!(
                "slice {start:?}+{size:?} is outside {:?}",
                self.shape
            ));
        }
        let bytes_per = self.element.size_bytes();
        let strides = Self::strides(&self.shape);
        let count = element_count(size)?;
        let mut bytes = Vec::with_capacity(count * bytes_per);
        let mut index = vec![0i64; rank];
        for _ in 0..count {
            let source: usize = (0..rank)
                .map(|a| (start[a] + index[a]) as usize * strides[a])
                .sum();
            bytes.extend_from_slice(&self.bytes[source * bytes_per..(source + 1) * bytes_per]);
            for axis in (0..rank).rev() {
                index[axis] += 1;
                if index[axis] < size[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(Self {
            shape: size.to_vec(),
            element: self.element,
            bytes,
        })
    }

    /// Concatenation along `axis` (all parts of one element type and equal
    /// other dimensions).
    pub fn concat(parts: &[Self], axis: usize) -> Result<Self, String> {
        let first = parts.first().ok_or("concatenation of nothing")?;
        let rank = first.shape.len();
        if axis >= rank
            || parts.iter().any(|p| {
                p.element != first.element
                    || p.shape.len() != rank
                    || (0..rank).any(|a| a != axis && p.shape[a] != first.shape[a])
            })
        {
            return Err("concatenated constants do not match".into());
        }
        let mut shape = first.shape.clone();
        shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
        let size = first.element.size_bytes();
        let outer: usize = first.shape[..axis].iter().map(|&d| d as usize).product();
        let mut bytes = Vec::with_capacity(element_count(&shape)? * size);
        for o in 0..outer {
            for part in parts {
                let inner: usize = part.shape[axis..].iter().map(|&d| d as usize).product();
                bytes.extend_from_slice(&part.bytes[o * inner * size..(o + 1) * inner * size]);
            }
        }
        Ok(Self {
            shape,
            element: first.element,
            bytes,
        })
    }

    /// An elementwise f32 combination of two constants broadcast to `shape`.
    pub fn zip_f32(
        &self,
        other: &Self,
        shape: &[i64],
        f: impl Fn(f32, f32) -> f32,
    ) -> Result<Self, String> {
        let a = self
            .broadcast_to(shape)?
            .f32s()
            .ok_or("not an f32 constant")?;
        let b = other
            .broadcast_to(shape)?
            .f32s()
            .ok_or("not an f32 constant")?;
        let values: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect();
        Ok(Self::from_f32s(shape.to_vec(), &values))
    }

    /// An elementwise f32 function of this constant.
    pub fn map_f32(&self, f: impl Fn(f32) -> f32) -> Result<Self, String> {
        let values: Vec<f32> = self
            .f32s()
            .ok_or("not an f32 constant")?
            .into_iter()
            .map(f)
            .collect();
        Ok(Self::from_f32s(self.shape.clone(), &values))
    }
}

/// The bytes of a `dense_resource` attribute, copied out of its blob after
/// checking that the blob exists and holds exactly the tensor's bytes: a
/// key with no blob in the resource section, or a blob shorter or longer
/// than the tensor, is an error, never a read outside the blob.
fn resource_bytes(
    attribute: Attribute,
    element: ElementType,
    count: usize,
) -> Result<Vec<u8>, String> {
    let size = match element {
        ElementType::F32 | ElementType::I32 => 4,
        ElementType::F64 | ElementType::I64 => 8,
        ElementType::I16 => 2,
        ElementType::I8 | ElementType::I1 => 1,
        other => {
            return Err(format!(
                "dense_resource constants of {other:?} are not supported"
            ));
        }
    };
    let described = crate::diagnostics::truncate_for_message(&attribute.to_string());
    let expected = count
        .checked_mul(size)
        .ok_or_else(|| format!("constant {described} is too large"))?;
    let blob = unsafe { tcc_dialects::dense_resource_blob(attribute.to_raw()) }.ok_or_else(|| {
        format!("constant {described} has no blob in the file's resource section (`{{-# dialect_resources: {{ builtin: {{ ... }} }} #-}}`)")
    })?;
    if blob.len() != expected {
        return Err(format!(
            "constant {described} has a blob of {} bytes, but its type needs {expected} ({count} elements of {size} bytes)",
            blob.len()
        ));
    }
    Ok(if element == ElementType::I1 {
        blob.iter().map(|&b| (b != 0) as u8).collect()
    } else {
        blob.to_vec()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iota(shape: &[i64]) -> ConstTensor {
        let n: i64 = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|v| v as f32).collect();
        ConstTensor::from_f32s(shape.to_vec(), &values)
    }

    #[test]
    fn transpose_moves_dimensions() {
        let t = iota(&[2, 3]).transpose(&[1, 0]).unwrap();
        assert_eq!(t.shape, vec![3, 2]);
        assert_eq!(t.f32s().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
        let nchw = iota(&[1, 2, 2, 3]);
        let nhwc = nchw.transpose(&[0, 2, 3, 1]).unwrap();
        assert_eq!(nhwc.shape, vec![1, 2, 3, 2]);
        // element (0, h=1, w=2, c=1) = nchw (0, 1, 1, 2) = 1*6 + 1*3 + 2 = 11
        assert_eq!(nhwc.f32s().unwrap()[(3 + 2) * 2 + 1], 11.0);
        assert!(nchw.transpose(&[0, 0, 1, 2]).is_err());
    }

    #[test]
    fn broadcast_slice_and_concat() {
        let row = iota(&[1, 3]);
        let b = row.broadcast_to(&[2, 3]).unwrap();
        assert_eq!(b.f32s().unwrap(), vec![0., 1., 2., 0., 1., 2.]);
        assert!(row.broadcast_to(&[2, 4]).is_err());
        let s = iota(&[3, 4]).slice(&[1, 1], &[2, 2]).unwrap();
        assert_eq!(s.f32s().unwrap(), vec![5., 6., 9., 10.]);
        assert!(iota(&[3, 4]).slice(&[2, 0], &[2, 4]).is_err());
        let c = ConstTensor::concat(&[iota(&[2, 1]), iota(&[2, 2])], 1).unwrap();
        assert_eq!(c.f32s().unwrap(), vec![0., 0., 1., 1., 2., 3.]);
        let sum = row.zip_f32(&iota(&[2, 1]), &[2, 3], |a, b| a + b).unwrap();
        assert_eq!(sum.f32s().unwrap(), vec![0., 1., 2., 1., 2., 3.]);
    }
}
