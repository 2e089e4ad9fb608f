//! `tcc tune` and `tcc compile --tuning`: runs the tuner on a small
//! product on the CI's OpenCL CPU device (PoCL), checks the record it
//! writes, that compiling with it takes the recorded configuration, and
//! the errors for a record of another target, a missing record and a
//! model with nothing to tune. Every run uses its own program caches.

use std::path::Path;
use std::process::{Command, Output};

use tcc_compiler::config::Target;
use tcc_compiler::config::tuning::TuningRecord;

/// A 64x128 @ 128x96 product with a bias and ReLU.
const MODEL: &str = r#"
func.func @dense(%a: tensor<1x64x128xf32>, %b: tensor<1x128x96xf32>) -> tensor<1x64x96xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %bias = "tosa.const"() <{values = dense<0.5> : tensor<1x1x96xf32>}> : () -> tensor<1x1x96xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x96xf32>
  %1 = tosa.add %0, %bias : (tensor<1x64x96xf32>, tensor<1x1x96xf32>) -> tensor<1x64x96xf32>
  %2 = tosa.clamp %1 {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<1x64x96xf32>) -> tensor<1x64x96xf32>
  return %2 : tensor<1x64x96xf32>
}
"#;

fn tcc(cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tcc"));
    command
        .env("TCC_CACHE_DIR", cache.join("tcc"))
        .env("POCL_CACHE_DIR", cache.join("pocl"));
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn tuning_records_the_fastest_candidate_and_compile_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("dense.mlir");
    std::fs::write(&model, MODEL).unwrap();
    let record_path = dir.path().join("record.json");
    let output = tcc(dir.path())
        .args([
            "tune",
            model.to_str().unwrap(),
            "--device=pthread",
            "--iterations=2",
        ])
        .arg("--max-candidates=3")
        .arg("-o")
        .arg(&record_path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("round 3/3"), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("| matmul | 1x64x96x128 | 1 |"), "{table}");

    let record = TuningRecord::load(&record_path).unwrap();
    assert_eq!(record.target, "pocl-cpu");
    assert!(record.device.contains("pthread"), "{}", record.device);
    assert!(!record.driver.is_empty(), "the record names the driver");
    let [entry] = record.gemms.as_slice() else {
        panic!("one product shape expected: {record:?}")
    };
    assert_eq!(
        (entry.kind.as_str(), entry.shape),
        ("matmul", [1, 64, 96, 128])
    );
    assert!(
        entry.best_ms > 0.0 && entry.best_ms <= entry.default_ms,
        "{entry:?}"
    );
    let candidates = Target::PoclCpu.gemm_candidates(1, 64, 96, 128);
    assert!(
        candidates[..3].contains(&entry.gemm_config()),
        "{entry:?} is not among the 3 measured candidates"
    );

    // Compiling with the record takes its configuration, whatever won.
    let tiled = tcc(dir.path())
        .args([
            "compile",
            model.to_str().unwrap(),
            "--target=pocl-cpu",
            "--compile-to=tile",
        ])
        .arg(format!("--tuning={}", record_path.display()))
        .output()
        .unwrap();
    assert!(tiled.status.success(), "{}", stderr(&tiled));
    let [tile_m, tile_n, tile_k, work_m, work_n, split_k] = entry.config;
    let strategy = format!(
        "#tcc.gemm<tile_m = {tile_m}, tile_n = {tile_n}, tile_k = {tile_k}, work_m = {work_m}, work_n = {work_n}, split_k = {split_k},"
    );
    assert!(
        String::from_utf8_lossy(&tiled.stdout).contains(&strategy),
        "{}",
        String::from_utf8_lossy(&tiled.stdout)
    );

    // An artifact built with the record (`--tuning-db`, the issue's name)
    // says which device and driver it was tuned for.
    let so = dir.path().join("dense.so");
    let built = tcc(dir.path())
        .args([
            "compile",
            model.to_str().unwrap(),
            "--target=pocl-cpu",
            "-o",
        ])
        .arg(&so)
        .arg(format!("--tuning-db={}", record_path.display()))
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", stderr(&built));
    let inspected = tcc(dir.path())
        .args(["inspect", so.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&inspected.stdout);
    assert!(
        text.contains(&format!(
            "tuned on: {} (driver {})",
            record.device, record.driver
        )),
        "{text}"
    );

    // --update keeps the entries of other shapes and replaces this one's.
    let mut extended = record.clone();
    extended
        .gemms
        .push(tcc_compiler::config::tuning::TunedGemm {
            kind: "convolution".into(),
            shape: [1, 49, 512, 4608],
            config: [4, 64, 4, 4, 64, 1],
            k_lanes: 1,
            best_ms: 1.0,
            default_ms: 2.0,
        });
    std::fs::write(&record_path, extended.to_json()).unwrap();
    let update = tcc(dir.path())
        .args([
            "tune",
            model.to_str().unwrap(),
            "--device=pthread",
            "--iterations=1",
        ])
        .args(["--max-candidates=2", "--update", "-o"])
        .arg(&record_path)
        .output()
        .unwrap();
    assert!(update.status.success(), "{}", stderr(&update));
    let updated = TuningRecord::load(&record_path).unwrap();
    assert_eq!(updated.gemms.len(), 2, "{updated:?}");
    assert!(updated.gemms.iter().any(|g| g.shape == [1, 49, 512, 4608]));
    assert_eq!(
        updated
            .gemms
            .iter()
            .filter(|g| g.shape == [1, 64, 96, 128])
            .count(),
        1
    );

    // A record is for one target.
    let other = tcc(dir.path())
        .args(["compile", model.to_str().unwrap(), "--target=nvidia", "-o"])
        .arg(dir.path().join("x.so"))
        .arg(format!("--tuning={}", record_path.display()))
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(1));
    assert!(
        stderr(&other).contains("is a tuning record for --target=pocl-cpu"),
        "{}",
        stderr(&other)
    );
}

#[test]
fn bad_records_and_models_without_products_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("dense.mlir");
    std::fs::write(&model, MODEL).unwrap();
    let missing = tcc(dir.path())
        .args([
            "compile",
            model.to_str().unwrap(),
            "--target=pocl-cpu",
            "--tuning=/nonexistent/r.json",
            "--compile-to=tile",
        ])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("cannot read tuning record /nonexistent/r.json"),
        "{}",
        stderr(&missing)
    );

    let malformed = dir.path().join("bad.json");
    std::fs::write(&malformed, "{\"version\": 1").unwrap();
    let bad = tcc(dir.path())
        .args([
            "compile",
            model.to_str().unwrap(),
            "--target=pocl-cpu",
            "--compile-to=tile",
        ])
        .arg(format!("--tuning={}", malformed.display()))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("bad.json"), "{}", stderr(&bad));

    let elementwise = dir.path().join("abs.mlir");
    std::fs::write(
        &elementwise,
        "func.func @f(%x: tensor<100xf32>) -> tensor<100xf32> {\n  %0 = tosa.abs %x : (tensor<100xf32>) -> tensor<100xf32>\n  return %0 : tensor<100xf32>\n}\n",
    )
    .unwrap();
    let nothing = tcc(dir.path())
        .args([
            "tune",
            elementwise.to_str().unwrap(),
            "--device=pthread",
            "-o",
        ])
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(nothing.status.code(), Some(1));
    assert!(
        stderr(&nothing).contains("nothing to tune"),
        "{}",
        stderr(&nothing)
    );
    assert!(!dir.path().join("r.json").exists());
}

/// The tuner split across two machines: `--prepare` compiles the rounds
/// (nothing runs), `tcc-benchmark --in-turns-with --json` measures them
/// where the device is, and `--measured` turns that into the record,
/// which names the device the measurement came from. Measurements that
/// do not match the rounds are refused.
#[test]
fn prepared_rounds_measured_elsewhere_make_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("dense.mlir");
    std::fs::write(&model, MODEL).unwrap();
    let rounds = dir.path().join("rounds");
    let output = tcc(dir.path())
        .args(["tune", model.to_str().unwrap(), "--target=pocl-cpu"])
        .arg("--max-candidates=2")
        .arg(format!("--prepare={}", rounds.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(printed.contains("--in-turns-with="), "{printed}");
    assert!(
        printed.contains("--input=1x64x128xf32=0 --input=1x128x96xf32=0"),
        "{printed}"
    );
    let (round0, round1) = (rounds.join("round0.so"), rounds.join("round1.so"));
    assert!(round0.is_file() && round1.is_file());
    assert!(!rounds.join("round2.so").exists());

    let benchmark = || {
        // tcc-runtime's binary, built beside tcc by `make test`'s build step.
        let tool = Path::new(env!("CARGO_BIN_EXE_tcc")).with_file_name("tcc-benchmark");
        assert!(
            tool.is_file(),
            "{} is missing: build it first (cargo build -p tcc-runtime --bins)",
            tool.display()
        );
        let mut command = Command::new(tool);
        command
            .env("TCC_CACHE_DIR", dir.path().join("cache/tcc"))
            .env("POCL_CACHE_DIR", dir.path().join("cache/pocl"))
            .arg("--device=pthread")
            .args(["--input=1x64x128xf32=0", "--input=1x128x96xf32=0"])
            .args(["--iterations=2", "--warmup=1", "--json"]);
        command
    };
    let measured = benchmark()
        .arg(&round0)
        .arg(format!("--in-turns-with={}", round1.display()))
        .output()
        .unwrap();
    assert!(measured.status.success(), "{}", stderr(&measured));
    let report: serde_json::Value = serde_json::from_slice(&measured.stdout).unwrap();
    let builds = report["builds"].as_array().unwrap();
    assert_eq!(builds.len(), 2);
    for build in builds {
        let fastest = build["fastest_ms"].as_object().unwrap();
        assert!(
            fastest.values().all(|ms| ms.as_f64().unwrap() > 0.0) && !fastest.is_empty(),
            "{build}"
        );
    }
    let measured_path = dir.path().join("measured.json");
    std::fs::write(&measured_path, &measured.stdout).unwrap();

    let record_path = dir.path().join("record.json");
    let finish = |measurements: &Path| {
        tcc(dir.path())
            .args(["tune", model.to_str().unwrap(), "--target=pocl-cpu"])
            .arg("--max-candidates=2")
            .arg(format!("--measured={}", measurements.display()))
            .arg("-o")
            .arg(&record_path)
            .output()
            .unwrap()
    };
    let output = finish(&measured_path);
    assert!(output.status.success(), "{}", stderr(&output));
    let record = TuningRecord::load(&record_path).unwrap();
    assert_eq!(record.target, "pocl-cpu");
    assert!(record.device.contains("pthread"), "{}", record.device);
    assert!(!record.driver.is_empty(), "the record names the driver");
    let [entry] = record.gemms.as_slice() else {
        panic!("one product shape expected: {record:?}")
    };
    let times: Vec<f64> = builds
        .iter()
        .map(|b| {
            b["fastest_ms"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum()
        })
        .collect();
    let best = times.iter().cloned().fold(f64::INFINITY, f64::min);
    // One kernel per build: the record's best is the faster build's.
    assert!(
        (entry.best_ms - best).abs() < 1e-9,
        "{entry:?} vs measured {times:?}"
    );
    let candidates = Target::PoclCpu.gemm_candidates(1, 64, 96, 128);
    assert!(candidates[..2].contains(&entry.gemm_config()), "{entry:?}");

    // One build measured for two rounds: refused, naming the mismatch.
    let one = benchmark()
        .arg(&round0)
        .arg(format!("--in-turns-with={}", round0.display()))
        .output()
        .unwrap();
    let mut report: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    report["builds"].as_array_mut().unwrap().pop();
    let short = dir.path().join("short.json");
    std::fs::write(&short, report.to_string()).unwrap();
    let output = finish(&short);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("1 builds measured, but this model has 2 rounds"),
        "{}",
        stderr(&output)
    );
}

/// SqueezeNet (issue 35): its repeated fire modules compile to identical
/// convolution kernels that the artifact launches under one name; the
/// tuner times the kernels the artifact launches, so every shape is
/// recorded (it failed with "no profile for kernel conv_min_max_17"
/// before). Bounded: two candidates, one timed call.
#[test]
fn squeezenet_tunes_every_convolution_shape() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let generated = Command::new("python3")
        .arg(repo.join("scripts/bench/gen-real-models.py"))
        .arg(dir.path())
        .arg("squeezenet")
        .output()
        .expect("python3 with onnx and numpy (make deps)");
    assert!(generated.status.success(), "{}", stderr(&generated));
    let record = dir.path().join("squeezenet.json");
    let o = tcc(dir.path())
        .arg("tune")
        .arg(dir.path().join("squeezenet.onnx"))
        .args([
            "--device=pthread",
            "--max-candidates=2",
            "--iterations=1",
            "-o",
        ])
        .arg(&record)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // tcc's warnings start `warning:` (PoCL's compiler may print its own
    // "N warnings generated." on a first build).
    assert!(!stderr(&o).contains("warning:"), "{}", stderr(&o));
    let record = TuningRecord::load(&record).unwrap();
    assert_eq!(record.target, "pocl-cpu");
    let shapes: Vec<[i64; 4]> = record.gemms.iter().map(|g| g.shape).collect();
    // SqueezeNet 1.1's 26 convolutions have 18 distinct shapes; the
    // first (3x3x3 taps over 111x111) and the classifier among them.
    assert_eq!(shapes.len(), 18, "{shapes:?}");
    assert!(shapes.contains(&[1, 12321, 64, 27]), "{shapes:?}");
    assert!(shapes.contains(&[1, 169, 1000, 512]), "{shapes:?}");
    assert!(
        record
            .gemms
            .iter()
            .all(|g| g.best_ms > 0.0 && g.best_ms <= g.default_ms)
    );
}

/// A record's path never travels in pipeline text (the driver loads the
/// record and `tcc-apply-tuning` attaches its choices to the ops), so any
/// path works, quotes and braces included; the choice shows on the op as
/// `tcc.tuning` and becomes its strategy.
#[test]
fn records_at_paths_with_quotes_and_braces_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("dense.mlir");
    std::fs::write(&model, MODEL).unwrap();
    let odd = dir.path().join("a \"quoted\" {braced} dir");
    std::fs::create_dir(&odd).unwrap();
    let record_path = odd.join("record }{\".json");
    let mut record = TuningRecord::new("pthread-test", "6.0", Target::PoclCpu);
    record.gemms.push(tcc_compiler::config::tuning::TunedGemm {
        kind: "matmul".into(),
        shape: [1, 64, 96, 128],
        config: [8, 16, 4, 8, 16, 1],
        k_lanes: 1,
        best_ms: 0.5,
        default_ms: 0.75,
    });
    std::fs::write(&record_path, record.to_json()).unwrap();
    let tiled = tcc(dir.path())
        .args([
            "compile",
            model.to_str().unwrap(),
            "--target=pocl-cpu",
            "--compile-to=tile",
        ])
        .arg(format!("--tuning={}", record_path.display()))
        .output()
        .unwrap();
    assert!(tiled.status.success(), "{}", stderr(&tiled));
    let text = String::from_utf8_lossy(&tiled.stdout);
    let chosen = "#tcc.gemm<tile_m = 8, tile_n = 16, tile_k = 4, work_m = 8, work_n = 16, split_k = 1, batch = 1, m = 64, n = 96, k = 128>";
    assert!(text.contains(&format!("tcc.tuning = {chosen}")), "{text}");
    assert!(text.contains(&format!("tcc.strategy = {chosen}")), "{text}");
    // The table's choice for the same product differs, so the record
    // decided.
    let table = Target::PoclCpu.gemm_config(1, 64, 96, 128).unwrap();
    assert_ne!((table.tile_m, table.tile_n), (8, 16), "{table:?}");
}
