//! `tcc compile --emit=spirv` on every end-to-end model: each kernel's
//! SPIR-V passes `spirv-val --target-env opencl1.2`. The one documented gap
//! (boolean buffers) must fail with its own message, nothing else may fail.
//! Fails, never skips, when spirv-val is missing.

#[path = "../../test/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Command;

#[test]
fn every_model_gives_valid_opencl_spirv() {
    let validator = Command::new("spirv-val").arg("--version").output();
    assert!(
        validator.is_ok_and(|o| o.status.success()),
        "spirv-val not found: run `make deps` (spirv-tools)"
    );
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test/models");
    let mut kernels = 0;
    let mut models_checked = 0;
    for entry in std::fs::read_dir(&models).expect("test/models") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("mlir") {
            continue;
        }
        let out = tempfile::tempdir().expect("temp dir");
        let result = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(["compile", "--emit=spirv", "-o"])
            .arg(out.path())
            .arg(&path)
            .output()
            .expect("run tcc");
        let stderr = String::from_utf8_lossy(&result.stderr);
        if !result.status.success() {
            assert!(
                stderr.contains("boolean buffers")
                    && stderr.contains("not supported by the SPIR-V back end"),
                "{}: --emit=spirv failed:\n{stderr}",
                path.display()
            );
            continue;
        }
        models_checked += 1;
        for spv in std::fs::read_dir(out.path()).expect("output dir") {
            let spv = spv.expect("entry").path();
            let check = Command::new("spirv-val")
                .args(["--target-env", "opencl1.2"])
                .arg(&spv)
                .output()
                .expect("run spirv-val");
            assert!(
                check.status.success(),
                "{} ({}): {}",
                spv.display(),
                path.display(),
                String::from_utf8_lossy(&check.stderr)
            );
            kernels += 1;
        }
    }
    assert!(
        models_checked >= 10 && kernels >= 20,
        "checked {models_checked} models, {kernels} kernels"
    );
}
