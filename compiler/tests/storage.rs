//! `tcc compile --storage=fp16` and `--precision=fp16|bf16` (16-bit
//! storage on a non-NVIDIA target: fp32 arithmetic): compiles test models
//! in fp32 and each 16-bit way and runs the artifacts on the test's OpenCL
//! device with the same deterministic inputs. Checks that the 16-bit
//! artifact holds at most half the constant bytes (f32 weights become 16
//! bits; integer constants keep their size), that its outputs differ from
//! the f32 ones (the storage really is narrower) but by no more than the
//! type's precision allows, that `tcc inspect` says so, and that the
//! SPIR-V form refuses the option.

use crate::support;

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
    compile_with(model, &[flag], output)
}

fn compile_with(model: &str, flags: &[&str], output: &Path) {
    let flag = flags.join(" ");
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(repo(&format!("test/models/{model}.mlir")))
        .args(flags)
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

/// The nvidia target's few-row GEMM form (a decode step's projections)
/// reads half and bf16 weights 16 bytes a load and widens them in
/// registers: its products in every 16-bit way of compiling, run here on
/// the test device, within the same bounds of the f32 artifact.
#[test]
fn few_row_products_on_the_nvidia_target_read_16_bit_weights() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let runtime = support::uncached_runtime();
    let name = "few_row_products";
    let full = dir.path().join("fp32.so");
    compile_with(name, &["--target=nvidia", "--storage=fp32"], &full);
    let full = Model::load(&full).unwrap();
    let (mut report, mut differing) = (Vec::new(), 0);
    for (index, &(flag, bound)) in HALF_FLAGS.iter().enumerate() {
        let half = dir.path().join(format!("half{index}.so"));
        compile_with(name, &["--target=nvidia", flag], &half);
        let kernels = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(["compile", "--target=nvidia", flag, "--emit=opencl-c", "-o"])
            .arg(dir.path().join(format!("half{index}-cl")))
            .arg(repo(&format!("test/models/{name}.mlir")))
            .output()
            .unwrap();
        assert!(
            kernels.status.success(),
            "{}",
            String::from_utf8_lossy(&kernels.stderr)
        );
        let text: String = std::fs::read_dir(dir.path().join(format!("half{index}-cl")))
            .unwrap()
            .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
            .collect();
        assert!(
            text.contains("(aligned loads); M=1 N=2304 K=768")
                && text.contains("__global const uint4*"),
            "{flag}: the one-row product should read its 16-bit weights as aligned 16-byte loads"
        );
        let half = Model::load(&half).unwrap();
        compare(
            (name, flag, bound),
            &runtime,
            (&full, &half),
            (&mut report, &mut differing),
        );
    }
    println!("{}", report.join("\n"));
    assert!(
        differing > 0,
        "no output changed in 16 bits:\n{}",
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

/// Two products whose intermediate (4 x 30000 = 120000) overflows half but
/// not fp32; the second scales it back to 480.
const OVERFLOWING: &str = r#"
func.func @overflow(%x: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %w1 = "tosa.const"() <{values = dense<30000.0> : tensor<1x4x4xf32>}> : () -> tensor<1x4x4xf32>
  %w2 = "tosa.const"() <{values = dense<0.001> : tensor<1x4x4xf32>}> : () -> tensor<1x4x4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w1, %zp, %zp : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4xf32>
  %o = tosa.matmul %h, %w2, %zp, %zp : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4xf32>
  return %o : tensor<1x4x4xf32>
}
"#;

#[test]
fn check_numerics_names_the_kernel_whose_half_output_overflowed() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("overflow.mlir");
    std::fs::write(&source, OVERFLOWING).unwrap();
    let runtime = support::uncached_runtime();
    let ones = |model: &Model| support::f32_inputs(model, "overflow", |_, _| 1.0);
    let mut artifacts = Vec::new();
    for flag in ["--precision=fp32", "--precision=fp16", "--precision=bf16"] {
        let path = dir.path().join(format!("overflow{}.so", artifacts.len()));
        // pocl-cpu: the products are GEMM templates, whose outputs are
        // stored in 16 bits (generic's loop kernels accumulate through
        // their output, which therefore stays f32).
        let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .arg("compile")
            .arg(&source)
            .arg("--target=pocl-cpu")
            .arg(flag)
            .arg("-o")
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        artifacts.push((flag, Model::load(&path).unwrap()));
    }
    for (flag, model) in &artifacts {
        let mut session = runtime.session(model).unwrap();
        session.check_numerics().unwrap();
        let result = session.run("overflow", &ones(model));
        if *flag == "--precision=fp16" {
            // The first product's half output is infinite: the check stops
            // there, naming that kernel.
            let message = result.unwrap_err().to_string();
            let first = &model.kernel_names()[0];
            assert!(
                message.contains(&format!(
                    "check-numerics: kernel `{first}` (launch 1 of the call) produced inf at element 0"
                )) && message.contains("(f16 storage)"),
                "{message}"
            );
            // tcc-run --check-numerics says the same and exits 1.
            let exe = std::env::current_exe().unwrap();
            let tcc_run = exe.parent().unwrap().parent().unwrap().join("tcc-run");
            let o = Command::new(tcc_run)
                .arg(model.path())
                .args(["--input=1x4x4xf32=1", "--check-numerics"])
                .output()
                .expect("tcc-run (cargo build -p tcc-runtime --bins)");
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{stderr}");
            assert!(
                stderr.contains(&format!("check-numerics: kernel `{first}`")),
                "{stderr}"
            );
            // Without the check the overflow reaches the output.
            let mut plain = runtime.session(model).unwrap();
            let out = plain.run("overflow", &ones(model)).unwrap();
            assert!(out[0].to_f32().unwrap().iter().all(|v| v.is_infinite()));
        } else {
            // fp32 and bf16 (fp32's range) stay finite: 4 x 30000 x 4 x
            // 0.001 = 480.
            let out = result.unwrap_or_else(|e| panic!("{flag}: {e}"));
            let values = out[0].to_f32().unwrap();
            assert!(
                values.iter().all(|v| (v - 480.0).abs() <= 480.0 * 0.02),
                "{flag}: {values:?}"
            );
        }
    }
}

/// A half ONNX graph compiles natively: its inputs and outputs stay f16 or
/// bf16. With `--precision=fp32` its weights are widened to f32 and each
/// op's result rounded to the half type (as onnxruntime does); with the
/// matching `--precision` the weights are stored in 16 bits again
/// (exactly: half the constant bytes) and the ops keep f32 results that
/// the kernels round when they store them, so the outputs stay within
/// half precision of the per-op rounding. Without `--precision` the
/// graph's own type is the default (a note says so): the same artifact as
/// with the flag, bit for bit.
#[test]
fn half_onnx_graphs_keep_their_types_and_store_their_weights_exactly() {
    use tcc_runtime::{DType, HostTensor};
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let runtime = support::uncached_runtime();
    for (graph, flag, dtype, bound) in [
        (
            "float16_net",
            "--precision=fp16",
            DType::F16,
            RELATIVE_ERROR_BOUND,
        ),
        (
            "float16_cache_step",
            "--precision=fp16",
            DType::F16,
            RELATIVE_ERROR_BOUND,
        ),
        (
            "float16_upcast_softmax",
            "--precision=fp16",
            DType::F16,
            RELATIVE_ERROR_BOUND,
        ),
        (
            "bfloat16_net",
            "--precision=bf16",
            DType::BF16,
            BF16_RELATIVE_ERROR_BOUND,
        ),
    ] {
        let model = repo(&format!("test/onnx/models/{graph}/model.onnx"));
        let mut loaded = Vec::new();
        for flags in [&["--precision=fp32"][..], &[flag], &[]] {
            let path = dir.path().join(format!("{graph}{}.so", loaded.len()));
            let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
                .arg("compile")
                .arg(&model)
                .args(flags)
                .arg("-o")
                .arg(&path)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{stderr}");
            assert_eq!(
                stderr.contains("graph: its weights and intermediates are stored in"),
                flags.is_empty(),
                "{graph} {flags:?}: {stderr}"
            );
            loaded.push(Model::load(&path).unwrap());
        }
        let (per_op, half, default) = (&loaded[0], &loaded[1], &loaded[2]);
        let function = &half.functions()[0];
        assert!(
            function
                .inputs
                .iter()
                .chain(&function.outputs)
                .all(|t| t.dtype == dtype),
            "{graph} {flag}: {function:?}"
        );
        let (full_bytes, half_bytes): (u64, u64) = (
            per_op.constant_bytes().iter().sum(),
            half.constant_bytes().iter().sum(),
        );
        assert!(
            half_bytes * 2 <= full_bytes + 64 && half_bytes < full_bytes,
            "{graph} {flag}: {half_bytes} constant bytes, {full_bytes} without"
        );
        assert_eq!(
            default.constant_bytes(),
            half.constant_bytes(),
            "{graph}: the default stores what {flag} does"
        );
        let mut state = 0x1234_5678_u32;
        let inputs: Vec<HostTensor> = function
            .inputs
            .iter()
            .map(|t| {
                let count: usize = t.shape.iter().product();
                let bytes = (0..count)
                    .flat_map(|_| {
                        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        let v = (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
                        match dtype {
                            DType::F16 => half::f16::from_f32(v).to_le_bytes(),
                            _ => half::bf16::from_f32(v).to_le_bytes(),
                        }
                    })
                    .collect();
                // Aligned, so that a CPU device reads them in place.
                let bytes: Vec<u8> = bytes;
                HostTensor {
                    dtype,
                    shape: t.shape.clone(),
                    bytes: tcc_runtime::HostBytes::copy_aligned(&bytes),
                }
            })
            .collect();
        let before: Vec<Vec<u8>> = inputs.iter().map(|t| t.bytes.to_vec()).collect();
        let run = |model: &Model| {
            runtime
                .session(model)
                .unwrap()
                .run(&function.name, &inputs)
                .unwrap()
        };
        let (want, got) = (run(per_op), run(half));
        assert_eq!(run(default), got, "{graph} without --precision");
        // No call wrote into its inputs (float16_cache_step scatters into
        // its cache input: that must update a copy).
        assert!(
            inputs
                .iter()
                .zip(&before)
                .all(|(t, b)| t.bytes[..] == b[..]),
            "{graph}: a call changed its inputs"
        );
        for (index, (g, w)) in got.iter().zip(&want).enumerate() {
            let widened = |t: &HostTensor| -> Vec<f32> {
                t.bytes
                    .chunks_exact(2)
                    .map(|b| match dtype {
                        DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                        _ => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
                    })
                    .collect()
            };
            let (g, w) = (widened(g), widened(w));
            let error = relative_error(&g, &w);
            assert!(
                g.iter().all(|v| v.is_finite()) && error <= bound,
                "{graph} {flag} output {index}: relative error {error:.3e} to the per-op rounding"
            );
        }
    }
}

/// With half storage of its own type a half graph's ops keep f32 results:
/// the imported function converts at its edges only (its one f16 input
/// up, its two f16 outputs down), where the per-op rounding of
/// `--precision=fp32` casts around every computing op.
#[test]
fn half_graphs_at_their_own_precision_convert_at_the_edges_only() {
    let model = repo("test/onnx/models/float16_net/model.onnx");
    let casts = |flags: &[&str]| -> Vec<String> {
        input_phase(&model, flags)
            .lines()
            .filter(|line| line.contains("tosa.cast"))
            .map(str::to_string)
            .collect()
    };
    let edges = casts(&[]);
    assert_eq!(edges.len(), 3, "{edges:#?}");
    assert!(
        edges[0].contains("%arg0 : (tensor<1x3x6x6xf16>) -> tensor<1x3x6x6xf32>"),
        "{edges:#?}"
    );
    assert!(
        edges[1..]
            .iter()
            .all(|line| line.contains("xf32>) -> tensor<") && line.ends_with("xf16>")),
        "{edges:#?}"
    );
    assert_eq!(casts(&["--precision=fp16"]), edges);
    let per_op = casts(&["--precision=fp32"]);
    assert!(per_op.len() > 3 * edges.len(), "{per_op:#?}");
}

/// Data movement in a half graph at its own precision keeps half tensors
/// half: the f16 cache input that a computed row is concatenated to and
/// scattered into is never widened (the row is rounded to f16 instead),
/// where the per-op rounding widens the whole cache for the scatter.
#[test]
fn half_graphs_at_their_own_precision_move_half_tensors_as_they_are() {
    let model = repo("test/onnx/models/float16_cache_step/model.onnx");
    let native = input_phase(&model, &[]);
    assert!(
        native.contains("tosa.concat %arg1, ") && !native.contains("tosa.cast %arg1 "),
        "{native}"
    );
    let per_op = input_phase(&model, &["--precision=fp32"]);
    assert!(
        per_op.contains("tosa.cast %arg1 : (tensor<2x4x8xf16>) -> tensor<2x4x8xf32>"),
        "{per_op}"
    );
}

/// A half model's cast back to its type after a step computed in f32
/// (`softmax(x, dtype=float32).to(x.dtype)`) rounds where the tensor is
/// stored, like any op's result at the graph's own precision: the softmax
/// and the products around it stay one f32 chain, cast only at the edges.
#[test]
fn half_graphs_at_their_own_precision_round_explicit_casts_where_stored() {
    let model = repo("test/onnx/models/float16_upcast_softmax/model.onnx");
    let casts = |flags: &[&str]| {
        input_phase(&model, flags)
            .lines()
            .filter(|line| line.contains("tosa.cast"))
            .count()
    };
    assert_eq!(casts(&[]), 2);
    assert!(casts(&["--precision=fp32"]) > 2);
}

/// `tcc compile MODEL --compile-to=input FLAGS`: the imported module.
fn input_phase(model: &Path, flags: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(model)
        .args(["--compile-to=input", "-o", "-"])
        .args(flags)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A product of two 16-bit intermediates, `C = (X Y) (U V)` with M = 2048,
/// N = 1152, K = 512 (rank 64), compiled for the CUDA driver at `flag`:
/// the PTX it writes.
fn half_product_ptx(flag: &str, backend: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("product.mlir");
    let (m, n, k, r) = (2048, 1152, 512, 64);
    std::fs::write(
        &model,
        format!(
            r#"func.func @product(%x: tensor<1x{m}x{r}xf32>, %y: tensor<1x{r}x{k}xf32>, %u: tensor<1x{k}x{r}xf32>, %v: tensor<1x{r}x{n}xf32>) -> tensor<1x{m}x{n}xf32> {{
  %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
  %a = tosa.matmul %x, %y, %zp, %zp : (tensor<1x{m}x{r}xf32>, tensor<1x{r}x{k}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{m}x{k}xf32>
  %b = tosa.matmul %u, %v, %zp, %zp : (tensor<1x{k}x{r}xf32>, tensor<1x{r}x{n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{k}x{n}xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x{m}x{k}xf32>, tensor<1x{k}x{n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{m}x{n}xf32>
  return %c : tensor<1x{m}x{n}xf32>
}}
"#
        ),
    )
    .unwrap();
    let ptx = dir.path().join("product.ptx");
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(&model)
        .args(["--target=nvidia", flag, "--emit=ptx", "-o"])
        .arg(&ptx)
        .args(backend)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&ptx).unwrap()
}

/// With `--backend=cuda`, the product of two 16-bit intermediates takes
/// the Hopper `wgmma` body (sm_90a, its 128x128 tile in dynamic local
/// memory, two work-groups an SM over 2048 x 1152 x 512, both operands by
/// the TMA); clang turns its inline PTX into
/// the module (the device run is the check that ptxas and the GPU agree,
/// docs/benchmarks.md). Through OpenCL it keeps `mma.sync`.
#[test]
fn half_products_for_the_cuda_driver_take_the_wgmma_body() {
    for (flag, ty) in [("--precision=fp16", "f16"), ("--precision=bf16", "bf16")] {
        let ptx = half_product_ptx(flag, &["--backend=cuda"]);
        for needle in [
            ".target sm_90a".to_string(),
            ".extern .shared .align 16 .b8 tcc_dynamic_local[];".to_string(),
            format!("wgmma.mma_async.sync.aligned.m64n128k16.f32.{ty}.{ty}"),
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                .to_string(),
            "tensormap.replace.tile.elemtype.global.b1024.b32".to_string(),
            format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32"),
        ] {
            assert!(ptx.contains(&needle), "{flag}: {needle} not in the PTX");
        }
        if ty == "f16" {
            // A half is stored after one `cvt.rn.f16.f32` (TCC_STORE_F16),
            // not through libclc's `vstore_half_rte`, which rounds in
            // software first and tests every value for NaN on the way.
            assert!(ptx.contains("cvt.rn.f16.f32"), "{flag}");
            assert!(!ptx.contains("setp.nan.f32"), "{flag}: software rounding");
        } else {
            // A bf16 is stored after one `cvt.rn.bf16.f32`, not the
            // integer rounding whose NaN test branched around every store.
            assert!(ptx.contains("cvt.rn.bf16.f32"), "{flag}");
            assert!(
                !ptx.contains("setp.num.f32") && !ptx.contains("setp.nan.f32"),
                "{flag}: software rounding"
            );
        }
        let opencl = half_product_ptx(flag, &[]);
        assert!(
            !opencl.contains("wgmma.mma_async"),
            "{flag}: wgmma through OpenCL"
        );
        assert!(!opencl.contains("tcc_dynamic_local"), "{flag}");
    }
}

/// Attention in a half graph (`tcc.attention` on f16 or bf16 tensors, as
/// an exporter's half model gives it) is one flash-attention kernel, not
/// the decomposition's two GEMMs and softmax, at `--precision=fp32` (the
/// portable body, one work-item a row) and at the graph's own precision
/// (the launch of the tensor-core body, a warp per 16 rows, whose
/// portable fallback runs here); its output, in the graph's type, is
/// within that type's rounding of attention computed in f64 from the same
/// inputs. 37 query rows and keys leave partial tiles; causal.
#[test]
fn half_graph_attention_is_one_kernel_within_half_precision() {
    use tcc_runtime::{DType, HostTensor};
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let runtime = support::uncached_runtime();
    let (heads, seq, dim) = (4usize, 37usize, 64usize);
    let scale = 0.125f64;
    for (element, dtype, precision, bound) in [
        ("f16", DType::F16, "--precision=fp16", RELATIVE_ERROR_BOUND),
        (
            "bf16",
            DType::BF16,
            "--precision=bf16",
            BF16_RELATIVE_ERROR_BOUND,
        ),
    ] {
        let t = format!("tensor<1x{heads}x{seq}x{dim}x{element}>");
        let model = dir.path().join(format!("attention-{element}.mlir"));
        std::fs::write(
            &model,
            format!(
                "func.func @attention(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n  \
                 %o = tcc.attention %q, %k, %v scale = {scale:?} causal = true : {t}, {t}, {t} -> {t}\n  \
                 return %o : {t}\n}}\n"
            ),
        )
        .unwrap();
        // Inputs rounded to the element type; the reference reads the
        // rounded values.
        let mut state = 0x0bad_cafe_u32;
        let mut values = Vec::new();
        let inputs: Vec<HostTensor> = (0..3)
            .map(|_| {
                let (tensor, rounded) =
                    random_half_tensor(dtype, vec![1, heads, seq, dim], &mut state, (1.0, 0.0));
                values.push(rounded);
                tensor
            })
            .collect();
        let want = causal_attention(&values, None, heads, seq, dim, scale);
        for flag in ["--precision=fp32", precision] {
            let path = dir.path().join(format!("attention-{element}{flag}.so"));
            let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
                .arg("compile")
                .arg(&model)
                .args([flag, "--stats", "-o"])
                .arg(&path)
                .output()
                .unwrap();
            let stats = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{element} {flag}: {stats}");
            assert!(
                stats.contains("kernels: 1\n") && stats.contains("kind=attention"),
                "{element} {flag}: one flash-attention kernel expected:\n{stats}"
            );
            let loaded = Model::load(&path).unwrap();
            let out = runtime
                .session(&loaded)
                .unwrap()
                .run("attention", &inputs)
                .unwrap();
            assert_eq!(out[0].dtype, dtype, "{element} {flag}");
            let got: Vec<f32> = out[0]
                .bytes
                .chunks_exact(2)
                .map(|b| match dtype {
                    DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                    _ => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
                })
                .collect();
            let error = relative_error(&got, &want);
            assert!(
                error <= bound,
                "{element} {flag}: relative error {error:e} > {bound:e}"
            );
        }
    }
}

/// Causal attention in f64 over `[1, heads, seq, dim]` tensors (`qkv`:
/// Q, K and V, row-major), with an additive `mask` of one value per key
/// when given: the reference the half attention tests compare with.
fn causal_attention(
    qkv: &[Vec<f64>],
    mask: Option<&[f64]>,
    heads: usize,
    seq: usize,
    dim: usize,
    scale: f64,
) -> Vec<f32> {
    let (q, k, v) = (&qkv[0], &qkv[1], &qkv[2]);
    let mut want = vec![0f32; heads * seq * dim];
    for h in 0..heads {
        let at = |x: &Vec<f64>, row: usize, d: usize| x[(h * seq + row) * dim + d];
        for i in 0..seq {
            let scores: Vec<f64> = (0..=i)
                .map(|j| {
                    scale * (0..dim).map(|d| at(q, i, d) * at(k, j, d)).sum::<f64>()
                        + mask.map_or(0.0, |m| m[j])
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let sum: f64 = weights.iter().sum();
            for d in 0..dim {
                let o: f64 = weights
                    .iter()
                    .enumerate()
                    .map(|(j, w)| w * at(v, j, d))
                    .sum();
                want[(h * seq + i) * dim + d] = (o / sum) as f32;
            }
        }
    }
    want
}

/// The attention of GPT-2's eager implementation (`torch.where` of the
/// causal triangle filling with the type's lowest value, an additive
/// padding mask) with transformers' upcast softmax
/// (`softmax(..., dtype=float32).to(query.dtype)`), as `torch.onnx.export`
/// writes it for a model in `.half()` (f16) or bfloat16: every tensor of
/// the graph in that type, the softmax between two Casts. Writes
/// `f16.onnx` and `bf16.onnx` into the directory given.
const HALF_ATTENTION_MODELS: &str = r#"
import sys
import onnx
from onnx import TensorProto as T, helper as h
H, S, D = 4, 37, 64
for name, elem in (("f16", T.FLOAT16), ("bf16", T.BFLOAT16)):
    lowest = -65504.0 if elem == T.FLOAT16 else -3.3895313892515355e38
    tri = [j <= i for i in range(S) for j in range(S)]
    nodes = [h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             h.make_node("MatMul", ["q", "kt"], ["s"]),
             h.make_node("Div", ["s", "root"], ["scaled"]),
             h.make_node("Where", ["tri", "scaled", "lowest"], ["causal"]),
             h.make_node("Add", ["causal", "mask"], ["masked"]),
             h.make_node("Cast", ["masked"], ["wide"], to=T.FLOAT),
             h.make_node("Softmax", ["wide"], ["p32"], axis=-1),
             h.make_node("Cast", ["p32"], ["p"], to=elem),
             h.make_node("MatMul", ["p", "v"], ["o"])]
    shape = [1, H, S, D]
    graph = h.make_graph(
        nodes, "attention",
        [h.make_tensor_value_info(n, elem, shape) for n in "qkv"]
        + [h.make_tensor_value_info("mask", elem, [1, 1, 1, S])],
        [h.make_tensor_value_info("o", elem, shape)],
        initializer=[h.make_tensor("root", elem, [], [float(D) ** 0.5]),
                     h.make_tensor("lowest", elem, [], [lowest]),
                     h.make_tensor("tri", T.BOOL, [1, 1, S, S], tri)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, f"{sys.argv[1]}/{name}.onnx")
"#;

/// An ONNX model that is itself f16 or bf16 (see `HALF_ATTENTION_MODELS`)
/// compiles for pocl-cpu to one flash-attention kernel in its own type:
/// the importer's f32 arithmetic between half casts, the upcast softmax,
/// the causal where and the mask are raised together. Its output is within
/// the type's bound of attention computed in f64 from the same (rounded)
/// inputs.
#[test]
fn half_onnx_attention_is_one_kernel_within_half_precision() {
    use tcc_runtime::{DType, HostTensor};
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("python3")
        .arg("-c")
        .arg(HALF_ATTENTION_MODELS)
        .arg(dir.path())
        .status()
        .expect("python3 (make deps installs the onnx package)");
    assert!(status.success(), "writing the models failed");
    let runtime = support::uncached_runtime();
    let (heads, seq, dim) = (4usize, 37usize, 64usize);
    for (name, dtype, bound) in [
        ("f16", DType::F16, RELATIVE_ERROR_BOUND),
        ("bf16", DType::BF16, BF16_RELATIVE_ERROR_BOUND),
    ] {
        let path = dir.path().join(format!("{name}.so"));
        let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .arg("compile")
            .arg(dir.path().join(format!("{name}.onnx")))
            .args(["--target=pocl-cpu", "--stats", "-o"])
            .arg(&path)
            .output()
            .unwrap();
        let stats = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {stats}");
        assert!(
            stats.contains("kernels: 1\n") && stats.contains("kind=attention"),
            "{name}: one flash-attention kernel expected:\n{stats}"
        );
        // Inputs in [-1, 1) (the mask in [-1, 0)) rounded to the type;
        // the reference reads the rounded values.
        let mut state = 0x5eed_1e55_u32;
        let mut rounded = Vec::new();
        let mut tensor = |shape: Vec<usize>, factor: f32, offset: f32| {
            let (tensor, values) = random_half_tensor(dtype, shape, &mut state, (factor, offset));
            rounded.push(values);
            tensor
        };
        let mut inputs: Vec<HostTensor> = (0..3)
            .map(|_| tensor(vec![1, heads, seq, dim], 1.0, 0.0))
            .collect();
        inputs.push(tensor(vec![1, 1, 1, seq], 0.5, -0.5));
        let scale = 1.0 / (dim as f64).sqrt();
        let want = causal_attention(&rounded[..3], Some(&rounded[3]), heads, seq, dim, scale);
        let loaded = Model::load(&path).unwrap();
        let out = runtime
            .session(&loaded)
            .unwrap()
            .run(&loaded.functions()[0].name, &inputs)
            .unwrap();
        assert_eq!(out[0].dtype, dtype, "{name}");
        let got: Vec<f32> = out[0]
            .bytes
            .chunks_exact(2)
            .map(|b| match dtype {
                DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                _ => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
            })
            .collect();
        let error = relative_error(&got, &want);
        assert!(
            error <= bound,
            "{name}: relative error {error:e} > {bound:e}"
        );
    }
}

/// A tensor of `dtype` (f16 or bf16) and `shape` of values uniform in
/// `[-1, 1) * scale.0 + scale.1` from the LCG `state`, rounded to the type,
/// and the rounded values (what a reference computes on).
fn random_half_tensor(
    dtype: tcc_runtime::DType,
    shape: Vec<usize>,
    state: &mut u32,
    (factor, offset): (f32, f32),
) -> (tcc_runtime::HostTensor, Vec<f64>) {
    let count: usize = shape.iter().product();
    let mut values = Vec::with_capacity(count);
    let bytes: Vec<u8> = (0..count)
        .flat_map(|_| {
            *state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = ((*state >> 8) as f32 / (1u32 << 23) as f32 - 1.0) * factor + offset;
            let (bits, back) = match dtype {
                tcc_runtime::DType::F16 => {
                    let h = half::f16::from_f32(v);
                    (h.to_le_bytes(), h.to_f32())
                }
                _ => {
                    let h = half::bf16::from_f32(v);
                    (h.to_le_bytes(), h.to_f32())
                }
            };
            values.push(f64::from(back));
            bits
        })
        .collect();
    (
        tcc_runtime::HostTensor::new(dtype, shape, bytes).unwrap(),
        values,
    )
}
