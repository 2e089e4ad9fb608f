//! MLIR literal text: float and element literals, nested `dense<[...]>`
//! bodies, hex blobs, identifiers and quoted strings.

use std::fmt::Write as _;

use super::super::dtype::DType;
use super::super::tensor::Const;

/// Formats an f32 as an MLIR float literal (always with a '.' in the
/// mantissa), or its bit pattern for non-finite values.
pub fn float_literal(value: f64, dtype: DType) -> String {
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 => {
            let v = value as f32;
            if !v.is_finite() {
                return match dtype {
                    DType::F16 => format!("0x{:04X}", super::super::dtype::f32_to_f16(v)),
                    DType::BF16 => format!("0x{:04X}", v.to_bits() >> 16),
                    _ => format!("0x{:08X}", v.to_bits()),
                };
            }
            mantissa_with_point(format!("{v:e}"))
        }
        _ => {
            if !value.is_finite() {
                return format!("0x{:016X}", value.to_bits());
            }
            mantissa_with_point(format!("{value:e}"))
        }
    }
}

fn mantissa_with_point(text: String) -> String {
    match text.find('e') {
        Some(at) if !text[..at].contains('.') => format!("{}.0{}", &text[..at], &text[at..]),
        _ => text,
    }
}

/// One element of `c` as an MLIR literal.
pub(super) fn element_literal(c: &Const, index: usize) -> String {
    match c.dtype {
        DType::Bool => if c.i64_at(index) != 0 {
            "true"
        } else {
            "false"
        }
        .to_string(),
        d if d.is_float() => float_literal(c.f64_at(index), d),
        _ => c.i64_at(index).to_string(),
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(text, "{b:02X}");
    }
    text
}

/// `[[1, 2], [3, 4]]` for a shape and a flat element writer.
pub(super) fn nested(
    shape: &[i64],
    at: &mut usize,
    element: &dyn Fn(usize) -> String,
    out: &mut String,
) {
    match shape.split_first() {
        None => {
            out.push_str(&element(*at));
            *at += 1;
        }
        Some((&n, rest)) => {
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                nested(rest, at, element, out);
            }
            out.push(']');
        }
    }
}

/// MLIR identifier-safe version of a name.
pub fn sanitize(name: &str) -> String {
    let mut text: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_digit()) {
        text.insert(0, '_');
    }
    text
}

/// A string attribute literal with MLIR escapes.
pub fn string_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\22"),
            '\\' => out.push_str("\\5C"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
