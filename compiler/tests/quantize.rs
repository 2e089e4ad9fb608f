//! `tcc compile --quantize=int8 --profile=FILE`: profiles the small ONNX
//! models of `scripts/onnx/gen-quant-models.py` (a conv net with a BatchNorm,
//! an MLP) on their seeded samples on the test's OpenCL device, quantizes
//! them, and runs the f32 and int8 artifacts side by side. Checks that
//! every convolution and matmul became int8 (the weights take about a
//! quarter of the bytes; `tcc inspect` says so), that the outputs differ
//! from f32 (the int8 path really runs) but within the int8 bound derived
//! below, with the same top-1 class, and that the compile prints its
//! accuracy report. Then the bad inputs: an empty profile, another
//! model's, a zero or non-finite range (stated f32 fallbacks, no NaNs),
//! and flags without their partners.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use tcc_runtime::{HostTensor, Model, Runtime};

/// The bound on the outputs' relative Frobenius error against f32.
///
/// Symmetric int8 rounds each value of a tensor with bound `a` (largest
/// magnitude, max calibration: nothing is clipped) to a step of `a/127`,
/// an error of at most `a/254`: relative to the tensor's root mean square
/// `r`, a Frobenius error of at most `(a/r)/254`. The models' activations
/// and weights have `a/r` below 5 (normal inputs and He-uniform weights:
/// about 3.5 and 1.7; ReLU outputs a little more), so each quantized
/// tensor contributes at most 5/254 = 2.0%, and a contraction quantizes
/// two (its input and its weights). Through layers that keep magnitudes
/// (He initialization) the first-order errors of the convnet's three
/// contractions (six tensors) add up to at most 6 x 2.0% = 12% if they all
/// aligned, and to sqrt(6) x 2.0% = 4.8% as independent rounding errors
/// do; the bound is the latter rounded up to 1/16. A wrong kernel (int8
/// overflow, a wrong scale or layout) errs by order 1.
const RELATIVE_ERROR_BOUND: f64 = 1.0 / 16.0;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn tcc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .env("TCC_CACHE_DIR", dir.join("cache"))
        .env("POCL_CACHE_DIR", dir.join("pocl"))
        .output()
        .expect("run tcc")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The models and their samples (`scripts/onnx/gen-quant-models.py`),
/// written once per test process and shared by the tests, which only read
/// them (each writes its artifacts into a directory of its own).
fn models() -> &'static Path {
    static MODELS: OnceLock<PathBuf> = OnceLock::new();
    MODELS.get_or_init(|| {
        // In this process's own cache directory (test/support), removed
        // when it exits.
        let root = support::isolated_cache_dir()
            .as_deref()
            .and_then(Path::parent)
            .map_or_else(
                || PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
                Path::to_path_buf,
            );
        let dir = root.join(format!("quantize-models-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let o = Command::new("python3")
            .arg(repo("scripts/onnx/gen-quant-models.py"))
            .arg(&dir)
            .arg("--samples=16")
            .output()
            .expect("python3 (with numpy and onnx: make deps)");
        assert!(o.status.success(), "gen-quant-models.py: {}", stderr(&o));
        dir
    })
}

/// The profile of `model` on its samples (`tcc profile`), made once per
/// test process: the tests read it, and edit copies of their own.
fn profile(model: &str) -> PathBuf {
    static PROFILES: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut profiles = PROFILES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(profile) = profiles.get(model) {
        return profile.clone();
    }
    let dir = models();
    let out = dir.join(format!("{model}.profile.json"));
    let o = tcc(
        dir,
        &[
            "profile",
            path(&dir.join(format!("{model}.onnx"))),
            &format!("--inputs={}", path(&dir.join(format!("{model}-samples")))),
            &format!("-o={}", path(&out)),
        ],
    );
    assert!(o.status.success(), "tcc profile {model}: {}", stderr(&o));
    profiles.insert(model.to_string(), out.clone());
    out
}

/// `tcc compile` of `model` with `extra` flags into `output`.
fn compile(dir: &Path, model: &str, extra: &[&str], output: &Path) -> Output {
    let onnx = models().join(format!("{model}.onnx"));
    let mut args = vec!["compile", path(&onnx), "-o", path(output)];
    args.extend_from_slice(extra);
    tcc(dir, &args)
}

fn samples(model: &str) -> Vec<HostTensor> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(models().join(format!("{model}-samples")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| tcc_runtime::npy::read_npy(f).unwrap())
        .collect()
}

fn argmax(values: &[f32]) -> usize {
    (0..values.len())
        .max_by(|&a, &b| values[a].total_cmp(&values[b]).then(b.cmp(&a)))
        .unwrap_or(0)
}

/// (relative Frobenius error over all samples, agreeing top-1 rows, rows)
/// of the int8 artifact against the f32 one.
fn compare(
    runtime: &Runtime,
    f32_model: &Path,
    int8_model: &Path,
    inputs: &[HostTensor],
) -> (f64, usize, usize) {
    let (f32_model, int8_model) = (
        Model::load(f32_model).unwrap(),
        Model::load(int8_model).unwrap(),
    );
    let function = f32_model.functions()[0].name.clone();
    let mut want_session = runtime.session(&f32_model).unwrap();
    let mut got_session = runtime.session(&int8_model).unwrap();
    let (mut diff, mut norm, mut agree, mut rows) = (0f64, 0f64, 0, 0);
    for input in inputs {
        let want = want_session
            .run(&function, std::slice::from_ref(input))
            .unwrap()[0]
            .to_f32()
            .unwrap();
        let got = got_session
            .run(&function, std::slice::from_ref(input))
            .unwrap()[0]
            .to_f32()
            .unwrap();
        assert!(
            got.iter().all(|v| v.is_finite()),
            "non-finite int8 outputs: {got:?}"
        );
        for (g, w) in got.iter().zip(&want) {
            diff += (f64::from(*g) - f64::from(*w)).powi(2);
            norm += f64::from(*w).powi(2);
        }
        for (g, w) in got.chunks(10).zip(want.chunks(10)) {
            rows += 1;
            agree += usize::from(argmax(g) == argmax(w));
        }
    }
    ((diff / norm).sqrt(), agree, rows)
}

fn runtime() -> Runtime {
    support::uncached_runtime()
}

#[test]
fn quantized_models_stay_within_the_int8_bound() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let runtime = runtime();
    let mut report = Vec::new();
    for (model, contractions) in [("convnet", 3), ("mlp", 2)] {
        let profile = profile(model);
        let f32_path = dir.join(format!("{model}-f32.so"));
        let int8_path = dir.join(format!("{model}-int8.so"));
        let o = compile(dir, model, &[], &f32_path);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = compile(
            dir,
            model,
            &["--quantize=int8", &format!("--profile={}", path(&profile))],
            &int8_path,
        );
        let text = stderr(&o);
        assert!(o.status.success(), "{text}");
        assert!(
            text.contains(&format!(
                "int8: {contractions} convolution(s) and matmul(s) quantized, 0 left f32"
            )),
            "{text}"
        );
        assert!(
            text.contains("int8 accuracy against f32 over 16 samples"),
            "{text}"
        );
        assert!(text.contains("top-1 agreement"), "{text}");

        // The weights are int8: a quarter of the f32 bytes, plus the f32
        // per-channel scales and biases of the epilogues.
        let (f32_model, int8_model) = (
            Model::load(&f32_path).unwrap(),
            Model::load(&int8_path).unwrap(),
        );
        let f32_bytes: u64 = f32_model.constant_bytes().iter().sum();
        let int8_bytes: u64 = int8_model.constant_bytes().iter().sum();
        assert!(
            int8_bytes * 10 <= f32_bytes * 4,
            "{model}: {int8_bytes} constant bytes quantized, {f32_bytes} in f32"
        );
        let inspect = tcc(dir, &["inspect", path(&int8_path)]);
        let inspect = String::from_utf8_lossy(&inspect.stdout);
        assert!(
            inspect.contains(&format!(
                "quantization: int8 ({contractions} convolutions/matmuls"
            )),
            "{inspect}"
        );

        let (error, agree, rows) = compare(&runtime, &f32_path, &int8_path, &samples(model));
        report.push(format!(
            "{model}: relative error {error:.3e}, top-1 {agree}/{rows}, constants {int8_bytes}/{f32_bytes} bytes"
        ));
        assert!(
            error > 0.0,
            "{model}: int8 outputs equal f32's: was anything quantized?"
        );
        assert!(error <= RELATIVE_ERROR_BOUND, "{}", report.join("\n"));
        // Classes whose scores differ by less than the error may swap; on
        // these samples none does.
        assert_eq!(agree, rows, "{}", report.join("\n"));
    }
    println!("{}", report.join("\n"));
}

/// The profile of `model` with `edit` applied to its JSON.
fn edited_profile(
    dir: &Path,
    profile: &Path,
    name: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> PathBuf {
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(profile).unwrap()).unwrap();
    edit(&mut json);
    let out = dir.join(name);
    std::fs::write(&out, serde_json::to_string(&json).unwrap()).unwrap();
    out
}

fn tensor<'a>(json: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    json["tensors"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == name)
        .unwrap()
}

#[test]
fn bad_profiles_are_errors_or_stated_fallbacks() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let convnet = profile("convnet");
    let mlp = profile("mlp");
    let out = dir.join("out.so");
    let quantize = |model: &str, profile: &Path| {
        compile(
            dir,
            model,
            &["--quantize=int8", &format!("--profile={}", path(profile))],
            &out,
        )
    };
    let fails_with = |o: Output, code: i32, message: &str| {
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert!(stderr(&o).contains(message), "{}", stderr(&o));
    };

    // An empty profile; another model's (other input shape; no names).
    let empty = edited_profile(dir, &convnet, "empty.json", |j| {
        j["tensors"] = serde_json::json!([])
    });
    fails_with(quantize("convnet", &empty), 1, "the profile is empty");
    fails_with(
        quantize("mlp", &convnet),
        1,
        "the profile's input 'x' has the shape [1, 3, 16, 16]",
    );
    let renamed = edited_profile(dir, &mlp, "renamed.json", |j| {
        for t in j["tensors"].as_array_mut().unwrap() {
            t["name"] = serde_json::json!(format!("other/{}", t["name"].as_str().unwrap()));
        }
    });
    fails_with(
        quantize("mlp", &renamed),
        1,
        "are not tensors of this model",
    );
    assert!(!out.exists(), "a failed compile wrote {}", out.display());

    // A zero range (ReLU output r1 all zero) and NaNs in the input: the
    // convolutions reading them stay f32, the rest is int8, no NaNs.
    let degenerate = edited_profile(dir, &convnet, "degenerate.json", |j| {
        let r1 = tensor(j, "r1");
        r1["min"] = serde_json::json!(0.0);
        r1["max"] = serde_json::json!(0.0);
        tensor(j, "x")["nonfinite"] = serde_json::json!(3);
    });
    let o = quantize("convnet", &degenerate);
    let text = stderr(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("int8: 1 convolution(s) and matmul(s) quantized, 2 left f32"),
        "{text}"
    );
    assert!(
        text.contains("its input 'r1' has a zero range (0 to 0) in the profile"),
        "{text}"
    );
    assert!(
        text.contains("its input 'x' held 3 NaN or infinite values in the profile"),
        "{text}"
    );
    let f32_path = dir.join("convnet-f32.so");
    let o = compile(dir, "convnet", &[], &f32_path);
    assert!(o.status.success(), "{}", stderr(&o));
    let (error, _, _) = compare(&runtime(), &f32_path, &out, &samples("convnet"));
    assert!(error <= RELATIVE_ERROR_BOUND, "relative error {error}");

    // Without a device the accuracy report says so; the artifact is
    // written all the same.
    std::fs::remove_file(&out).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args([
            "compile",
            path(&models().join("mlp.onnx")),
            "-o",
            path(&out),
            "--quantize=int8",
        ])
        .arg(format!("--profile={}", path(&mlp)))
        .env("TCC_DEVICE", "no such device")
        .env("TCC_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("int8 accuracy not measured: no OpenCL device"),
        "{}",
        stderr(&o)
    );
    assert!(out.exists());

    // Flags without their partners are usage errors of their own.
    fails_with(
        compile(dir, "mlp", &["--quantize=int8"], &out),
        1,
        "--quantize=int8 needs --profile=FILE",
    );
    fails_with(
        compile(dir, "mlp", &[&format!("--profile={}", path(&mlp))], &out),
        1,
        "--profile and --calibration-inputs apply to --quantize=int8",
    );
    fails_with(
        compile(
            dir,
            "mlp",
            &[
                "--quantize=int8",
                &format!("--profile={}", path(&mlp)),
                "--emit=spirv",
            ],
            &dir.join("spv"),
        ),
        1,
        "--quantize=int8 needs the OpenCL C or PTX kernels",
    );
}

/// `tcc compile` of `model` with `extra` flags into `output`, with the
/// int8 GEMM template switch `TCC_INT8_GEMM` set to `int8_gemm`.
fn compile_with_int8_gemm(
    dir: &Path,
    model: &str,
    extra: &[&str],
    output: &Path,
    int8_gemm: &str,
) -> Output {
    let onnx = models().join(format!("{model}.onnx"));
    let mut args = vec!["compile", path(&onnx), "-o", path(output)];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(&args)
        .env("TCC_CACHE_DIR", dir.join("cache"))
        .env("POCL_CACHE_DIR", dir.join("pocl"))
        .env("TCC_INT8_GEMM", int8_gemm)
        .output()
        .expect("run tcc")
}

/// The outputs of `model` (an artifact) on each of `inputs`.
fn outputs(runtime: &Runtime, model: &Path, inputs: &[HostTensor]) -> Vec<Vec<f32>> {
    let model = Model::load(model).unwrap();
    let function = model.functions()[0].name.clone();
    let mut session = runtime.session(&model).unwrap();
    inputs
        .iter()
        .map(|input| {
            session.run(&function, std::slice::from_ref(input)).unwrap()[0]
                .to_f32()
                .unwrap()
        })
        .collect()
}

/// The int8 GEMM template (`tcc-kernels`' `gemm::int8`, here its OpenCL C
/// body: the test device is PoCL) sums int8 products exactly, like the
/// loop nests, and runs the same epilogue statements on the sums: its
/// outputs must be bit-identical to the loop nests' (`TCC_INT8_GEMM=off`),
/// for k steps of 64 and 32, on every target (pocl-cpu takes the generic
/// tiles). So must the row-reduction template's int32 sums (widenet's
/// classifier), which `TCC_INT8_GEMM=off` also turns into loop nests.
#[test]
fn int8_gemm_template_matches_the_loop_nests_bit_for_bit() {
    let _serial = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let runtime = runtime();
    for model in ["convnet", "mlp", "widenet"] {
        let profile = profile(model);
        let profile_flag = format!("--profile={}", path(&profile));
        let inputs = samples(model);
        for target in ["--target=generic", "--target=nvidia", "--target=pocl-cpu"] {
            // The accuracy report (the f32 model compiled again and both
            // run on the samples) is not what this test checks: it runs in
            // quantized_models_stay_within_the_int8_bound.
            let flags = [
                "--quantize=int8",
                profile_flag.as_str(),
                target,
                "--no-accuracy-report",
            ];
            let build = |int8_gemm: &str| {
                let output = dir.join(format!("{model}-{}-{int8_gemm}.so", &target[9..]));
                let o = compile_with_int8_gemm(dir, model, &flags, &output, int8_gemm);
                assert!(o.status.success(), "{}", stderr(&o));
                output
            };
            let loops = outputs(&runtime, &build("off"), &inputs);
            // The template really runs: the convnet's kernels hold the
            // int8 bodies (the MLP's products of one row keep loop nests
            // on the generic target).
            let kernels = dir.join(format!("{model}-{}-kernels", &target[9..]));
            let mut emit = flags.to_vec();
            emit.push("--emit=opencl-c");
            let o = compile_with_int8_gemm(dir, model, &emit, &kernels, "on");
            assert!(o.status.success(), "{}", stderr(&o));
            let sources: String = std::fs::read_dir(&kernels)
                .unwrap()
                .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
                .collect();
            assert!(
                model != "convnet"
                    || (sources.contains("acc[wm][wn] += ra[wm].x * rb[wn].x")
                        && sources.contains("TCC_MMA_S8(")),
                "{model} {target}: no int8 GEMM kernel"
            );
            // The widenet's classifier (ResNet-50's tail: a 256-long int8
            // row per class) sums in the row-reduction template, in int, on
            // the GPU targets (pocl-cpu takes the template only where the
            // rows are contiguous, and the weights' are strided).
            assert!(
                model != "widenet"
                    || target == "--target=pocl-cpu"
                    || sources.contains("int partial_total = 0;"),
                "{model} {target}: the classifier's int32 sums left the row template"
            );
            for int8_gemm in ["on", "32"] {
                let template = outputs(&runtime, &build(int8_gemm), &inputs);
                assert!(
                    template
                        .iter()
                        .flatten()
                        .zip(loops.iter().flatten())
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{model} {target} TCC_INT8_GEMM={int8_gemm}: outputs differ from the loop nests'"
                );
            }
        }
    }
}
