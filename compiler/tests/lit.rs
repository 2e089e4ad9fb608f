//! Runs the lit suite (lit/) against the tcc-opt built with this test, and
//! reports every lit test as its own case (scripts/summarize-tests.sh
//! counts them one by one). Fails, never skips, when LLVM lit or FileCheck
//! is missing, when lit fails, or when lit reports a different set of tests
//! than the `.mlir` files under lit/.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{CaseResult, Tally};

fn llvm_bin() -> PathBuf {
    PathBuf::from(std::env::var("TCC_LLVM_BIN").unwrap_or_else(|_| "/usr/lib/llvm-22/bin".into()))
}

/// Every test file of the suite: the `.mlir` files under lit/, except
/// under `Inputs` directories (lit.cfg.py's excludes) and lit's own
/// `Output` directories (what RUN lines wrote).
fn suite_files(dir: &Path, root: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("read lit/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n != "Inputs" && n != "Output")
            {
                suite_files(&path, root, out);
            }
        } else if path.extension().is_some_and(|e| e == "mlir") {
            out.insert(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
}

/// One lit result line, `PASS: tcc :: passes/x.mlir (3 of 44)`, as
/// (code, test path).
fn parse_result(line: &str) -> Option<(&str, &str)> {
    let (code, rest) = line.split_once(": tcc :: ")?;
    let path = rest.rsplit_once(" (")?.0;
    code.chars()
        .all(|c| c.is_ascii_uppercase())
        .then_some((code, path))
}

#[test]
fn lit_suite() {
    let tcc_opt = PathBuf::from(env!("CARGO_BIN_EXE_tcc-opt"));
    let bin_dir = tcc_opt.parent().unwrap();
    let lit = llvm_bin().join("lit");
    assert!(
        lit.exists(),
        "LLVM lit not found at {} — run `make deps`",
        lit.display()
    );
    assert!(
        llvm_bin().join("FileCheck").exists(),
        "FileCheck not found in {} — run `make deps`",
        llvm_bin().display()
    );
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lit");
    let mut files = BTreeSet::new();
    suite_files(&suite, &suite, &mut files);
    let cache = tempfile::tempdir().expect("temp dir");
    let mut command = Command::new(&lit);
    command
        .arg("-v")
        .arg(format!("--param=tcc_bin_dir={}", bin_dir.display()))
        .arg(format!("--param=llvm_bin_dir={}", llvm_bin().display()))
        .arg(&suite);
    support::isolate_command(&mut command, cache.path());
    let output = command.output().expect("cannot start lit");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}\n{stderr}");

    let mut tally = Tally::new("lit_suite");
    let mut seen = BTreeSet::new();
    for (code, path) in stdout.lines().filter_map(parse_result) {
        let result = match code {
            "PASS" => CaseResult::Passed,
            "UNSUPPORTED" | "XFAIL" => CaseResult::Skipped(format!("lit: {code}")),
            _ => CaseResult::Failed(format!("lit: {code}")),
        };
        seen.insert(path.to_string());
        tally.add(&format!("lit/{path}"), result);
    }
    for missing in files.difference(&seen) {
        tally.add(
            &format!("lit/{missing}"),
            CaseResult::Failed("lit reported no result for it".into()),
        );
    }
    for extra in seen.difference(&files) {
        tally.add(
            &format!("lit/{extra}"),
            CaseResult::Failed("lit ran a test that is not a .mlir file under lit/".into()),
        );
    }
    if !output.status.success() && tally.counts().1 == 0 {
        // lit failed without a failing test (a configuration error: a
        // missing tool is fatal in lit.cfg.py).
        tally.add(
            "lit",
            CaseResult::Failed(format!("lit exited with {}", output.status)),
        );
    }
    tally.report();
    let (passed, failed, skipped) = tally.counts();
    assert!(
        failed == 0 && output.status.success(),
        "lit suite: {passed} passed, {failed} failed, {skipped} skipped (see the output above)"
    );
    assert!(!files.is_empty(), "no lit tests under {}", suite.display());
}
