//! Rust element types of tensors, for typed calls (the bindings
//! `tcc-build` generates): `f32`, `half::f16`, `half::bf16`, `f64`, `i64`,
//! `i32`, `i16`, `i8`, `u64`, `u32`, `u16`, `u8` and `bool` map to the
//! ABI's dtypes, and [`HostTensor::from_elements`] /
//! [`HostTensor::to_elements`] convert slices, checking the dtype and the
//! element count.

use crate::error::{Error, Result};
use crate::tensor::{DType, HostTensor, element_count, type_string};

/// A Rust type that is one element of a tensor of `DTYPE`.
pub trait Element: Copy {
    const DTYPE: DType;
    /// Little-endian bytes of one element (`DTYPE.size()` of them).
    fn write_le(self, out: &mut Vec<u8>);
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! numeric {
    ($t:ty, $d:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("element size"))
            }
        }
    };
}
numeric!(f32, DType::F32);
numeric!(half::f16, DType::F16);
numeric!(i32, DType::I32);
numeric!(i64, DType::I64);
numeric!(i8, DType::I8);
numeric!(half::bf16, DType::BF16);
numeric!(f64, DType::F64);
numeric!(i16, DType::I16);
numeric!(u8, DType::U8);
numeric!(u16, DType::U16);
numeric!(u32, DType::U32);
numeric!(u64, DType::U64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

impl HostTensor {
    /// A tensor of `shape` from its elements in C order; the count must
    /// match the shape.
    pub fn from_elements<T: Element>(shape: Vec<usize>, values: &[T]) -> Result<Self> {
        let count = element_count(&shape)
            .ok_or_else(|| Error::InvalidInput("the shape is too large".into()))?;
        if values.len() != count {
            return Err(Error::InvalidInput(format!(
                "{} needs {count} elements, got {}",
                type_string(&shape, T::DTYPE),
                values.len()
            )));
        }
        let mut bytes = Vec::with_capacity(count * T::DTYPE.size());
        for &v in values {
            v.write_le(&mut bytes);
        }
        HostTensor::new(T::DTYPE, shape, bytes)
    }

    /// The elements, if the tensor holds `T`'s dtype.
    pub fn to_elements<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype != T::DTYPE {
            return Err(Error::InvalidInput(format!(
                "a {} tensor read as {}",
                self.type_string(),
                T::DTYPE
            )));
        }
        Ok(self
            .bytes
            .chunks_exact(T::DTYPE.size())
            .map(T::read_le)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks() {
        let t = HostTensor::from_elements(vec![2, 2], &[1i64, -2, 3, 4]).unwrap();
        assert_eq!(t.dtype, DType::I64);
        assert_eq!(t.to_elements::<i64>().unwrap(), [1, -2, 3, 4]);
        assert!(
            t.to_elements::<f32>()
                .unwrap_err()
                .to_string()
                .contains("read as f32")
        );
        let e = HostTensor::from_elements(vec![3], &[true, false]).unwrap_err();
        assert_eq!(e.to_string(), "3xi1 needs 3 elements, got 2");
    }
}
