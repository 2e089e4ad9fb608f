//! `tcc compile --emit=spirv` on every end-to-end model: each kernel's
//! SPIR-V passes `spirv-val --target-env opencl1.2`, and with
//! `--target=vulkan` (Shader capability) `spirv-val --target-env vulkan1.1`
//! (boolean buffers included: stored as bytes, as the ABI's booleans are).
//! The documented gaps (float64 buffers, [`FLOAT64_MODELS`]; Vulkan's
//! [`VULKAN_GAPS`]) must fail with their own message: a listed model that
//! compiles, or any other failure, fails the test. Each model is reported to the summary line
//! (a listed gap as a skip, with its reason). Fails, never skips, when
//! spirv-val is missing.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::{CaseResult, Tally};

/// The models with float64 buffers, which the SPIR-V back end refuses (its
/// kernels target the OpenCL profile without the Float64 capability, and
/// Vulkan's GLSL.std.450 has no float64 transcendentals).
const FLOAT64_MODELS: &[&str] = &["float64"];

/// The SPIR-V environments: `tcc compile` flags and spirv-val's name.
#[derive(Clone, Copy)]
enum Env {
    OpenCl,
    Vulkan,
}

impl Env {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Env::OpenCl => &["compile", "--emit=spirv", "-o"],
            Env::Vulkan => &["compile", "--target=vulkan", "--emit=spirv", "-o"],
        }
    }

    fn validator_env(self) -> &'static str {
        match self {
            Env::OpenCl => "opencl1.2",
            Env::Vulkan => "vulkan1.1",
        }
    }
}

/// The Vulkan form's own gaps: (model, the message its refusal carries,
/// the reason). 16-bit float buffers need Float16 and 16-bit storage, which
/// the Vulkan environment does not declare.
const VULKAN_GAPS: &[(&str, &str, &str)] = &[
    (
        "half_types",
        "16-bit float buffers",
        "16-bit float buffers are not supported by the Vulkan SPIR-V back end",
    ),
    (
        "attention_half_cache",
        "16-bit float buffers",
        "16-bit float buffers are not supported by the Vulkan SPIR-V back end",
    ),
];

fn check_model(path: &Path, env: Env) -> CaseResult {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    if let (Env::Vulkan, Some((_, message, reason))) =
        (env, VULKAN_GAPS.iter().find(|(model, ..)| *model == name))
    {
        let out = tempfile::tempdir().expect("temp dir");
        let result = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(env.flags())
            .arg(out.path())
            .arg(path)
            .output()
            .expect("run tcc");
        let stderr = String::from_utf8_lossy(&result.stderr);
        return if !result.status.success() && stderr.contains(message) {
            CaseResult::Skipped((*reason).into())
        } else {
            CaseResult::Failed(format!(
                "listed in VULKAN_GAPS ({reason}) but got status {:?}: {stderr}",
                result.status.code()
            ))
        };
    }
    if FLOAT64_MODELS.contains(&name.as_str()) {
        let out = tempfile::tempdir().expect("temp dir");
        let result = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(env.flags())
            .arg(out.path())
            .arg(path)
            .output()
            .expect("run tcc");
        let stderr = String::from_utf8_lossy(&result.stderr);
        return if !result.status.success()
            && stderr.contains("float64 buffers")
            && stderr.contains("not supported by the SPIR-V back end")
        {
            CaseResult::Skipped("float64 is not supported by the SPIR-V back end".into())
        } else {
            CaseResult::Failed(format!(
                "expected the float64 refusal, got status {:?}: {stderr}",
                result.status.code()
            ))
        };
    }
    let out = tempfile::tempdir().expect("temp dir");
    let result = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(env.flags())
        .arg(out.path())
        .arg(path)
        .output()
        .expect("run tcc");
    let stderr = String::from_utf8_lossy(&result.stderr);
    if !result.status.success() {
        return CaseResult::Failed(format!("--emit=spirv failed: {stderr}"));
    }
    let mut kernels = 0;
    for spv in std::fs::read_dir(out.path()).expect("output dir") {
        let spv = spv.expect("entry").path();
        let check = Command::new("spirv-val")
            .args(["--target-env", env.validator_env()])
            .arg(&spv)
            .output()
            .expect("run spirv-val");
        if !check.status.success() {
            return CaseResult::Failed(format!(
                "{}: {}",
                spv.display(),
                String::from_utf8_lossy(&check.stderr)
            ));
        }
        kernels += 1;
    }
    if kernels == 0 {
        return CaseResult::Failed("no .spv file written".into());
    }
    CaseResult::Passed
}

#[test]
fn every_model_gives_valid_opencl_spirv() {
    every_model_gives_valid_spirv("every_model_gives_valid_opencl_spirv", "spirv", Env::OpenCl);
}

#[test]
fn every_model_gives_valid_vulkan_spirv() {
    every_model_gives_valid_spirv(
        "every_model_gives_valid_vulkan_spirv",
        "spirv-vulkan",
        Env::Vulkan,
    );
}

fn every_model_gives_valid_spirv(test: &str, prefix: &str, env: Env) {
    let validator = Command::new("spirv-val").arg("--version").output();
    assert!(
        validator.is_ok_and(|o| o.status.success()),
        "spirv-val not found: run `make deps` (spirv-tools)"
    );
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test/models");
    let mut paths: Vec<_> = std::fs::read_dir(&models)
        .expect("test/models")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("mlir"))
        .collect();
    paths.sort();
    let listed = FLOAT64_MODELS
        .iter()
        .chain(VULKAN_GAPS.iter().map(|(model, ..)| model));
    for listed in listed {
        assert!(
            paths.iter().any(|p| p.file_stem().unwrap() == *listed),
            "{listed} is listed as a gap but is not in test/models"
        );
    }
    let mut tally = Tally::new(test);
    let mut failures = Vec::new();
    for path in &paths {
        let result = check_model(path, env);
        if let CaseResult::Failed(why) = &result {
            failures.push(format!("{}: {why}", path.display()));
        }
        tally.add(
            &format!("{prefix}/{}", path.file_stem().unwrap().to_string_lossy()),
            result,
        );
    }
    tally.report();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
