//! int8 quantization over a graph with a depthwise convolution and padded
//! convolutions (`scripts/onnx/gen-quant-models.py`'s `dwnet`): the depthwise
//! convolution becomes int8 with per-channel weights like the others, the
//! zero pads in front of the int8 convolutions fold into their loads (no
//! fill and copy kernels: `tcc-fold-conv-inputs`' int8 case), and the
//! int8 artifact stays within the int8 error bound of compiler/tests/quantize.rs
//! (relative Frobenius error at most 1/16) with the same top-1 classes on
//! the 16 seeded samples, on the test's OpenCL device.

use crate::support;

use std::path::Path;
use std::process::Command;

use tcc_runtime::Model;

/// Runs tcc in `dir` and returns its standard error, failing the test
/// when tcc fails.
fn tcc_in(dir: &Path, args: &[String]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .env("TCC_CACHE_DIR", dir.join("cache"))
        .env("POCL_CACHE_DIR", dir.join("pocl"))
        .output()
        .expect("run tcc");
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "tcc {}: {text}", args.join(" "));
    text
}

/// The outputs of `artifact` on every sample of `dir/dwnet-samples`.
fn outputs(runtime: &tcc_runtime::Runtime, artifact: &Path, samples: &Path) -> Vec<Vec<f32>> {
    let model = Model::load(artifact).expect("load the artifact");
    let function = model.functions()[0].name.clone();
    let mut session = runtime.session(&model).expect("a session");
    let mut files: Vec<_> = std::fs::read_dir(samples)
        .expect("the samples")
        .map(|e| e.expect("a sample").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|file| {
            let input = tcc_runtime::npy::read_npy(file).expect("an npy sample");
            session.run(&function, &[input]).expect("a run")[0]
                .to_f32()
                .expect("f32 outputs")
        })
        .collect()
}

fn top1(values: &[f32]) -> usize {
    (0..values.len())
        .max_by(|&a, &b| values[a].total_cmp(&values[b]))
        .unwrap_or(0)
}

#[test]
fn depthwise_and_padded_convolutions_run_in_int8() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let generated = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/onnx/gen-quant-models.py"))
        .arg(dir)
        .arg("--samples=16")
        .status()
        .expect("python3 (with numpy and onnx: make deps)");
    assert!(generated.success());
    let at = |name: &str| dir.join(name).display().to_string();
    tcc_in(
        dir,
        &[
            "profile".into(),
            at("dwnet.onnx"),
            format!("--inputs={}", at("dwnet-samples")),
            format!("-o={}", at("dwnet.profile.json")),
        ],
    );
    tcc_in(
        dir,
        &[
            "compile".into(),
            at("dwnet.onnx"),
            "-o".into(),
            at("f32.so"),
        ],
    );
    let text = tcc_in(
        dir,
        &[
            "compile".into(),
            at("dwnet.onnx"),
            "-o".into(),
            at("int8.so"),
            "--stats".into(),
            "--quantize=int8".into(),
            format!("--profile={}", at("dwnet.profile.json")),
        ],
    );
    // Three convolutions (one depthwise) and the classifier's matmul.
    assert!(
        text.contains("int8: 4 convolution(s) and matmul(s) quantized, 0 left f32"),
        "{text}"
    );
    assert!(text.contains("top-1 agreement 16/16"), "{text}");
    // A pad that stayed would be a fill (map_N) and a copy kernel.
    let kernels: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" kind="))
        .map(str::trim)
        .collect();
    assert!(
        kernels.iter().any(|k| k.starts_with("depthwise_conv_cast")),
        "the depthwise convolution is int8: {kernels:?}"
    );
    assert!(
        !kernels
            .iter()
            .any(|k| k.starts_with("copy_") || k.starts_with("map_")),
        "a pad was not folded: {kernels:?}"
    );

    let runtime = support::uncached_runtime();
    let samples = dir.join("dwnet-samples");
    let want = outputs(&runtime, &dir.join("f32.so"), &samples);
    let got = outputs(&runtime, &dir.join("int8.so"), &samples);
    let (mut error, mut norm) = (0f64, 0f64);
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(top1(w), top1(g), "top-1 differs: f32 {w:?}, int8 {g:?}");
        for (a, b) in w.iter().zip(g) {
            assert!(b.is_finite(), "non-finite int8 output {g:?}");
            error += (f64::from(*a) - f64::from(*b)).powi(2);
            norm += f64::from(*a).powi(2);
        }
    }
    let relative = (error / norm).sqrt();
    println!(
        "dwnet: relative error {relative:.3e} over {} samples",
        want.len()
    );
    assert!(relative > 0.0, "int8 outputs equal f32's");
    assert!(relative <= 1.0 / 16.0, "relative error {relative}");
}
