//! Runs the lit suite (lit/) against the tcc-opt built with this test.
//! Fails, never skips, when LLVM lit or FileCheck is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn llvm_bin() -> PathBuf {
    PathBuf::from(std::env::var("TCC_LLVM_BIN").unwrap_or_else(|_| "/usr/lib/llvm-22/bin".into()))
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
    let status = Command::new(&lit)
        .arg("-sv")
        .arg(format!("--param=tcc_bin_dir={}", bin_dir.display()))
        .arg(format!("--param=llvm_bin_dir={}", llvm_bin().display()))
        .arg(&suite)
        .status()
        .expect("cannot start lit");
    assert!(status.success(), "lit suite failed (see the output above)");
}
