//! tcc-compare: compares .npy outputs with expected .npy files within a
//! tolerance, the way the end-to-end suite does (|got - want| <= abs +
//! rel * |want| per element; NaN matches only NaN). Used by the device
//! bundle's run-all.sh; links only tcc-runtime (no LLVM, no OpenCL needed).
//!
//!   tcc-compare --abs=1e-5 --rel=1e-5 GOT.npy WANT.npy [GOT2.npy WANT2.npy ...]
//!
//! Exit status 0 when every pair matches, 1 on a mismatch, 2 on bad usage
//! or unreadable files.

use std::path::Path;
use std::process::ExitCode;

use tcc_e2e::{Tolerance, compare};
use tcc_runtime::npy::read_npy;

const USAGE: &str = "usage: tcc-compare --abs=A --rel=R GOT.npy WANT.npy [GOT.npy WANT.npy ...]";

fn main() -> ExitCode {
    let mut abs = None;
    let mut rel = None;
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        if let Some(v) = arg.strip_prefix("--abs=") {
            abs = v.parse::<f64>().ok();
        } else if let Some(v) = arg.strip_prefix("--rel=") {
            rel = v.parse::<f64>().ok();
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
    let (Some(abs), Some(rel)) = (abs, rel) else {
        eprintln!("tcc-compare: --abs and --rel are required (numbers)\n{USAGE}");
        return ExitCode::from(2);
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
        match compare(&got, &want, tolerance) {
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
