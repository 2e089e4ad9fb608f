//! Host-side tensors: element types, `2x3xf32`-style type strings, the
//! `HostTensor` value (dtype + shape + little-endian bytes), tensor literals
//! as written on a command line (`2x3xf32=1,2,3,4,5,6`, splat `2x3xf32=0`),
//! and iree-run-module-style printing (`2x3xf32=[[1 2 3][4 5 6]]`).
//!
//! Kept free of OpenCL so the parsing and formatting rules are unit-tested
//! on their own.

use std::fmt;
use std::str::FromStr;

use half::f16;
use serde::Serialize;

use crate::abi;
use crate::error::{Error, Result};
pub use crate::host_bytes::HostBytes;
use tcc_abi::minifloat::Minifloat;

/// Element type of a tensor crossing the ABI (`enum tcc_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum DType {
    F32,
    F16,
    I32,
    I64,
    I8,
    /// `i1`: one byte per element, 0 or 1.
    Bool,
    /// bfloat16: the top 16 bits of an IEEE f32.
    BF16,
    F64,
    I16,
    U8,
    U16,
    U32,
    U64,
    /// The minifloats, one byte an element (`tcc_abi::minifloat`).
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    /// float4e2m1 in the low 4 bits of its byte.
    F4E2M1,
}

impl DType {
    pub const ALL: [DType; 18] = [
        DType::F32,
        DType::F16,
        DType::I32,
        DType::I64,
        DType::I8,
        DType::Bool,
        DType::BF16,
        DType::F64,
        DType::I16,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::F4E2M1,
    ];

    /// The `enum tcc_dtype` value, or `None` for an unknown code.
    pub fn from_abi(code: u32) -> Option<Self> {
        DType::ALL.into_iter().find(|d| d.to_abi() == code)
    }

    pub fn to_abi(self) -> u32 {
        match self {
            DType::F32 => abi::TCC_DTYPE_F32,
            DType::F16 => abi::TCC_DTYPE_F16,
            DType::I32 => abi::TCC_DTYPE_I32,
            DType::I64 => abi::TCC_DTYPE_I64,
            DType::I8 => abi::TCC_DTYPE_I8,
            DType::Bool => abi::TCC_DTYPE_BOOL,
            DType::BF16 => abi::TCC_DTYPE_BF16,
            DType::F64 => abi::TCC_DTYPE_F64,
            DType::I16 => abi::TCC_DTYPE_I16,
            DType::U8 => abi::TCC_DTYPE_U8,
            DType::U16 => abi::TCC_DTYPE_U16,
            DType::U32 => abi::TCC_DTYPE_U32,
            DType::U64 => abi::TCC_DTYPE_U64,
            DType::F8E4M3FN => abi::TCC_DTYPE_F8E4M3FN,
            DType::F8E4M3FNUZ => abi::TCC_DTYPE_F8E4M3FNUZ,
            DType::F8E5M2 => abi::TCC_DTYPE_F8E5M2,
            DType::F8E5M2FNUZ => abi::TCC_DTYPE_F8E5M2FNUZ,
            DType::F4E2M1 => abi::TCC_DTYPE_F4E2M1,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F4E2M1 => 1,
        }
    }

    /// MLIR-style name: `f32`, `f16`, `bf16`, `f64`, `i64`, `i32`, `i16`,
    /// `i8`, `ui8`, `ui16`, `ui32`, `ui64`, `i1`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::I8 => "i8",
            DType::Bool => "i1",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I16 => "i16",
            DType::U8 => "ui8",
            DType::U16 => "ui16",
            DType::U32 => "ui32",
            DType::U64 => "ui64",
            DType::F8E4M3FN => "f8E4M3FN",
            DType::F8E4M3FNUZ => "f8E4M3FNUZ",
            DType::F8E5M2 => "f8E5M2",
            DType::F8E5M2FNUZ => "f8E5M2FNUZ",
            DType::F4E2M1 => "f4E2M1FN",
        }
    }

    /// Whether the elements are floating point.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
            || self.minifloat().is_some()
    }

    /// The layout of a minifloat type.
    pub fn minifloat(self) -> Option<Minifloat> {
        Some(match self {
            DType::F8E4M3FN => Minifloat::F8E4M3FN,
            DType::F8E4M3FNUZ => Minifloat::F8E4M3FNUZ,
            DType::F8E5M2 => Minifloat::F8E5M2,
            DType::F8E5M2FNUZ => Minifloat::F8E5M2FNUZ,
            DType::F4E2M1 => Minifloat::F4E2M1,
            _ => return None,
        })
    }

    /// One element (its `size()` little-endian bytes) as an f64: exact for
    /// every float type and for integers up to 2^53.
    pub fn value_f64(self, b: &[u8]) -> f64 {
        match self {
            DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            DType::F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::F64 => f64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            DType::I64 => i64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as f64,
            DType::I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
            DType::I8 => b[0] as i8 as f64,
            DType::U8 | DType::Bool => b[0] as f64,
            DType::U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
            DType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            DType::U64 => u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as f64,
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F4E2M1 => self.minifloat().expect("a minifloat").decode(b[0]),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "unknown element type `{s}` (expected one of f32, f16, bf16, f64, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN)"
                ))
            })
    }
}

/// `text` shortened for an error message when it is longer than 200
/// characters (a huge literal on the command line).
pub fn abbreviate(text: &str) -> String {
    let count = text.chars().count();
    if count <= 200 {
        return text.to_string();
    }
    let head: String = text.chars().take(150).collect();
    let tail: String = text.chars().skip(count - 30).collect();
    format!("{head} ... ({count} characters in all) ... {tail}")
}

/// `2x3xf32`; a rank-0 tensor is just `f32`.
pub fn type_string(shape: &[usize], dtype: DType) -> String {
    let mut s = String::new();
    for d in shape {
        s.push_str(&d.to_string());
        s.push('x');
    }
    s.push_str(dtype.name());
    s
}

/// Parses `2x3xf32` (or `f32` for a scalar) into shape and dtype.
pub fn parse_type(s: &str) -> Result<(Vec<usize>, DType)> {
    let s = s.trim();
    let bad = |why: &str| {
        Error::InvalidInput(format!(
            "bad tensor type `{s}`: {why} (expected e.g. 2x3xf32)"
        ))
    };
    let mut parts: Vec<&str> = s.split('x').collect();
    let dtype_str = parts.pop().unwrap_or_default();
    let dtype: DType = dtype_str
        .parse()
        .map_err(|_| bad(&format!("unknown element type `{dtype_str}`")))?;
    let shape = parts
        .iter()
        .map(|p| {
            p.parse::<usize>()
                .map_err(|_| bad(&format!("`{p}` is not a dimension")))
        })
        .collect::<Result<Vec<_>>>()?;
    element_count(&shape).ok_or_else(|| bad("too many elements"))?;
    Ok((shape, dtype))
}

/// Number of elements of `shape`, `None` on overflow.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Bytes needed by a tensor, `None` on overflow.
pub fn byte_size(shape: &[usize], dtype: DType) -> Option<usize> {
    element_count(shape)?.checked_mul(dtype.size())
}

/// A tensor in host memory: element type, shape, and the elements as
/// little-endian bytes in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// The elements; dereferences to `[u8]`. Tensors the runtime creates
    /// (call outputs, `.npy` files) are aligned so that a CPU device can
    /// use them in place (see [`HostBytes`]).
    pub bytes: HostBytes,
}

impl HostTensor {
    /// Checks that `bytes` holds exactly the elements of `shape`.
    pub fn new(dtype: DType, shape: Vec<usize>, bytes: Vec<u8>) -> Result<Self> {
        Self::from_bytes(dtype, shape, bytes.into())
    }

    /// Like [`HostTensor::new`], from either kind of [`HostBytes`].
    pub fn from_bytes(dtype: DType, shape: Vec<usize>, bytes: HostBytes) -> Result<Self> {
        let want = byte_size(&shape, dtype).ok_or_else(|| {
            Error::InvalidInput(format!(
                "tensor {} is too large",
                type_string(&shape, dtype)
            ))
        })?;
        if bytes.len() != want {
            return Err(Error::InvalidInput(format!(
                "tensor {} needs {want} bytes, got {}",
                type_string(&shape, dtype),
                bytes.len()
            )));
        }
        Ok(HostTensor {
            dtype,
            shape,
            bytes,
        })
    }

    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Result<Self> {
        let n = byte_size(&shape, dtype).ok_or_else(|| {
            Error::InvalidInput(format!(
                "tensor {} is too large",
                type_string(&shape, dtype)
            ))
        })?;
        Ok(HostTensor {
            dtype,
            shape,
            bytes: HostBytes::zeroed(n),
        })
    }

    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Result<Self> {
        Self::new(
            DType::F32,
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    pub fn from_i32(shape: Vec<usize>, values: &[i32]) -> Result<Self> {
        Self::new(
            DType::I32,
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// The elements as `f32`; an error unless the tensor is `f32`.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        self.expect_dtype(DType::F32)?;
        Ok(self
            .bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The elements as `i32`; an error unless the tensor is `i32`.
    pub fn to_i32(&self) -> Result<Vec<i32>> {
        self.expect_dtype(DType::I32)?;
        Ok(self
            .bytes
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn expect_dtype(&self, want: DType) -> Result<()> {
        if self.dtype == want {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "tensor is {}, not {want}",
                self.type_string()
            )))
        }
    }

    pub fn num_elements(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    /// `2x3xf32`.
    pub fn type_string(&self) -> String {
        type_string(&self.shape, self.dtype)
    }

    /// Parses a literal: `2x3xf32=1,2,3,4,5,6`, `2x3xf32=[1 2 3][4 5 6]`,
    /// or a splat `2x3xf32=0`. Values are separated by commas, spaces or
    /// brackets; booleans accept 0/1/true/false.
    pub fn parse_literal(spec: &str) -> Result<Self> {
        let (ty, values) = spec.split_once('=').ok_or_else(|| {
            Error::InvalidInput(format!(
                "bad tensor literal `{spec}`: expected TYPE=VALUES, e.g. 2x3xf32=1,2,3,4,5,6"
            ))
        })?;
        let (shape, dtype) = parse_type(ty)?;
        check_brackets(values)
            .map_err(|why| Error::InvalidInput(format!("bad tensor literal `{spec}`: {why}")))?;
        let tokens: Vec<&str> = values
            .split(|c: char| c == ',' || c == '[' || c == ']' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .collect();
        let n = element_count(&shape).unwrap_or(usize::MAX);
        let ty = type_string(&shape, dtype);
        if tokens.len() != n && !(tokens.len() == 1 && n > 0) {
            return Err(Error::InvalidInput(format!(
                "tensor literal {ty} needs {n} values (or 1 to splat), got {}",
                tokens.len()
            )));
        }
        let mut one = Vec::with_capacity(tokens.len() * dtype.size());
        for t in &tokens {
            encode_value(dtype, t, &mut one).map_err(|why| {
                Error::InvalidInput(format!(
                    "bad {dtype} value `{t}` in tensor literal {ty}: {why}"
                ))
            })?;
        }
        let bytes = if tokens.len() == n {
            one
        } else {
            // A splat of a huge type: an error, not an allocation abort.
            let total = n.checked_mul(one.len()).unwrap_or(usize::MAX);
            let mut bytes = Vec::new();
            bytes.try_reserve_exact(total).map_err(|_| {
                Error::InvalidInput(format!(
                    "tensor literal {ty} needs {total} bytes, more than can be allocated"
                ))
            })?;
            for _ in 0..n {
                bytes.extend_from_slice(&one);
            }
            bytes
        };
        // Aligned (one copy here, none per call): a CPU device reads a
        // literal input in place.
        HostTensor::from_bytes(dtype, shape, HostBytes::copy_aligned(&bytes))
    }

    /// The element at flat index `i`, formatted for printing.
    fn element_string(&self, i: usize) -> String {
        let s = self.dtype.size();
        let b = &self.bytes[i * s..(i + 1) * s];
        match self.dtype {
            DType::F32 => format_float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64, false),
            DType::F16
            | DType::BF16
            | DType::F64
            | DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F4E2M1 => format_float(self.dtype.value_f64(b), true),
            DType::I64 => {
                i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]).to_string()
            }
            DType::U64 => {
                u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]).to_string()
            }
            DType::Bool => if b[0] != 0 { "1" } else { "0" }.to_string(),
            // Every other integer fits an f64 exactly.
            _ => (self.dtype.value_f64(b) as i64).to_string(),
        }
    }

    /// iree-run-module style: `2x3xf32=[[1 2 3][4 5 6]]`, `3xi32=[1 2 3]`,
    /// `f32=5`. After `max_elements` elements the rest is elided as `...`.
    pub fn format(&self, max_elements: usize) -> String {
        let mut out = self.type_string();
        out.push('=');
        let mut state = FormatState {
            next: 0,
            max: max_elements,
            elided: false,
        };
        self.format_dims(&self.shape, &mut state, &mut out);
        out
    }

    fn format_dims(&self, dims: &[usize], st: &mut FormatState, out: &mut String) {
        let Some((&d, rest)) = dims.split_first() else {
            if st.next < st.max {
                out.push_str(&self.element_string(st.next));
            } else if !st.elided {
                out.push_str("...");
                st.elided = true;
            }
            st.next += 1;
            return;
        };
        out.push('[');
        for i in 0..d {
            if st.elided {
                break;
            }
            if i > 0 && rest.is_empty() {
                out.push(' ');
            }
            self.format_dims(rest, st, out);
        }
        out.push(']');
    }
}

struct FormatState {
    next: usize,
    max: usize,
    elided: bool,
}

fn format_float(v: f64, is_half: bool) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() || (1e-4..1e7).contains(&a) {
        if is_half {
            format!("{}", v)
        } else {
            format!("{}", v as f32)
        }
    } else if is_half {
        format!("{:e}", v)
    } else {
        format!("{:e}", v as f32)
    }
}

/// Appends the little-endian encoding of `token` as `dtype` to `out`.
/// Brackets in a literal's values must pair up (`[[1]` is an error).
fn check_brackets(values: &str) -> std::result::Result<(), String> {
    let mut depth = 0usize;
    for (at, c) in values.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    format!("unbalanced brackets: the `]` at offset {at} closes nothing")
                })?
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(format!("unbalanced brackets: {depth} `[` not closed"));
    }
    Ok(())
}

/// `token` as a float of at most `max` in magnitude: a number past it
/// (`1e999`, or `70000` for f16) is an error, not a silent infinity;
/// `inf`, `-inf` and `nan` spelled out are kept.
fn finite_float(token: &str, max: f64, dtype: DType) -> std::result::Result<f32, String> {
    let value: f64 = token.parse().map_err(|e| format!("{e}"))?;
    if value.is_finite() && value.abs() > max {
        return Err(format!("out of {dtype} range (largest finite: {max:e})"));
    }
    if value.is_infinite() && !token.to_ascii_lowercase().contains("inf") {
        return Err(format!("out of {dtype} range (largest finite: {max:e})"));
    }
    Ok(value as f32)
}

fn encode_value(dtype: DType, token: &str, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    let int = |lo: i64, hi: i64| -> std::result::Result<i64, String> {
        let v: i64 = token.parse().map_err(|e| format!("{e}"))?;
        if v < lo || v > hi {
            return Err(format!("out of range [{lo}, {hi}]"));
        }
        Ok(v)
    };
    match dtype {
        DType::F32 => out.extend(finite_float(token, f32::MAX as f64, dtype)?.to_le_bytes()),
        DType::F16 => {
            out.extend(f16::from_f32(finite_float(token, f16::MAX.to_f64(), dtype)?).to_le_bytes())
        }
        DType::I32 => out.extend((int(i32::MIN as i64, i32::MAX as i64)? as i32).to_le_bytes()),
        DType::I64 => out.extend(int(i64::MIN, i64::MAX)?.to_le_bytes()),
        DType::I8 => out.push(int(i8::MIN as i64, i8::MAX as i64)? as i8 as u8),
        DType::BF16 => out.extend(
            half::bf16::from_f32(token.parse::<f32>().map_err(|e| e.to_string())?).to_le_bytes(),
        ),
        DType::F64 => out.extend(
            token
                .parse::<f64>()
                .map_err(|e| e.to_string())?
                .to_le_bytes(),
        ),
        DType::I16 => out.extend((int(i16::MIN as i64, i16::MAX as i64)? as i16).to_le_bytes()),
        DType::U8 => out.push(int(0, u8::MAX as i64)? as u8),
        DType::U16 => out.extend((int(0, u16::MAX as i64)? as u16).to_le_bytes()),
        DType::U32 => out.extend((int(0, u32::MAX as i64)? as u32).to_le_bytes()),
        DType::U64 => out.extend(
            token
                .parse::<u64>()
                .map_err(|e| format!("{e} (expected 0 to {})", u64::MAX))?
                .to_le_bytes(),
        ),
        DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2 | DType::F8E5M2FNUZ | DType::F4E2M1 => {
            let format = dtype.minifloat().expect("a minifloat");
            let max = format.decode(format.max_bits() as u8);
            // Rounded to nearest even; a number past the largest finite
            // value is an error, as for the other float types.
            out.push(format.encode(finite_float(token, max, dtype)? as f64, false))
        }
        DType::Bool => out.push(match token {
            "0" | "false" => 0,
            "1" | "true" => 1,
            _ => return Err("expected 0, 1, true or false".into()),
        }),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbalanced_brackets_and_out_of_range_floats_are_errors() {
        for (spec, needle) in [
            ("1x4x16xf32=[[[1]]", "1 `[` not closed"),
            ("4xf32=[1 2 3 4]]", "closes nothing"),
            ("f32=1e999", "out of f32 range"),
            ("f32=-1e39", "out of f32 range"),
            ("f16=70000", "out of f16 range"),
        ] {
            let e = HostTensor::parse_literal(spec).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        for (spec, value) in [
            ("f32=inf", f32::INFINITY),
            ("f32=-inf", f32::NEG_INFINITY),
            ("f32=3.4e38", 3.4e38),
            ("f32=1e-50", 0.0),
        ] {
            let t = HostTensor::parse_literal(spec).unwrap();
            assert_eq!(t.to_f32().unwrap(), vec![value], "{spec}");
        }
        assert!(
            HostTensor::parse_literal("f32=nan")
                .unwrap()
                .to_f32()
                .unwrap()[0]
                .is_nan()
        );
        assert!(HostTensor::parse_literal("1x2x2xf32=[[[1 2][3 4]]]").is_ok());
    }

    #[test]
    fn dtype_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
            assert_eq!(DType::from_abi(d.to_abi()), Some(d));
        }
        assert_eq!("i1".parse::<DType>().unwrap(), DType::Bool);
        assert_eq!(DType::from_abi(6), Some(DType::BF16));
        assert_eq!(DType::from_abi(13), Some(DType::F8E4M3FN));
        assert_eq!(DType::from_abi(18), None);
        assert_eq!("ui16".parse::<DType>().unwrap(), DType::U16);
        assert!("u16".parse::<DType>().is_err());
        assert!("f8".parse::<DType>().is_err());
    }

    #[test]
    fn minifloat_literals_round_and_print() {
        // 0.3 rounds to 0.3125 = 1.25 * 2^-2 in e4m3fn (0x2A); 448 is its
        // largest value.
        let t = HostTensor::parse_literal("3xf8E4M3FN=0.3,-448,0").unwrap();
        assert_eq!(t.bytes.to_vec(), vec![0x2A, 0xFE, 0x00]);
        assert_eq!(t.format(1024), "3xf8E4M3FN=[0.3125 -448 0]");
        assert!(HostTensor::parse_literal("1xf8E4M3FN=500").is_err());
        let e5m2 = HostTensor::parse_literal("2xf8E5M2=inf,-1.5").unwrap();
        assert_eq!(e5m2.bytes.to_vec(), vec![0x7C, 0xBE]);
        assert_eq!(DType::F4E2M1.value_f64(&[0xF]), -6.0);
    }

    #[test]
    fn type_strings() {
        assert_eq!(parse_type("2x3xf32").unwrap(), (vec![2, 3], DType::F32));
        assert_eq!(parse_type("i1").unwrap(), (vec![], DType::Bool));
        assert_eq!(parse_type("0x4xi8").unwrap(), (vec![0, 4], DType::I8));
        assert_eq!(type_string(&[1, 8, 128], DType::F32), "1x8x128xf32");
        assert_eq!(type_string(&[], DType::I64), "i64");
        for bad in [
            "2x3",
            "2x3xf8",
            "ax3xf32",
            "2xx3xf32",
            "",
            "-1xf32",
            "99999999999x99999999999x9999999999xf32",
        ] {
            assert!(parse_type(bad).is_err(), "{bad} should not parse");
        }
        let e = parse_type("2x3xf8").unwrap_err().to_string();
        assert!(e.contains("unknown element type `f8`"), "{e}");
        assert_eq!(parse_type("2xbf16").unwrap(), (vec![2], DType::BF16));
        assert_eq!(parse_type("ui64").unwrap(), (vec![], DType::U64));
    }

    #[test]
    fn literals() {
        let t = HostTensor::parse_literal("2x3xf32=1,2,3,4,5,6").unwrap();
        assert_eq!(t.to_f32().unwrap(), vec![1., 2., 3., 4., 5., 6.]);
        let t = HostTensor::parse_literal("2x3xf32=[1 2 3][4 5 6]").unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        let t = HostTensor::parse_literal("2x2xi32=7").unwrap();
        assert_eq!(t.to_i32().unwrap(), vec![7; 4]);
        let t = HostTensor::parse_literal("3xi1=1,false,true").unwrap();
        assert_eq!(t.bytes, vec![1, 0, 1]);
        let t = HostTensor::parse_literal("2xf16=1.5,-2").unwrap();
        assert_eq!(
            t.bytes,
            [
                f16::from_f32(1.5).to_le_bytes(),
                f16::from_f32(-2.0).to_le_bytes()
            ]
            .concat()
        );
        let t = HostTensor::parse_literal("i64=-5").unwrap();
        assert_eq!(t.bytes, (-5i64).to_le_bytes());
        let t = HostTensor::parse_literal("0x3xf32=").unwrap();
        assert!(t.bytes.is_empty());

        let e = HostTensor::parse_literal("2x3xf32=1,2,3,4")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "tensor literal 2x3xf32 needs 6 values (or 1 to splat), got 4"
        );
        let e = HostTensor::parse_literal("2xi8=1,300")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad i8 value `300`") && e.contains("out of range"),
            "{e}"
        );
        assert!(HostTensor::parse_literal("2xf32").is_err());
        assert!(HostTensor::parse_literal("2xf32=a,b").is_err());
        assert!(HostTensor::parse_literal("2xi1=2,0").is_err());
    }

    #[test]
    fn formatting() {
        let t = HostTensor::from_f32(vec![2, 3], &[1., 2., 3., 4., 5., 6.]).unwrap();
        assert_eq!(t.format(1024), "2x3xf32=[[1 2 3][4 5 6]]");
        assert_eq!(t.format(4), "2x3xf32=[[1 2 3][4 ...]]");
        let t = HostTensor::from_f32(vec![3], &[0.5, -1.25, 1e-9]).unwrap();
        assert_eq!(t.format(1024), "3xf32=[0.5 -1.25 1e-9]");
        let t = HostTensor::from_i32(vec![], &[42]).unwrap();
        assert_eq!(t.format(1024), "i32=42");
        let t = HostTensor::parse_literal("2x2xi1=1,0,0,1").unwrap();
        assert_eq!(t.format(1024), "2x2xi1=[[1 0][0 1]]");
        let t = HostTensor::parse_literal("2xi8=-3,4").unwrap();
        assert_eq!(t.format(1024), "2xi8=[-3 4]");
        let t = HostTensor::parse_literal("0x2xf32=").unwrap();
        assert_eq!(t.format(1024), "0x2xf32=[]");
    }

    #[test]
    fn a_huge_splat_literal_is_an_error_not_an_abort() {
        let e = HostTensor::parse_literal("1000000000x1000000xf32=1").unwrap_err();
        assert!(e.to_string().contains("more than can be allocated"), "{e}");
        let e = HostTensor::parse_literal("99999999999x99999999999x9999999xf32=1").unwrap_err();
        assert!(e.to_string().contains("too many elements"), "{e}");
    }

    #[test]
    fn host_tensor_checks_sizes() {
        assert!(HostTensor::new(DType::F32, vec![2], vec![0; 7]).is_err());
        assert!(HostTensor::from_f32(vec![2, 2], &[1.0; 3]).is_err());
        let t = HostTensor::zeros(DType::I64, vec![3]).unwrap();
        assert_eq!(t.bytes.len(), 24);
        assert!(t.to_f32().is_err());
    }
}
