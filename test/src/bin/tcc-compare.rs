//! tcc-compare: compares .npy outputs with expected .npy files within a
//! tolerance, the way the end-to-end suite does (|got - want| <= abs +
//! rel * |want| per element; NaN matches only NaN). Used by the device
//! bundle's run-all.sh; links only tcc-runtime (no LLVM, no OpenCL needed).
//!
//!   tcc-compare --abs=1e-5 --rel=1e-5 GOT.npy WANT.npy [GOT2.npy WANT2.npy ...]
//!   tcc-compare --exact GOT.npy WANT.npy ...
//!
//! `--exact` asks for bit-for-bit equality as the ONNX scoreboard's exact
//! cases do: equal values, -0 told apart from +0, NaN matching only NaN
//! (its payload aside), integers compared as integers.
//!
//! Exit status 0 when every pair matches, 1 on a mismatch, 2 on bad usage
//! or unreadable files.

use std::path::Path;
use std::process::ExitCode;

use tcc_e2e::{Tolerance, compare};
use tcc_runtime::npy::read_npy;
use tcc_runtime::{DType, HostTensor};

const USAGE: &str =
    "usage: tcc-compare (--abs=A --rel=R | --exact) GOT.npy WANT.npy [GOT.npy WANT.npy ...]";

/// Why `got` is not bit for bit `want` (see `--exact`), or `None`.
fn exact_mismatch(got: &HostTensor, want: &HostTensor) -> Option<String> {
    if got.dtype != want.dtype || got.shape != want.shape {
        return Some(format!(
            "type mismatch: got {}, want {}",
            got.type_string(),
            want.type_string()
        ));
    }
    let float = matches!(got.dtype, DType::F32 | DType::F16);
    let (g, w) = (tcc_e2e::to_f64(got), tcc_e2e::to_f64(want));
    let width = got.dtype.size();
    let differs = |i: usize| {
        if float {
            let (a, b) = (g[i], w[i]);
            if a.is_nan() || b.is_nan() {
                !(a.is_nan() && b.is_nan())
            } else {
                a != b || a.is_sign_negative() != b.is_sign_negative()
            }
        } else {
            got.bytes[i * width..(i + 1) * width] != want.bytes[i * width..(i + 1) * width]
        }
    };
    let bad: Vec<usize> = (0..g.len()).filter(|&i| differs(i)).collect();
    let &first = bad.first()?;
    Some(format!(
        "{} of {} elements differ (bit for bit); first at flat index {first}: got {:?}, want {:?}",
        bad.len(),
        g.len(),
        g[first],
        w[first]
    ))
}

fn main() -> ExitCode {
    let mut abs = None;
    let mut rel = None;
    let mut exact = false;
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        if let Some(v) = arg.strip_prefix("--abs=") {
            abs = v.parse::<f64>().ok();
        } else if let Some(v) = arg.strip_prefix("--rel=") {
            rel = v.parse::<f64>().ok();
        } else if arg == "--exact" {
            exact = true;
        } else if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        } else if arg.starts_with("--") {
            eprintln!("tcc-compare: unknown flag {arg}\n{USAGE}");
            return ExitCode::from(2);
        } else {
            files.push(arg);
        }
    }
    let (abs, rel) = match (abs, rel, exact) {
        (None, None, true) => (0.0, 0.0),
        (Some(abs), Some(rel), false) => (abs, rel),
        _ => {
            eprintln!("tcc-compare: give --abs and --rel (numbers), or --exact alone\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if files.is_empty() || files.len() % 2 != 0 {
        eprintln!("tcc-compare: give GOT WANT pairs\n{USAGE}");
        return ExitCode::from(2);
    }
    let tolerance = Tolerance { abs, rel };
    let mut failed = false;
    for pair in files.chunks(2) {
        let (got, want) = match (read_npy(Path::new(&pair[0])), read_npy(Path::new(&pair[1]))) {
            (Ok(g), Ok(w)) => (g, w),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("tcc-compare: {e}");
                return ExitCode::from(2);
            }
        };
        let result = if exact {
            exact_mismatch(&got, &want).map_or(Ok(()), Err)
        } else {
            compare(&got, &want, tolerance)
        };
        match result {
            Ok(()) => println!("ok   {}", pair[0]),
            Err(message) => {
                println!("FAIL {} vs {}: {message}", pair[0], pair[1]);
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
