//! `.npy` files ↔ `HostTensor`, through the `npyz` crate.
//!
//! Only the ABI's element types are accepted (numpy's standard descrs
//! `<f4 <f2 <f8 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1`, and `<V2` for
//! bfloat16, which numpy has no type of its own for: `<V2` is what numpy
//! writes for an `ml_dtypes.bfloat16` array, two raw bytes per element),
//! little-endian and C-ordered: anything else is an error, never a silent
//! conversion. Writes go through [`crate::output_file`]: a regular file is
//! replaced atomically (temporary file in the target directory, then
//! rename) so a crashed run never leaves a half-written result.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use half::f16;
use npyz::{Order, WriterBuilder};

use crate::error::{Error, Result};
use crate::tensor::{DType, HostTensor};

/// numpy's type string (`descr`) of a tcc dtype: `<f4`, `|b1`, ...
pub fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::I8 => "|i1",
        DType::Bool => "|b1",
        DType::BF16 => "<V2",
        DType::F64 => "<f8",
        DType::I16 => "<i2",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        // ml_dtypes' own descrs: e5m2 has `<f1`, the others are void.
        DType::F8E5M2 => "<f1",
        DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2FNUZ | DType::F4E2M1 => "<V1",
    }
}

/// The dtype of a numpy descr: [`descr`]'s inverse, which also takes the
/// spellings numpy uses for one-byte and void types (`<i1`, `<u1`, `|V2`).
pub fn dtype_of_descr(text: &str) -> Option<DType> {
    let text = match text {
        "<i1" => "|i1",
        "<u1" => "|u1",
        "<b1" => "|b1",
        "|V2" => "<V2",
        // ml_dtypes' float8 e4m3fn/e4m3fnuz/e5m2fnuz and float4 all say
        // `<V1`: which one a file holds is not written down.
        "<V1" | "|V1" => return None,
        other => other,
    };
    DType::ALL.into_iter().find(|d| descr(*d) == text)
}

fn npy_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Npy {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// The largest `.npy` header read (numpy writes a few hundred bytes).
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Where a `.npy` file's header text starts and its data begins, from the
/// magic, the version and the header length.
fn header_span(prefix: &[u8]) -> std::result::Result<(usize, usize), String> {
    if prefix.len() < 10 || &prefix[..6] != b"\x93NUMPY" {
        return Err("not a readable .npy file: no \\x93NUMPY magic".into());
    }
    let (start, len) = match prefix[6] {
        1 => (10, u16::from_le_bytes([prefix[8], prefix[9]]) as usize),
        2 | 3 if prefix.len() >= 12 => (
            12,
            u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize,
        ),
        2 | 3 => return Err("not a readable .npy file: truncated header".into()),
        v => {
            return Err(format!(
                "not a readable .npy file: format version {v} is not supported (1, 2 or 3)"
            ));
        }
    };
    if len > MAX_HEADER_BYTES {
        return Err(format!("header of {len} bytes is implausibly long"));
    }
    Ok((start, start + len))
}

/// How deep a header may nest brackets: numpy writes `{'descr': '<f4',
/// 'fortran_order': False, 'shape': (2, 3), }` (2 levels; structured
/// dtypes, which tcc does not read, a few more).
const MAX_HEADER_NESTING: usize = 4;

/// Refuses a header that nests brackets deeper than
/// [`MAX_HEADER_NESTING`] before npyz's parser (py_literal, a backtracking
/// PEG parser) sees it: cargo-fuzz found 170- and 238-byte headers of
/// unclosed brackets that kept it busy for more than 10 s. Brackets inside
/// strings count too: a scanner that skipped strings was fooled by an
/// escaped quote, and numpy never writes brackets in a header's strings
/// for the dtypes tcc reads.
fn check_header_nesting(text: &str) -> std::result::Result<(), String> {
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_HEADER_NESTING {
                    return Err(format!(
                        "not a readable .npy file: its header nests brackets more than {MAX_HEADER_NESTING} deep"
                    ));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The `shape` tuple of a header dictionary, checked before npyz sees it:
/// npyz multiplies the dimensions (and their suffixes, for strides)
/// unchecked. The product of the non-zero dimensions must fit in `u64`
/// and stay within `limit`.
fn check_header_shape(text: &str, limit: u64) -> std::result::Result<(), String> {
    let key = text
        .find("'shape'")
        .or_else(|| text.find("\"shape\""))
        .ok_or("the header has no 'shape'")?;
    let rest = &text[key..];
    let open = rest.find('(').ok_or("the header's shape is not a tuple")?;
    let close = rest[open..]
        .find(')')
        .ok_or("the header's shape is not a tuple")?
        + open;
    let mut product: u64 = 1;
    for item in rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let item = item.trim_end_matches('L');
        let d: u64 = item
            .parse()
            .map_err(|_| format!("the header's shape has the dimension `{item}`"))?;
        if d != 0 {
            product = product
                .checked_mul(d)
                .filter(|p| *p <= limit)
                .ok_or_else(|| {
                    format!(
                        "the header's shape {} is too large for the file",
                        &rest[open..=close]
                    )
                })?;
        }
    }
    Ok(())
}

/// Reads and checks the header at the start of `bytes` (`total` bytes in
/// the whole file); returns the parsed header and where the data begins.
fn parse_header(bytes: &[u8], total: u64) -> std::result::Result<(npyz::NpyHeader, usize), String> {
    let (start, end) = header_span(bytes)?;
    if bytes.len() < end {
        return Err("not a readable .npy file: truncated header".into());
    }
    let text = String::from_utf8_lossy(&bytes[start..end]);
    check_header_nesting(&text)?;
    // No shape can describe more elements than the file has bytes (a
    // zero-size array aside, whose other dimensions stay below 2^32).
    check_header_shape(&text, total.max(1 << 32))?;
    let npy =
        npyz::NpyFile::new(&bytes[..end]).map_err(|e| format!("not a readable .npy file: {e}"))?;
    Ok((npy.header().clone(), end))
}

/// The element type and shape of a header, checked as [`read_npy`] does.
fn header_type(path: &Path, header: &npyz::NpyHeader) -> Result<(DType, Vec<usize>)> {
    let type_str = match header.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => {
            return Err(npy_error(
                path,
                format!("structured dtype {:?} is not supported", other.descr()),
            ));
        }
    };
    let dtype = dtype_of_descr(&type_str).ok_or_else(|| {
        npy_error(
            path,
            format!(
                "element type `{type_str}` is not supported (supported: <f4 f32, <f2 f16, <V2 bf16 (ml_dtypes.bfloat16), <f8 f64, <i8 i64, <i4 i32, <i2 i16, |i1 i8, <u8 ui64, <u4 ui32, <u2 ui16, |u1 ui8, |b1 i1, <f1 f8E5M2 (ml_dtypes.float8_e5m2); \
                 the other float8 types and float4 are `<V1` in every ml_dtypes array, which does not say which, so give them as literals; \
                 convert with numpy's astype, tcc-run does not convert)"
            ),
        )
    })?;
    if header.order() == Order::Fortran && header.shape().len() > 1 {
        return Err(npy_error(
            path,
            "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)",
        ));
    }
    let shape = header
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| npy_error(path, "dimension too large")))
        .collect::<Result<Vec<_>>>()?;
    Ok((dtype, shape))
}

/// The element type and shape of a `.npy` file, from its header alone
/// (the data is not read): lets a caller check a file against what it
/// expects before reading a large one.
pub fn read_npy_type(path: &Path) -> Result<(DType, Vec<usize>)> {
    let mut file = File::open(path).map_err(|e| npy_error(path, format!("cannot open: {e}")))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    let mut prefix = Vec::new();
    (&mut file)
        .take(12)
        .read_to_end(&mut prefix)
        .map_err(|e| npy_error(path, format!("cannot read: {e}")))?;
    let (_, end) = header_span(&prefix).map_err(|e| npy_error(path, e))?;
    (&mut file)
        .take((end - prefix.len().min(end)) as u64)
        .read_to_end(&mut prefix)
        .map_err(|e| npy_error(path, format!("cannot read: {e}")))?;
    let (header, _) = parse_header(&prefix, total).map_err(|e| npy_error(path, e))?;
    header_type(path, &header)
}

/// Reads a `.npy` file into a tensor of the same dtype and shape. The data
/// must be exactly what the header's shape and type need: a short file or
/// bytes after the data (trailing junk) are errors.
pub fn read_npy(path: &Path) -> Result<HostTensor> {
    let bytes = std::fs::read(path).map_err(|e| npy_error(path, format!("cannot open: {e}")))?;
    parse_npy(&bytes, path)
}

/// [`read_npy`] of a file's contents already in memory (errors name the
/// file as `<bytes>`).
pub fn read_npy_bytes(bytes: &[u8]) -> Result<HostTensor> {
    parse_npy(bytes, Path::new("<bytes>"))
}

fn parse_npy(bytes: &[u8], path: &Path) -> Result<HostTensor> {
    let (header, data_start) =
        parse_header(bytes, bytes.len() as u64).map_err(|e| npy_error(path, e))?;
    let (dtype, shape) = header_type(path, &header)?;
    let expected = crate::tensor::byte_size(&shape, dtype)
        .ok_or_else(|| npy_error(path, "the header's shape is too large"))?;
    let data = &bytes[data_start..];
    if data.len() != expected {
        let shape_text = crate::tensor::type_string(&shape, dtype);
        return Err(npy_error(
            path,
            if data.len() > expected {
                format!(
                    "{} bytes follow the data: {shape_text} needs exactly {expected} bytes after the header, the file has {} (trailing junk, or a header that does not match the data)",
                    data.len() - expected,
                    data.len()
                )
            } else {
                format!(
                    "truncated: {shape_text} needs {expected} bytes of data, the file has {}",
                    data.len()
                )
            },
        ));
    }
    let npy = npyz::NpyFile::with_header(header, data);
    let read_err = |e: std::io::Error| npy_error(path, format!("bad data: {e}"));
    let bytes: Vec<u8> = match dtype {
        DType::F32 => npy
            .into_vec::<f32>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F16 => npy
            .into_vec::<f16>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I32 => npy
            .into_vec::<i32>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I64 => npy
            .into_vec::<i64>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I8 => npy
            .into_vec::<i8>()
            .map_err(read_err)?
            .iter()
            .map(|&v| v as u8)
            .collect(),
        DType::Bool => npy
            .into_vec::<bool>()
            .map_err(read_err)?
            .iter()
            .map(|&v| v as u8)
            .collect(),
        // Little-endian (the descr says so) and C-ordered: the data are
        // the tensor's bytes as they are.
        DType::BF16
        | DType::F64
        | DType::I16
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64
        | DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F4E2M1 => data.to_vec(),
    };
    // Aligned, so that a CPU device reads the tensor in place (no copy per
    // call; see `HostBytes`).
    HostTensor::from_bytes(dtype, shape, crate::HostBytes::copy_aligned(&bytes))
        .map_err(|e| npy_error(path, e.to_string()))
}

/// Writes `tensor` to `path`: atomically (temporary file + rename) for a
/// regular file, through the file for a device or FIFO, to the target of a
/// symlink (see [`crate::output_file`]). A new file's mode follows the
/// umask.
pub fn write_npy(path: &Path, tensor: &HostTensor) -> Result<()> {
    crate::output_file::write_output(path, false, |out| write_npy_to(out, tensor))
        .map_err(|e| npy_error(path, format!("cannot write: {e}")))
}

/// The `.npy` encoding of `tensor` (for appending to a file).
pub fn npy_bytes(tensor: &HostTensor) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_npy_to(&mut out, tensor).map_err(|e| {
        Error::InvalidInput(format!(
            "cannot encode {} as .npy: {e}",
            tensor.type_string()
        ))
    })?;
    Ok(out)
}

/// Writes `t` as numpy writes it: npyz encodes the data, the header is
/// numpy's own (`np.lib.format`: `(2, 3)` without npyz's trailing `, `,
/// the growth-axis spaces and 64-byte alignment), which strict readers
/// such as `iree-run-module --expected_output` require.
fn write_npy_to<W: Write>(mut out: W, t: &HostTensor) -> std::io::Result<()> {
    let mut encoded = Vec::new();
    encode_npyz(&mut encoded, t)?;
    let (_, data) = header_span(&encoded)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    out.write_all(&numpy_header(descr(t.dtype), &t.shape))?;
    out.write_all(&encoded[data..])
}

/// The header `np.save` writes for a C-order array of `descr` and `shape`
/// (version 1.0, or 2.0 when the header needs more than 65,535 bytes).
fn numpy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    // numpy leaves room for axis 0 to grow to 21 digits in place.
    if let Some(first) = dims.first() {
        text.push_str(&" ".repeat(21usize.saturating_sub(first.len())));
    }
    let hlen = text.len() + 1;
    let (version, size_bytes) = if 64 - (10 + hlen) % 64 + hlen <= 0xffff {
        (1u8, 2)
    } else {
        (2u8, 4)
    };
    let pad = 64 - (8 + size_bytes + hlen) % 64;
    let mut header = b"\x93NUMPY".to_vec();
    header.extend([version, 0]);
    let total = (hlen + pad) as u32;
    header.extend_from_slice(&total.to_le_bytes()[..size_bytes]);
    header.extend_from_slice(text.as_bytes());
    header.extend(std::iter::repeat_n(b' ', pad));
    header.push(b'\n');
    header
}

fn encode_npyz<W: Write>(out: W, t: &HostTensor) -> std::io::Result<()> {
    let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    if t.dtype == DType::BF16 || t.dtype.minifloat().is_some() {
        // No numpy type: the raw bytes of each element under ml_dtypes'
        // descr (`<V2` for bfloat16, `<f1`/`<V1` for the minifloats).
        return write_raw(out, &shape, descr(t.dtype), &t.bytes);
    }
    let type_str: npyz::TypeStr = descr(t.dtype)
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{e}")))?;
    let dtype = npyz::DType::Plain(type_str);
    macro_rules! write_as {
        ($t:ty, $conv:expr) => {{
            let mut w = npyz::WriteOptions::<$t>::new()
                .dtype(dtype)
                .shape(&shape)
                .writer(out)
                .begin_nd()?;
            w.extend(t.bytes.chunks_exact(t.dtype.size()).map($conv))?;
            w.finish()
        }};
    }
    match t.dtype {
        DType::F32 => write_as!(f32, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        DType::F16 => write_as!(f16, |c| f16::from_le_bytes([c[0], c[1]])),
        DType::I32 => write_as!(i32, |c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        DType::I64 => write_as!(i64, |c| i64::from_le_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        ])),
        DType::I8 => write_as!(i8, |c| c[0] as i8),
        DType::Bool => write_as!(bool, |c| c[0] != 0),
        DType::F64 => write_as!(f64, |c| f64::from_le_bytes(c.try_into().expect("8 bytes"))),
        DType::I16 => write_as!(i16, |c| i16::from_le_bytes([c[0], c[1]])),
        DType::U8 => write_as!(u8, |c| c[0]),
        DType::U16 => write_as!(u16, |c| u16::from_le_bytes([c[0], c[1]])),
        DType::U32 => write_as!(u32, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        DType::U64 => write_as!(u64, |c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
        DType::BF16
        | DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F4E2M1 => unreachable!("written above"),
    }
}

/// A version 1 `.npy` file of raw little-endian element bytes under
/// `descr` (for the types npyz has no Rust element type for).
fn write_raw<W: Write>(mut out: W, shape: &[u64], descr: &str, data: &[u8]) -> std::io::Result<()> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let length = u16::try_from(header.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "header too long"))?;
    out.write_all(b"\x93NUMPY\x01\x00")?;
    out.write_all(&length.to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    out.write_all(data)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1 .npy file with this header shape, data and extra bytes.
    fn npy_bytes(shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn huge_header_shapes_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        for shape in [
            "(18446744073709551615, 4, 16)",
            "(4294967296, 4294967296, 16)",
            "(0, 4294967296, 4294967296, 4294967296)",
            "(1000000000000,)",
        ] {
            let p = dir.path().join("huge.npy");
            std::fs::write(&p, npy_bytes(shape, &[0; 64])).unwrap();
            let e = read_npy(&p).unwrap_err().to_string();
            assert!(
                e.contains("too large for the file") || e.contains("truncated"),
                "{shape}: {e}"
            );
            assert!(read_npy_type(&p).is_err(), "{shape}");
        }
    }

    /// Found by cargo-fuzz (runtime_inputs): npyz's header parser took
    /// more than 10 s on these 170 bytes of nested, unclosed brackets.
    #[test]
    fn deeply_nested_headers_are_refused_quickly() {
        let input = b"\x93NUMPY\x01\x00v\x00{'desc\x04': '<i8', 'fo\x0frtran_order': False, 'shape': (2,), [[[[[        {{{{{{{{{{{{{{{{{                (         6             {:dc'        \xff\xff\xffb\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00";
        let start = std::time::Instant::now();
        let e = read_npy_bytes(input).unwrap_err().to_string();
        assert!(e.contains("nests brackets more than 4 deep"), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        // The second one hid its brackets behind an escaped quote.
        let input = b"\x93NUMPY\x01\x00v\x00{'dd\\cr': '<f4', 'f=ortran_order': False, 'shape': (2, 3), {{{'\\'f': False, 'shape': (2, 3), {{{{[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['desdera: '{{{'\\'0ls  x";
        let start = std::time::Instant::now();
        let e = read_npy_bytes(input).unwrap_err().to_string();
        assert!(e.contains("nests brackets more than 4 deep"), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        // What numpy writes still reads.
        let ok = npy_bytes("(2, 2)", &[0; 16]);
        assert_eq!(read_npy_bytes(&ok).unwrap().shape, vec![2, 2]);
    }

    #[test]
    fn trailing_junk_and_short_data_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        let data: Vec<u8> = (0..16u8).collect();
        std::fs::write(&p, npy_bytes("(4,)", &data)).unwrap();
        assert_eq!(read_npy(&p).unwrap().shape, vec![4]);
        let mut junk = data.clone();
        junk.extend(b"JUNK");
        std::fs::write(&p, npy_bytes("(4,)", &junk)).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(
            e.contains("4 bytes follow the data") && e.contains("trailing junk"),
            "{e}"
        );
        std::fs::write(&p, npy_bytes("(4,)", &data[..12])).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(
            e.contains("truncated: 4xf32 needs 16 bytes of data, the file has 12"),
            "{e}"
        );
        std::fs::write(&p, b"\x93NUMPY\x01").unwrap();
        assert!(
            read_npy(&p)
                .unwrap_err()
                .to_string()
                .contains("not a readable .npy file")
        );
        std::fs::write(&p, b"\x93NUMPY\x09\x00\x10\x00").unwrap();
        assert!(read_npy(&p).unwrap_err().to_string().contains("version 9"));
    }

    /// A file as numpy writes it, with this descr in place of the `<f4`
    /// of [`npy_bytes`]'s header (same length).
    fn numpy_file(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut out = npy_bytes(shape, data);
        let at = out
            .windows(3)
            .position(|w| w == b"<f4")
            .expect("the header's descr");
        out[at..at + 3].copy_from_slice(descr.as_bytes());
        out
    }

    #[test]
    fn reads_numpy_standard_descrs_of_the_new_dtypes() {
        let cases: [(&str, DType, Vec<u8>, &str); 7] = [
            (
                "<f8",
                DType::F64,
                0.25f64.to_le_bytes().to_vec(),
                "1xf64=[0.25]",
            ),
            (
                "<u2",
                DType::U16,
                65535u16.to_le_bytes().to_vec(),
                "1xui16=[65535]",
            ),
            ("|u1", DType::U8, vec![200], "1xui8=[200]"),
            (
                "<i2",
                DType::I16,
                (-2i16).to_le_bytes().to_vec(),
                "1xi16=[-2]",
            ),
            ("<u4", DType::U32, 7u32.to_le_bytes().to_vec(), "1xui32=[7]"),
            (
                "<u8",
                DType::U64,
                u64::MAX.to_le_bytes().to_vec(),
                "1xui64=[18446744073709551615]",
            ),
            // ml_dtypes.bfloat16 1.5 is 0x3FC0.
            ("<V2", DType::BF16, vec![0xC0, 0x3F], "1xbf16=[1.5]"),
        ];
        for (descr, dtype, data, printed) in cases {
            let t = read_npy_bytes(&numpy_file(descr, "(1,)", &data)).unwrap();
            assert_eq!(t.dtype, dtype, "{descr}");
            assert_eq!(t.format(10), printed, "{descr}");
        }
        assert_eq!(dtype_of_descr("|V2"), Some(DType::BF16));
        assert_eq!(dtype_of_descr("<V4"), None);
    }

    #[test]
    fn round_trip_every_dtype() {
        let dir = tempfile::tempdir().unwrap();
        for (i, lit) in [
            "2x3xf32=1,2,3,4,5,6",
            "2xf16=0.5,-1",
            "3xi32=-1,0,7",
            "i64=9",
            "2x2xi8=-128,0,1,127",
            "3xi1=1,0,1",
            "0x4xf32=",
            "2xbf16=1.5,-3",
            "3xf64=0.1,-1e300,5",
            "2xi16=-32768,32767",
            "3xui8=0,128,255",
            "2xui16=65535,1",
            "2xui32=4294967295,0",
            "2xui64=18446744073709551615,3",
            "1xbf16=0",
        ]
        .iter()
        .enumerate()
        {
            let t = HostTensor::parse_literal(lit).unwrap();
            let p = dir.path().join(format!("t{i}.npy"));
            write_npy(&p, &t).unwrap();
            assert_eq!(read_npy(&p).unwrap(), t, "{lit}");
        }
    }

    #[test]
    fn rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.npy");
        std::fs::write(&garbage, b"definitely not numpy").unwrap();
        let e = read_npy(&garbage).unwrap_err().to_string();
        assert!(
            e.contains("garbage.npy") && e.contains("not a readable .npy file"),
            "{e}"
        );

        let missing = dir.path().join("missing.npy");
        assert!(
            read_npy(&missing)
                .unwrap_err()
                .to_string()
                .contains("cannot open")
        );

        // float64 data is read as f64; complex data is refused, not
        // converted.
        let f64_path = dir.path().join("f64.npy");
        npyz::to_file_1d(&f64_path, vec![1.0f64, 2.0]).unwrap();
        assert_eq!(read_npy(&f64_path).unwrap().format(9), "2xf64=[1 2]");
        let complex = numpy_file("<c8", "(1,)", &[0; 8]);
        let e = read_npy_bytes(&complex).unwrap_err().to_string();
        assert!(e.contains("`<c8` is not supported"), "{e}");

        // Truncated data.
        let t = HostTensor::from_f32(vec![64], &[1.0; 64]).unwrap();
        let p = dir.path().join("trunc.npy");
        write_npy(&p, &t).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 10]).unwrap();
        assert!(read_npy(&p).is_err());
    }
}
