//! The window template (depthwise convolution and pooling, `#tcc.window`)
//! against the upstream-MLIR reference on the test's OpenCL device, in
//! the configurations the targets' tables do not reach on small test
//! models: blocks of 2, 3 and 4 output columns (forced with
//! `TCC_WINDOWS=N`), float4 and scalar channels, in the generic GPU
//! target's work-groups and in pocl-cpu's. The e2e suite runs the same
//! models with each target's own choice.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use tcc_runtime::{HostTensor, Model};

/// Models with depthwise convolutions and poolings: strides 1 and 2,
/// padding, dilation, channel multipliers, channels not a multiple of 4,
/// max, average and global average pools, fused epilogues.
const MODELS: &[&str] = &[
    "window_kernels",
    "depthwise",
    "pooling",
    "window_prologue",
    "cnn",
];

/// Every model above declares `// TOLERANCE: 1e-5 1e-5` or looser ones
/// for what is not a window; the windows sum at most 143 values near 1.
const ABSOLUTE: f64 = 1e-5;
const RELATIVE: f64 = 1e-5;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn compile(model: &Path, target: &str, columns: &str, output: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(model)
        .arg(format!("--target={target}"))
        .arg("--ptx=off")
        .arg("-o")
        .arg(output)
        .env("TCC_WINDOWS", columns)
        .output()
        .expect("run tcc compile");
    assert!(
        o.status.success(),
        "tcc compile {} --target={target} (TCC_WINDOWS={columns}): {}",
        model.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Deterministic inputs in [-1, 1): element `i` of input `k` is a fixed
/// scramble of `i` and `k` (no two neighbours alike, so a window read at
/// the wrong column or channel shows).
fn inputs(model: &Model, function: &str) -> Vec<HostTensor> {
    support::f32_inputs(model, function, |k, i| {
        ((i * 7919 + k * 104_729) % 2003) as f32 / 1001.5 - 1.0
    })
}

/// The first element outside the tolerance, described.
fn mismatch(got: &[f32], want: &[f32]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, want {}", got.len(), want.len()));
    }
    got.iter()
        .zip(want)
        .enumerate()
        .find_map(|(index, (g, w))| {
            let (g, w) = (f64::from(*g), f64::from(*w));
            let close = (g - w).abs() <= ABSOLUTE + RELATIVE * w.abs();
            (!close && !(g.is_nan() && w.is_nan())).then(|| format!("[{index}] = {g}, want {w}"))
        })
}

#[test]
fn window_kernels_match_the_reference_in_every_block_shape() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let runtime = support::uncached_runtime();
    let mut failures = Vec::new();
    let mut runs = 0;
    for name in MODELS {
        let path = repo(&format!("test/models/{name}.mlir"));
        let mut references: Vec<(String, Vec<HostTensor>, Vec<HostTensor>)> = Vec::new();
        for target in ["generic", "pocl-cpu"] {
            for columns in ["2", "3", "4"] {
                let library = dir.path().join(format!("{name}-{target}-{columns}.so"));
                compile(&path, target, columns, &library);
                let model = Model::load(&library).unwrap();
                let mut session = runtime.session(&model).unwrap();
                for function in model.functions().to_vec() {
                    let fname = function.name.clone();
                    if !references.iter().any(|(f, _, _)| *f == fname) {
                        let inputs = inputs(&model, &fname);
                        let want = tcc_compiler::reference::run(&path, &fname, &inputs)
                            .expect("the reference run");
                        references.push((fname.clone(), inputs, want));
                    }
                    let (_, inputs, want) =
                        references.iter().find(|(f, _, _)| *f == fname).unwrap();
                    let got = session.run(&fname, inputs).unwrap();
                    runs += 1;
                    for (index, (g, w)) in got.iter().zip(want).enumerate() {
                        let (g, w) = (g.to_f32().unwrap(), w.to_f32().unwrap());
                        if let Some(message) = mismatch(&g, &w) {
                            failures.push(format!(
                                "{name} @{fname} output {index}, --target={target} TCC_WINDOWS={columns}: {message}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert_eq!(runs, MODELS.len() * 6);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_blocks_take_the_forced_shape_and_off_keeps_loop_nests() {
    let _serial = support::device_and_spawn_lock();
    let path = repo("test/models/window_kernels.mlir");
    let text = |columns: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(["compile", "--target=generic", "--emit=opencl-c"])
            .arg(&path)
            .env("TCC_WINDOWS", columns)
            .output()
            .expect("run tcc compile");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let three = text("3");
    assert_eq!(
        three
            .matches("3 columns x 4 channels per work-item")
            .count(),
        8,
        "{three}"
    );
    assert!(
        three.contains("3 columns x 1 channels per work-item"),
        "{three}"
    );
    let off = text("off");
    assert!(!off.contains("window kernel"), "{off}");
    let bad = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(["compile", "--target=generic", "--emit=opencl-c"])
        .arg(&path)
        .env("TCC_WINDOWS", "sideways")
        .output()
        .expect("run tcc compile");
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("TCC_WINDOWS"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
