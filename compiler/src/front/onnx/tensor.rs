//! Constant tensors: initializers, `Constant` nodes and values folded at
//! import time. Elements are kept in ONNX's raw little-endian layout (so
//! large weights pass through to MLIR untouched); folding reads them as
//! f64 or i64.

use std::path::Path;

use bytes::Bytes;

use super::dtype::{DType, TType, checked_numel, f16_to_f32, wrap_narrow_int};
use super::error::{ImportError, Result};
use super::proto::TensorProto;

#[derive(Clone, Debug, PartialEq)]
pub struct Const {
    pub dtype: DType,
    pub shape: Vec<i64>,
    /// One element when `splat`, else every element. Shared, not copied:
    /// an initializer's bytes are a slice of the mapped model file, and a
    /// reshaped or renamed constant shares them.
    pub bytes: Bytes,
    pub splat: bool,
}

impl Const {
    pub fn ty(&self) -> TType {
        TType::new(self.dtype, self.shape.clone())
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product::<i64>() as usize
    }

    fn element_bytes(&self, index: usize) -> &[u8] {
        let size = self.dtype.size();
        let at = if self.splat { 0 } else { index * size };
        &self.bytes[at..at + size]
    }

    /// Element `index` (row-major) as f64.
    pub fn f64_at(&self, index: usize) -> f64 {
        let b = self.element_bytes(index);
        match self.dtype {
            DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            DType::F64 => f64::from_le_bytes(b.try_into().expect("8 bytes")),
            DType::F16 => f16_to_f32(u16::from_le_bytes([b[0], b[1]])) as f64,
            DType::BF16 => f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16) as f64,
            DType::U64 => u64::from_le_bytes(b.try_into().expect("8 bytes")) as f64,
            d if d.is_minifloat() => d.minifloat().expect("a minifloat").decode(b[0]),
            _ => self.i64_at(index) as f64,
        }
    }

    /// Element `index` as i64 (floats truncated toward zero).
    pub fn i64_at(&self, index: usize) -> i64 {
        let b = self.element_bytes(index);
        match self.dtype {
            DType::I64 | DType::U64 => i64::from_le_bytes(b.try_into().expect("8 bytes")),
            DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            DType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            DType::I16 => i16::from_le_bytes([b[0], b[1]]) as i64,
            DType::U16 => u16::from_le_bytes([b[0], b[1]]) as i64,
            DType::I8 | DType::I4 | DType::I2 => b[0] as i8 as i64,
            DType::U8 | DType::U4 | DType::U2 => b[0] as i64,
            DType::Bool => (b[0] != 0) as i64,
            _ => {
                let value = self.f64_at(index);
                if value.is_nan() { 0 } else { value as i64 }
            }
        }
    }

    pub fn f64s(&self) -> Vec<f64> {
        (0..self.numel()).map(|i| self.f64_at(i)).collect()
    }

    pub fn i64s(&self) -> Vec<i64> {
        (0..self.numel()).map(|i| self.i64_at(i)).collect()
    }

    /// Element bytes of `value` in `dtype` (integers wrap, floats round).
    fn encode_f64(dtype: DType, value: f64, out: &mut Vec<u8>) {
        match dtype {
            DType::F32 => out.extend_from_slice(&(value as f32).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&value.to_le_bytes()),
            // Rounded once, to nearest even (NaN stays NaN).
            DType::F16 => out.extend_from_slice(&half::f16::from_f64(value).to_le_bytes()),
            DType::BF16 => out.extend_from_slice(&half::bf16::from_f64(value).to_le_bytes()),
            DType::Bool => out.push((value != 0.0) as u8),
            // Saturating, as Cast's default `saturate = 1`.
            d if d.is_minifloat() => {
                out.push(d.minifloat().expect("a minifloat").encode(value, true))
            }
            _ => Self::encode_i64(dtype, if value.is_nan() { 0 } else { value as i64 }, out),
        }
    }

    fn encode_i64(dtype: DType, value: i64, out: &mut Vec<u8>) {
        match dtype {
            DType::I64 | DType::U64 => out.extend_from_slice(&value.to_le_bytes()),
            DType::I32 | DType::U32 => out.extend_from_slice(&(value as i32).to_le_bytes()),
            DType::I16 | DType::U16 => out.extend_from_slice(&(value as i16).to_le_bytes()),
            DType::I8 | DType::U8 => out.push(value as u8),
            DType::Bool => out.push((value != 0) as u8),
            DType::I4 | DType::U4 | DType::I2 | DType::U2 => {
                out.push(wrap_narrow_int(dtype, value))
            }
            _ => Self::encode_f64(dtype, value as f64, out),
        }
    }

    pub fn from_f64(dtype: DType, shape: Vec<i64>, values: &[f64]) -> Const {
        let mut bytes = Vec::with_capacity(values.len() * dtype.size());
        for &v in values {
            Self::encode_f64(dtype, v, &mut bytes);
        }
        Const {
            dtype,
            shape,
            bytes: bytes.into(),
            splat: false,
        }
    }

    pub fn from_i64(dtype: DType, shape: Vec<i64>, values: &[i64]) -> Const {
        let mut bytes = Vec::with_capacity(values.len() * dtype.size());
        for &v in values {
            Self::encode_i64(dtype, v, &mut bytes);
        }
        Const {
            dtype,
            shape,
            bytes: bytes.into(),
            splat: false,
        }
    }

    pub fn splat_f64(dtype: DType, shape: Vec<i64>, value: f64) -> Const {
        let mut bytes = Vec::new();
        Self::encode_f64(dtype, value, &mut bytes);
        Const {
            dtype,
            shape,
            bytes: bytes.into(),
            splat: true,
        }
    }

    pub fn splat_i64(dtype: DType, shape: Vec<i64>, value: i64) -> Const {
        let mut bytes = Vec::new();
        Self::encode_i64(dtype, value, &mut bytes);
        Const {
            dtype,
            shape,
            bytes: bytes.into(),
            splat: true,
        }
    }

    /// A 1-D int64 tensor (shapes, axes).
    pub fn i64_vector(values: &[i64]) -> Const {
        Self::from_i64(DType::I64, vec![values.len() as i64], values)
    }

    /// The same elements in another shape (same element count).
    pub fn reshaped(&self, shape: Vec<i64>) -> Const {
        Const {
            dtype: self.dtype,
            shape,
            bytes: self.bytes.clone(),
            splat: self.splat,
        }
    }

    /// The elements converted to `dtype` (ONNX Cast semantics: float to int
    /// truncates toward zero, to bool is "non-zero").
    pub fn cast(&self, dtype: DType) -> Const {
        if dtype == self.dtype {
            return self.clone();
        }
        let count = if self.splat { 1 } else { self.numel() };
        let mut bytes = Vec::with_capacity(count * dtype.size());
        let float = |d: DType| d.is_float() || d.is_minifloat();
        for i in 0..count {
            if float(self.dtype) && (float(dtype) || dtype == DType::Bool) {
                Self::encode_f64(dtype, self.f64_at(i), &mut bytes);
            } else if float(self.dtype) {
                Self::encode_i64(dtype, self.i64_at(i), &mut bytes);
            } else if float(dtype) {
                Self::encode_f64(dtype, self.f64_at(i), &mut bytes);
            } else {
                Self::encode_i64(dtype, self.i64_at(i), &mut bytes);
            }
        }
        Const {
            dtype,
            shape: self.shape.clone(),
            bytes: bytes.into(),
            splat: self.splat,
        }
    }

    /// Every element equal (a splat, or a tensor whose elements happen to be).
    pub fn uniform(&self) -> bool {
        if self.splat {
            return true;
        }
        let size = self.dtype.size();
        self.bytes
            .chunks(size)
            .all(|chunk| chunk == &self.bytes[..size.min(self.bytes.len())])
    }

    /// The elements as a full buffer (expanding a splat).
    pub fn full_bytes(&self) -> Vec<u8> {
        if self.splat {
            self.bytes.repeat(self.numel())
        } else {
            self.bytes.to_vec()
        }
    }
}

/// Decodes a `TensorProto` (typed fields, raw data or external data
/// relative to `base_dir`). `what` names it in errors.
pub fn decode(tensor: &TensorProto, base_dir: Option<&Path>, what: &str) -> Result<Const> {
    let dtype = DType::from_onnx(tensor.data_type).ok_or_else(|| {
        ImportError::new(format!(
            "{what}: element type {} is not supported",
            DType::onnx_code_name(tensor.data_type)
        ))
    })?;
    let shape = tensor.dims.clone();
    let count = checked_numel(&shape)
        .ok_or_else(|| {
            ImportError::new(format!(
                "{what}: invalid or too large shape {} (dimensions must be 0 or more, at most {} elements)",
                super::dtype::shape_text(&shape),
                super::dtype::MAX_ELEMENTS
            ))
        })?
        as usize;
    if tensor.segment.is_some() {
        return Err(ImportError::new(format!(
            "{what}: segmented tensors are not supported"
        )));
    }
    let size = dtype.size();
    // The 4- and 2-bit types are packed in ONNX (two or four to a byte,
    // the first in the low bits): read packed, unpacked below.
    let per_byte = match dtype {
        DType::I4 | DType::U4 | DType::F4E2M1 => 2,
        DType::I2 | DType::U2 => 4,
        _ => 1,
    };
    let expected = if per_byte > 1 {
        count.div_ceil(per_byte)
    } else {
        count
            .checked_mul(size)
            .ok_or_else(|| ImportError::new(format!("{what}: tensor too large")))?
    };
    let bytes = if tensor.data_location == 1 {
        Bytes::from(read_external(tensor, base_dir, what, expected)?)
    } else if !tensor.raw_data.is_empty() {
        if tensor.raw_data.len() != expected {
            return Err(ImportError::new(format!(
                "{what}: raw_data holds {} bytes but {shape:?} {dtype} needs {expected}",
                tensor.raw_data.len()
            )));
        }
        tensor.raw_data.clone()
    } else {
        let typed = typed_bytes(tensor, dtype);
        match typed {
            Some(bytes) if bytes.len() == expected => Bytes::from(bytes),
            Some(bytes) if count > 0 => {
                return Err(ImportError::new(format!(
                    "{what}: holds {} elements but its shape {shape:?} has {count}",
                    bytes.len() / size
                )));
            }
            _ if count == 0 => Bytes::new(),
            _ => {
                return Err(ImportError::new(format!(
                    "{what}: no data for a {shape:?} {dtype} tensor"
                )));
            }
        }
    };
    let bytes = if per_byte > 1 {
        Bytes::from(unpack(dtype, &bytes, count))
    } else {
        bytes
    };
    Ok(Const {
        dtype,
        shape,
        bytes,
        splat: false,
    })
}

/// The `count` elements of packed 4- or 2-bit data, a byte each (the
/// integers sign-extended for int4 and int2; float4e2m1 as its 4 bits).
fn unpack(dtype: DType, packed: &[u8], count: usize) -> Vec<u8> {
    let bits = if matches!(dtype, DType::I2 | DType::U2) {
        2
    } else {
        4
    };
    let per_byte = 8 / bits;
    (0..count)
        .map(|i| {
            let field = (packed[i / per_byte] >> (bits * (i % per_byte))) & ((1 << bits) - 1);
            if dtype == DType::F4E2M1 {
                field
            } else {
                wrap_narrow_int(dtype, field as i64)
            }
        })
        .collect()
}

/// The typed repeated field of `dtype` converted to raw little-endian
/// bytes, or `None` when it is empty.
fn typed_bytes(tensor: &TensorProto, dtype: DType) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    match dtype {
        DType::F32 if !tensor.float_data.is_empty() => tensor
            .float_data
            .iter()
            .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes())),
        DType::F64 if !tensor.double_data.is_empty() => tensor
            .double_data
            .iter()
            .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes())),
        DType::I64 if !tensor.int64_data.is_empty() => tensor
            .int64_data
            .iter()
            .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes())),
        DType::U32 | DType::U64 if !tensor.uint64_data.is_empty() => {
            for &v in &tensor.uint64_data {
                if dtype == DType::U32 {
                    bytes.extend_from_slice(&(v as u32).to_le_bytes())
                } else {
                    bytes.extend_from_slice(&v.to_le_bytes())
                }
            }
        }
        DType::I32
        | DType::I16
        | DType::U16
        | DType::I8
        | DType::U8
        | DType::Bool
        | DType::F16
        | DType::BF16
        | DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F4E2M1
        | DType::I4
        | DType::U4
        | DType::I2
        | DType::U2
            if !tensor.int32_data.is_empty() =>
        {
            for &v in &tensor.int32_data {
                match dtype.size() {
                    4 => bytes.extend_from_slice(&v.to_le_bytes()),
                    2 => bytes.extend_from_slice(&(v as u16).to_le_bytes()),
                    _ => bytes.push(if dtype == DType::Bool {
                        (v != 0) as u8
                    } else {
                        v as u8
                    }),
                }
            }
        }
        _ => return None,
    }
    Some(bytes)
}

/// Reads the `expected` bytes of a tensor stored outside the model
/// (`data_location = EXTERNAL`). A model directory is data, not trusted:
/// the location must be a relative path that, once resolved (symlinks
/// included), stays inside the model's directory and names a regular file;
/// it is opened with `O_NONBLOCK | O_NOFOLLOW` so that a FIFO cannot hang
/// the import and a link swapped in after the check is not followed; the
/// declared `length` (or, without one, the rest of the file after
/// `offset`) must be exactly the tensor's size.
fn read_external(
    tensor: &TensorProto,
    base_dir: Option<&Path>,
    what: &str,
    expected: usize,
) -> Result<Vec<u8>> {
    let mut location = None;
    let mut offset = 0u64;
    let mut length = None;
    for entry in &tensor.external_data {
        match entry.key.as_str() {
            "location" => location = Some(entry.value.clone()),
            "offset" => {
                offset = entry.value.parse().map_err(|_| {
                    ImportError::new(format!(
                        "{what}: bad external data offset '{}'",
                        entry.value
                    ))
                })?
            }
            "length" => {
                length = Some(entry.value.parse::<u64>().map_err(|_| {
                    ImportError::new(format!(
                        "{what}: bad external data length '{}'",
                        entry.value
                    ))
                })?)
            }
            _ => {}
        }
    }
    let location = location
        .ok_or_else(|| ImportError::new(format!("{what}: external data without a location")))?;
    let relative = Path::new(&location);
    if location.is_empty()
        || relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(ImportError::new(format!(
            "{what}: external data location '{location}' must be a relative path inside the model's directory"
        )));
    }
    let Some(base_dir) = base_dir else {
        return Err(ImportError::new(format!(
            "{what}: external data '{location}' but the model was not read from a file"
        )));
    };
    if let Some(length) = length
        && length != expected as u64
    {
        return Err(ImportError::new(format!(
            "{what}: external data length {length} but the tensor needs {expected} bytes"
        )));
    }
    let path = base_dir.join(relative);
    let (mut file, resolved) = open_inside(base_dir, &path)
        .map_err(|e| ImportError::new(format!("{what}: external data '{location}': {e}")))?;
    let file_length = file
        .metadata()
        .map_err(|e| ImportError::new(format!("{what}: cannot read {}: {e}", resolved.display())))?
        .len();
    let end = offset.checked_add(expected as u64);
    if end.is_none_or(|end| end > file_length) {
        return Err(ImportError::new(format!(
            "{what}: external data {} is {file_length} bytes, too short for {expected} bytes at offset {offset}",
            resolved.display()
        )));
    }
    if length.is_none() && end != Some(file_length) {
        return Err(ImportError::new(format!(
            "{what}: external data {} holds {} bytes after offset {offset} but the tensor needs {expected} (without a 'length', the data runs to the end of the file)",
            resolved.display(),
            file_length - offset
        )));
    }
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset)).map_err(|e| {
        ImportError::new(format!("{what}: cannot read {}: {e}", resolved.display()))
    })?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(expected).map_err(|_| {
        ImportError::new(format!(
            "{what}: cannot allocate {expected} bytes for external data"
        ))
    })?;
    bytes.resize(expected, 0);
    file.read_exact(&mut bytes).map_err(|e| {
        ImportError::new(format!("{what}: cannot read {}: {e}", resolved.display()))
    })?;
    Ok(bytes)
}

/// Opens `path` for reading only if, with every symlink resolved, it lies
/// inside `base_dir` (itself resolved) and is a regular file. Returns the
/// open file and the resolved path.
fn open_inside(
    base_dir: &Path,
    path: &Path,
) -> std::result::Result<(std::fs::File, std::path::PathBuf), String> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let base = std::fs::canonicalize(base_dir).map_err(|e| {
        format!(
            "cannot resolve the model's directory {}: {e}",
            base_dir.display()
        )
    })?;
    let resolved =
        std::fs::canonicalize(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    if resolved == base || !resolved.starts_with(&base) {
        return Err(format!(
            "{} resolves to {}, outside the model's directory {}",
            path.display(),
            resolved.display(),
            base.display()
        ));
    }
    // Not blocking: a FIFO's open would wait for a writer. Not following a
    // link: the resolved path has none, unless one was swapped in since.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&resolved)
        .map_err(|e| format!("cannot open {}: {e}", resolved.display()))?;
    let file_type = file
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", resolved.display()))?
        .file_type();
    if !file_type.is_file() {
        let kind = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_fifo() {
            "a FIFO"
        } else if file_type.is_socket() {
            "a socket"
        } else if file_type.is_char_device() || file_type.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(format!(
            "{} is {kind}, not a regular file",
            resolved.display()
        ));
    }
    Ok((file, resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_and_raw_data_decode_alike() {
        let typed = TensorProto {
            dims: vec![2],
            data_type: 1,
            float_data: vec![1.5, -2.0],
            ..Default::default()
        };
        let raw = TensorProto {
            dims: vec![2],
            data_type: 1,
            raw_data: [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()]
                .concat()
                .into(),
            ..Default::default()
        };
        let a = decode(&typed, None, "t").unwrap();
        let b = decode(&raw, None, "t").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.f64s(), vec![1.5, -2.0]);
        let short = TensorProto {
            dims: vec![3],
            data_type: 1,
            float_data: vec![1.0],
            ..Default::default()
        };
        assert!(
            decode(&short, None, "t")
                .unwrap_err()
                .to_string()
                .contains("holds 1 elements")
        );
        let ints = TensorProto {
            dims: vec![2],
            data_type: 7,
            int64_data: vec![-1, 7],
            ..Default::default()
        };
        assert_eq!(decode(&ints, None, "t").unwrap().i64s(), vec![-1, 7]);
    }

    #[test]
    fn packed_narrow_integers_unpack_low_bits_first() {
        // int4 [-8, 7, 1] packed low nibble first: 0x78, 0x01.
        let int4 = TensorProto {
            dims: vec![3],
            data_type: 22,
            raw_data: vec![0x78, 0x01].into(),
            ..Default::default()
        };
        let c = decode(&int4, None, "t").unwrap();
        assert_eq!((c.dtype, c.i64s()), (DType::I4, vec![-8, 7, 1]));
        // uint2 [3, 0, 1, 2, 1] in int32_data (one packed byte each).
        let uint2 = TensorProto {
            dims: vec![5],
            data_type: 25,
            int32_data: vec![0b10_01_00_11, 0b01],
            ..Default::default()
        };
        assert_eq!(
            decode(&uint2, None, "t").unwrap().i64s(),
            vec![3, 0, 1, 2, 1]
        );
        let short = TensorProto {
            dims: vec![5],
            data_type: 22,
            raw_data: vec![0x11, 0x11].into(),
            ..Default::default()
        };
        assert!(decode(&short, None, "t").is_err());
    }

    #[test]
    fn narrow_casts_round_wrap_and_saturate() {
        let c = Const::from_f64(DType::F32, vec![4], &[1.0, 464.0, 1e6, -0.0]);
        let f8 = c.cast(DType::F8E4M3FN);
        assert_eq!(f8.bytes, vec![0x38, 0x7E, 0x7E, 0x80]);
        assert_eq!(f8.f64s()[1], 448.0);
        let ints = Const::from_i64(DType::I64, vec![4], &[8, -9, 17, 100]);
        assert_eq!(ints.cast(DType::I4).i64s(), vec![-8, 7, 1, 4]);
        assert_eq!(ints.cast(DType::U4).i64s(), vec![8, 7, 1, 4]);
    }

    #[test]
    fn casts_follow_onnx() {
        let c = Const::from_f64(DType::F32, vec![3], &[-1.7, 0.0, 2.9]);
        assert_eq!(c.cast(DType::I64).i64s(), vec![-1, 0, 2]);
        assert_eq!(c.cast(DType::Bool).i64s(), vec![1, 0, 1]);
        assert_eq!(
            Const::splat_i64(DType::I64, vec![2, 2], 3)
                .cast(DType::F32)
                .f64s(),
            vec![3.0; 4]
        );
    }
}
