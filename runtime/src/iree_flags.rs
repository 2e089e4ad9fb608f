//! iree-run-module's conventions beyond `--input=@x.npy` and literals,
//! shared by `tcc-run`, `tcc-benchmark` and `tcc run`:
//!
//! - `--input=2x3xf32=@raw.bin`: a typed input whose bytes come from a file
//!   (raw little-endian C-order elements, exactly the type's size; a
//!   `.npy` file after the `=` is read as `.npy` and must have that type);
//! - `--output=@y.bin` writes raw bytes (`@y.npy` and any other name write
//!   `.npy`); `--output=+y.npy` / `+y.bin` appends to the file, so that
//!   several outputs or several runs collect in one file (`np.load` reads
//!   the arrays of an appended `.npy` file one after another from an open
//!   file);
//! - `--expected_output=@ref.npy` (or a literal, or `-` to skip one)
//!   compares each result with a tolerance: `|got - expected| <= atol +
//!   rtol * |expected|` for floating-point types (`--expected_f32_threshold`
//!   is IREE's absolute threshold, default 1e-4; `--expected_rtol` adds a
//!   relative one, default 0), exact for integers and booleans. A mismatch
//!   names the result, how many elements differ, and the first five with
//!   both values ("... and N more"); the results themselves are not
//!   printed unless an `--output` asks (as iree-run-module does).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::tensor::{HostTensor, byte_size, parse_type, type_string};

/// Splits `TYPE=@FILE` into the type and the file, if `spec` has that form.
pub fn typed_file(spec: &str) -> Option<(&str, &str)> {
    let (ty, rest) = spec.split_once('=')?;
    let path = rest.strip_prefix('@')?;
    (!ty.is_empty() && !ty.starts_with('@')).then_some((ty, path))
}

/// Reads a `TYPE=@FILE` input.
pub fn read_typed_file(spec: &str) -> Result<HostTensor> {
    let (ty, path) = typed_file(spec)
        .ok_or_else(|| Error::InvalidInput(format!("--input={spec}: expected TYPE=@FILE")))?;
    let (shape, dtype) =
        parse_type(ty).map_err(|e| Error::InvalidInput(format!("--input={spec}: {e}")))?;
    if path.ends_with(".npy") {
        let tensor = crate::npy::read_npy(Path::new(path))?;
        if tensor.dtype != dtype || tensor.shape != shape {
            return Err(Error::InvalidInput(format!(
                "--input={spec}: {path} holds {}, not {}",
                tensor.type_string(),
                type_string(&shape, dtype)
            )));
        }
        return Ok(tensor);
    }
    let expected = byte_size(&shape, dtype)
        .ok_or_else(|| Error::InvalidInput(format!("--input={spec}: the type is too large")))?;
    let size = std::fs::metadata(path)
        .map_err(|e| Error::InvalidInput(format!("--input={spec}: cannot read {path}: {e}")))?
        .len();
    if size != expected as u64 {
        return Err(Error::InvalidInput(format!(
            "--input={spec}: {path} has {size} bytes, {} needs {expected}",
            type_string(&shape, dtype)
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Error::InvalidInput(format!("--input={spec}: cannot read {path}: {e}")))?;
    HostTensor::from_bytes(dtype, shape, crate::HostBytes::copy_aligned(&bytes))
}

/// Writes `tensor` to `path` as raw bytes, or appends it (`.npy` or raw by
/// the extension) when `append`.
pub fn write_file(path: &Path, tensor: &HostTensor, append: bool) -> Result<()> {
    let raw = path.extension().is_some_and(|e| e == "bin");
    let bytes: Vec<u8> = if raw {
        tensor.bytes.to_vec()
    } else {
        crate::npy::npy_bytes(tensor)?
    };
    let fail =
        |e: std::io::Error| Error::InvalidInput(format!("cannot write {}: {e}", path.display()));
    if append {
        crate::output_file::append_output(path, |out| out.write_all(&bytes)).map_err(fail)
    } else if raw {
        crate::output_file::write_output_bytes(path, &bytes, false).map_err(fail)
    } else {
        crate::npy::write_npy(path, tensor)
    }
}

/// An `--expected_output` value.
#[derive(Clone, Debug)]
pub enum Expected {
    /// `-`: this result is not checked.
    Ignore,
    /// A tensor to compare with, and where it came from.
    Tensor(HostTensor, String),
}

/// Parses `--expected_output`: `-`, `@FILE.npy`, `TYPE=@FILE` or a literal.
pub fn parse_expected(spec: &str) -> Result<Expected> {
    if spec == "-" {
        return Ok(Expected::Ignore);
    }
    if let Some(path) = spec.strip_prefix('@') {
        return Ok(Expected::Tensor(
            crate::npy::read_npy(Path::new(path))?,
            path.to_string(),
        ));
    }
    if typed_file(spec).is_some() {
        return Ok(Expected::Tensor(read_typed_file(spec)?, spec.to_string()));
    }
    let tensor = HostTensor::parse_literal(spec)
        .map_err(|e| Error::InvalidInput(format!("--expected_output={spec}: {e}")))?;
    Ok(Expected::Tensor(tensor, "the command line".into()))
}

/// Tolerances of `--expected_output`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            atol: 1e-4,
            rtol: 0.0,
        }
    }
}

fn values(t: &HostTensor) -> Vec<f64> {
    let c = t.dtype.size();
    t.bytes
        .chunks_exact(c)
        .map(|b| t.dtype.value_f64(b))
        .collect()
}

/// The multi-index of flat element `flat` of `shape`, as `(i, j, k)`.
fn index_of(mut flat: usize, shape: &[usize]) -> String {
    let mut index = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            index[i] = flat % d;
            flat /= d;
        }
    }
    format!(
        "({})",
        index
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// How many differing elements a `[FAILED]` line lists before "... and N
/// more".
pub const SHOWN_MISMATCHES: usize = 5;

/// Compares result `index` with its expected value; the error says in how
/// many elements they differ and lists the first [`SHOWN_MISMATCHES`].
pub fn compare(
    index: usize,
    got: &HostTensor,
    expected: &HostTensor,
    source: &str,
    tol: Tolerance,
) -> Result<(), String> {
    if got.dtype != expected.dtype || got.shape != expected.shape {
        return Err(format!(
            "result[{index}] is {}, the expected output from {source} is {}",
            got.type_string(),
            expected.type_string()
        ));
    }
    let float = got.dtype.is_float();
    // Values as their own type prints them (f32 without f64 noise).
    let show = |v: f64| {
        if float {
            format!("{}", v as f32)
        } else {
            format!("{v}")
        }
    };
    let (a, b) = (values(got), values(expected));
    let mut bad = 0usize;
    let mut shown = Vec::new();
    for (i, (&x, &y)) in a.iter().zip(&b).enumerate() {
        let ok = if float {
            (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol.atol + tol.rtol * y.abs()
        } else {
            x == y
        };
        if !ok {
            bad += 1;
            if shown.len() < SHOWN_MISMATCHES {
                shown.push((i, x, y));
            }
        }
    }
    if bad == 0 {
        return Ok(());
    }
    let rule = if float {
        format!(
            " (|got - expected| > {} + {} * |expected|)",
            tol.atol, tol.rtol
        )
    } else {
        String::new()
    };
    let mut text = format!(
        "result[{index}] ({}) differs from {source} in {bad} of {} elements{rule}; the first {}:",
        got.type_string(),
        a.len(),
        if shown.len() == 1 {
            "one".to_string()
        } else {
            shown.len().to_string()
        }
    );
    for &(i, x, y) in &shown {
        text.push_str(&format!(
            "\n  at {}: got {}, expected {}",
            index_of(i, &got.shape),
            show(x),
            show(y)
        ));
        if float {
            text.push_str(&format!(" (|difference| {:.3e})", (x - y).abs()));
        }
    }
    if bad > shown.len() {
        text.push_str(&format!("\n  ... and {} more", bad - shown.len()));
    }
    Err(text)
}

/// Checks `results` against `expected` (one per result, in order; fewer is
/// allowed). Returns the lines to print: `[SUCCESS]`, or one `[FAILED]` per
/// mismatch, and whether all matched.
pub fn check_all(
    results: &[HostTensor],
    expected: &[Expected],
    tol: Tolerance,
) -> Result<(Vec<String>, bool)> {
    if expected.len() > results.len() {
        return Err(Error::InvalidInput(format!(
            "{} --expected_output flags for {} result(s)",
            expected.len(),
            results.len()
        )));
    }
    let mut lines = Vec::new();
    for (i, (got, want)) in results.iter().zip(expected).enumerate() {
        if let Expected::Tensor(t, source) = want
            && let Err(message) = compare(i, got, t, source, tol)
        {
            lines.push(format!("[FAILED] {message}"));
        }
    }
    let ok = lines.is_empty();
    if ok {
        lines.push("[SUCCESS] all results match their expected outputs".into());
    }
    Ok((lines, ok))
}

/// `path` as given after `@` or `+`.
pub fn path_of(spec: &str) -> PathBuf {
    PathBuf::from(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_with_tolerance_and_names_the_first_difference() {
        let a = HostTensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        let b = HostTensor::from_f32(vec![2, 2], &[1.0, 2.00005, 3.0, 4.5]).unwrap();
        let e = compare(0, &a, &b, "ref.npy", Tolerance::default()).unwrap_err();
        assert!(
            e.contains("in 1 of 4 elements (|got - expected| > 0.0001 + 0 * |expected|); the first one:\n  at (1, 1): got 4, expected 4.5 (|difference| 5.000e-1)"),
            "{e}"
        );
        assert!(!e.contains("more"), "{e}");
        // Many mismatches: the first five, then how many more.
        let zeros = HostTensor::from_f32(vec![8], &[0.0; 8]).unwrap();
        let ramp = HostTensor::from_f32(vec![8], &[1., 2., 3., 4., 5., 6., 7., 0.]).unwrap();
        let e = compare(0, &zeros, &ramp, "r", Tolerance::default()).unwrap_err();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 7, "{e}");
        assert!(
            lines[0].ends_with(
                "in 7 of 8 elements (|got - expected| > 0.0001 + 0 * |expected|); the first 5:"
            ),
            "{e}"
        );
        assert_eq!(
            lines[5],
            "  at (4): got 0, expected 5 (|difference| 5.000e0)"
        );
        assert_eq!(lines[6], "  ... and 2 more");
        compare(
            0,
            &a,
            &b,
            "ref.npy",
            Tolerance {
                atol: 0.6,
                rtol: 0.0,
            },
        )
        .unwrap();
        compare(
            0,
            &a,
            &b,
            "ref.npy",
            Tolerance {
                atol: 0.0,
                rtol: 0.2,
            },
        )
        .unwrap();
        let i = HostTensor::from_i32(vec![2], &[1, 2]).unwrap();
        let e = compare(1, &a, &i, "x", Tolerance::default()).unwrap_err();
        assert!(
            e.contains("result[1] is 2x2xf32, the expected output from x is 2xi32"),
            "{e}"
        );
        assert_eq!(typed_file("2x3xf32=@raw.bin"), Some(("2x3xf32", "raw.bin")));
        assert_eq!(typed_file("@x.npy"), None);
        assert_eq!(typed_file("2xf32=1,2"), None);
    }
}
