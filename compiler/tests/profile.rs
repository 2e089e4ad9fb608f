//! `tcc profile`: runs test/onnx/models/quant_qdq's float path (a
//! convolution and a ReLU between quantize/dequantize pairs) on two
//! samples on the CI's OpenCL CPU device and checks the profile it
//! writes against values computed here; and its errors for an empty
//! sample directory, a sample missing an input and an MLIR model.

#[path = "../../test/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tcc_compiler::driver::profile::Profile;
use tcc_runtime::HostTensor;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn profile(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("profile")
        .args(args)
        .env("TCC_CACHE_DIR", dir.join("cache"))
        .env("POCL_CACHE_DIR", dir.join("pocl"))
        .output()
        .expect("run tcc profile")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A 1x4x6x6 sample whose values run from `low` in steps of `step`.
fn sample(path: &Path, low: f32, step: f32) {
    let values: Vec<f32> = (0..144).map(|i| low + step * i as f32).collect();
    let tensor = HostTensor::from_f32(vec![1, 4, 6, 6], &values).unwrap();
    tcc_runtime::npy::write_npy(path, &tensor).unwrap();
}

#[test]
fn records_every_float_tensor_with_its_range_and_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("samples");
    std::fs::create_dir(&samples).unwrap();
    sample(&samples.join("a.npy"), -2.0, 0.02);
    sample(&samples.join("b.npy"), -1.0, 0.01);
    let out = dir.path().join("profile.json");
    let model = repo("test/onnx/models/quant_qdq/model.onnx");
    let o = profile(
        dir.path(),
        &[
            model.to_str().unwrap(),
            &format!("--inputs={}", samples.display()),
            &format!("-o={}", out.display()),
            "--bins=8",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("over 2 samples"), "{}", stderr(&o));
    let profile: Profile = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        (profile.format.as_str(), profile.version),
        ("tcc-profile", 1)
    );
    assert_eq!(profile.samples, 2);
    let names: Vec<&str> = profile.tensors.iter().map(|t| t.name.as_str()).collect();
    // The graph output first, then the float tensors the nodes compute
    // (not the integer ones, not the folded weights), then the graph's
    // float input.
    assert_eq!(names, ["y", "xd", "c", "r", "x"], "{names:?}");
    let get = |name: &str| profile.tensors.iter().find(|t| t.name == name).unwrap();
    // xd is x quantized to uint8 steps of 0.02 around 128 and back: the
    // samples' extremes -2.0 and 0.86 on the grid, clamped to [-2.56, 2.54].
    let xd = get("xd");
    assert_eq!(xd.shape, [1, 4, 6, 6]);
    assert!(
        (xd.min + 2.0).abs() < 1e-5 && (xd.max - 0.86).abs() < 1e-5,
        "{xd:?}"
    );
    let r = get("r");
    assert_eq!(r.shape, [1, 8, 6, 6]);
    assert!(r.min == 0.0 && r.max > 0.0 && get("c").min < 0.0, "{r:?}");
    for t in &profile.tensors {
        assert_eq!(t.histogram.len(), 8, "{}", t.name);
        let count: i64 = t.shape.iter().product::<i64>() * 2;
        assert_eq!(t.histogram.iter().sum::<u64>() as i64, count, "{}", t.name);
        assert_eq!(t.nonfinite, 0);
    }
}

#[test]
fn bad_samples_and_models_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = repo("test/onnx/models/quant_qdq/model.onnx");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("p.json");
    let run = |inputs: &Path, model: &Path| {
        profile(
            dir.path(),
            &[
                model.to_str().unwrap(),
                &format!("--inputs={}", inputs.display()),
                &format!("-o={}", out.display()),
            ],
        )
    };
    let o = run(&empty, &model);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("holds no samples"), "{}", stderr(&o));
    let partial = dir.path().join("partial");
    std::fs::create_dir_all(partial.join("s0")).unwrap();
    let o = run(&partial, &model);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("x.npy"), "{}", stderr(&o));
    let mlir = repo("lit/phases/Inputs/mlp.mlir");
    let o = run(&empty, &mlir);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("takes an ONNX model"), "{}", stderr(&o));
    assert!(!out.exists(), "a failed profile wrote {}", out.display());
}
