//! examples/rust (issue 11): a crate whose build.rs compiles two models with
//! tcc-build (one embedded as bytes, one linked as a static library) and
//! whose main calls them through the generated typed bindings. Built with
//! the tcc under test (`TCC`) in target/nested (a nested cargo cannot
//! share the outer one's lock; the Python module's build shares this one,
//! so the runtime and its dependencies compile once for both) and run.

use crate::support;

use std::path::Path;
use std::process::Command;

#[test]
fn rust_example_builds_with_tcc_build_and_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let manifest = repo.join("examples/rust/Cargo.toml");
    let target = repo.join("target/nested");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let scratch = tempfile::tempdir().unwrap();
    let mut command = Command::new(&cargo);
    command
        .args(["run", "--quiet", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .env("TCC", env!("CARGO_BIN_EXE_tcc"))
        .env_remove("TCC_DEVICE")
        // The outer cargo's settings are not the example's.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS");
    support::isolate_command(&mut command, scratch.path());
    let out = command.output().expect("run cargo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("mlp [1, 4, 16] -> [1, 4, 10]: "),
        "{stdout}"
    );
    assert!(stdout.contains("cnn [1, 8, 8, 3] -> [1, 10]: "), "{stdout}");
    assert!(stdout.ends_with("ok\n"), "{stdout}");
}
