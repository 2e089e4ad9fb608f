//! `tcc compile --storage=fp16` and `--precision=fp16|bf16` (16-bit
//! storage on a non-NVIDIA target: fp32 arithmetic): compiles test models
//! in fp32 and each 16-bit way and runs the artifacts on the test's OpenCL
//! device with the same deterministic inputs. Checks that the 16-bit
//! artifact holds at most half the constant bytes (f32 weights become 16
//! bits; integer constants keep their size), that its outputs differ from
//! the f32 ones (the storage really is narrower) but by no more than the
//! type's precision allows, that `tcc inspect` says so, and that the
//! SPIR-V form refuses the option.

#[path = "../../test/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use tcc_runtime::{HostTensor, Model};

/// The bound on the outputs' relative Frobenius error. Each stored value is
/// rounded to half, a relative error of at most 2^-11 (4.9e-4); errors
/// from a chain of stores add up, partly cancelling, and the kernels
/// compute in f32, so four units of 2^-11 bound the test models (the
/// largest measured is conv_gemm's 6.3e-4, docs/benchmarks.md) while a
/// wrong kernel errs by order 1.
const RELATIVE_ERROR_BOUND: f64 = 4.0 / 2048.0;

/// The same bound for bfloat16, whose rounding errs by at most 2^-8
/// (8 significant bits): four units of 2^-8.
const BF16_RELATIVE_ERROR_BOUND: f64 = 4.0 / 256.0;

/// The 16-bit ways of compiling, with their bounds.
const HALF_FLAGS: &[(&str, f64)] = &[
    ("--storage=fp16", RELATIVE_ERROR_BOUND),
    ("--precision=fp16", RELATIVE_ERROR_BOUND),
    ("--precision=bf16", BF16_RELATIVE_ERROR_BOUND),
];

/// Models with f32 inputs covering every kernel form: loop kernels (with
/// and without accumulation through memory), the GEMM and convolution
/// templates (split-K too), the row reduction, softmax and layer norm
/// templates.
const MODELS: &[&str] = &[
    "mlp",
    "attention",
    "transformer_block",
    "conv_gemm",
    "split_k_matmul",
    "split_k_conv",
    "gemm_tiled",
    "cnn",
    "residual_mlp",
    "layernorm_gelu",
    "softmax_axes",
    "reductions",
    "pooling",
    "depthwise",
];

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn compile(model: &str, flag: &str, output: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(repo(&format!("test/models/{model}.mlir")))
        .arg(flag)
        .arg("-o")
        .arg(output)
        .output()
        .expect("run tcc compile");
    assert!(
        o.status.success(),
        "tcc compile {model} {flag}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Deterministic inputs in [-1, 1).
fn inputs(model: &Model, function: &str) -> Vec<HostTensor> {
    let mut state = 0x2545_f491_u32;
    support::f32_inputs(model, function, |_, _| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    })
}

fn relative_error(got: &[f32], want: &[f32]) -> f64 {
    let (mut diff, mut norm) = (0f64, 0f64);
    for (g, w) in got.iter().zip(want) {
        diff += (f64::from(*g) - f64::from(*w)).powi(2);
        norm += f64::from(*w).powi(2);
    }
    if norm == 0.0 {
        diff.sqrt()
    } else {
        (diff / norm).sqrt()
    }
}

#[test]
fn half_storage_halves_the_weights_and_stays_within_half_precision() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let runtime = support::uncached_runtime();
    let mut report = Vec::new();
    let mut differing = 0;
    for name in MODELS {
        let full = dir.path().join(format!("{name}-fp32.so"));
        compile(name, "--storage=fp32", &full);
        let full = Model::load(&full).unwrap();
        for (index, &(flag, bound)) in HALF_FLAGS.iter().enumerate() {
            let half = dir.path().join(format!("{name}-half{index}.so"));
            compile(name, flag, &half);
            let half = Model::load(&half).unwrap();
            compare(
                (name, flag, bound),
                &runtime,
                (&full, &half),
                (&mut report, &mut differing),
            );
        }
    }
    println!("{}", report.join("\n"));
    assert!(
        differing * 2 >= report.len(),
        "half storage left most outputs bit-identical to f32 ({differing} of {} differ): was anything narrowed?\n{}",
        report.len(),
        report.join("\n")
    );
}

/// Runs every function of the f32 and the 16-bit artifact of `name`
/// (compiled with `flag`) on the same inputs and checks the relative
/// error against `bound`, adding a line per output to `report` and
/// counting the outputs that differ at all.
fn compare(
    (name, flag, bound): (&str, &str, f64),
    runtime: &tcc_runtime::Runtime,
    (full, half): (&Model, &Model),
    (report, differing): (&mut Vec<String>, &mut usize),
) {
    let (full_bytes, half_bytes): (u64, u64) = (
        full.constant_bytes().iter().sum(),
        half.constant_bytes().iter().sum(),
    );
    assert!(
        half_bytes * 2 <= full_bytes + 64 && (full_bytes == 0 || half_bytes < full_bytes),
        "{name} {flag}: constants take {half_bytes} bytes with half storage, {full_bytes} in f32"
    );
    let mut full_session = runtime.session(full).unwrap();
    let mut half_session = runtime.session(half).unwrap();
    for function in full.functions().to_vec() {
        let inputs = inputs(full, &function.name);
        let want = full_session.run(&function.name, &inputs).unwrap();
        let got = half_session.run(&function.name, &inputs).unwrap();
        assert_eq!(want.len(), got.len());
        for (index, (g, w)) in got.iter().zip(&want).enumerate() {
            let (Ok(g), Ok(w)) = (g.to_f32(), w.to_f32()) else {
                assert_eq!(g, w, "{name} {flag} @{} output {index}", function.name);
                continue;
            };
            assert!(
                g.iter().all(|v| v.is_finite()) == w.iter().all(|v| v.is_finite()),
                "{name} {flag} @{} output {index}: non-finite values with half storage",
                function.name
            );
            let error = relative_error(&g, &w);
            if g != w {
                *differing += 1;
            }
            report.push(format!(
                "{name} {flag} @{} output {index}: {error:.2e}",
                function.name
            ));
            assert!(
                error <= bound,
                "{name} {flag} @{} output {index}: relative error {error:.3e} with half storage\n{}",
                function.name,
                report.join("\n")
            );
        }
    }
}

#[test]
fn inspect_names_the_storage_and_spirv_refuses_it() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let half = dir.path().join("mlp.so");
    compile("mlp", "--storage=fp16", &half);
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("inspect")
        .arg(&half)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("storage: fp16 (weights and intermediates; inputs and outputs as the model declares them)"),
        "{text}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(["compile", "--storage=fp16", "--emit=spirv", "-o"])
        .arg(dir.path().join("spv"))
        .arg(repo("test/models/mlp.mlir"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--storage=fp16 needs the OpenCL C or PTX kernels"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn bf16_is_named_and_precisions_the_device_cannot_do_are_refused() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let half = dir.path().join("mlp-bf16.so");
    compile("mlp", "--precision=bf16", &half);
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("inspect")
        .arg(&half)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "storage: bf16 (weights and intermediates; inputs and outputs as the model declares them)"
        ),
        "{text}"
    );
    let refused = |args: &[&str], message: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .arg("compile")
            .arg(repo("test/models/mlp.mlir"))
            .args(args)
            .arg("-o")
            .arg(dir.path().join("refused.so"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    };
    // BF16 (and FP16) tensor cores with cp.async are sm_80's.
    refused(
        &["--target=nvidia", "--precision=bf16", "--gpu-arch=sm_75"],
        "--precision=bf16 needs BF16 tensor cores with cp.async (sm_80 or newer), not --gpu-arch=sm_75",
    );
    refused(
        &["--precision=bf16", "--storage=fp16"],
        "--storage=fp16 contradicts --precision=bf16, which stores bf16",
    );
    refused(
        &["--precision=fp16", "--emit=spirv"],
        "--precision=fp16 needs the OpenCL C or PTX kernels",
    );
}
