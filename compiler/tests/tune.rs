//! `tcc tune` and `tcc compile --tuning`: runs the tuner on a small
//! product on the CI's OpenCL CPU device (PoCL), checks the record it
//! writes, that compiling with it takes the recorded configuration, and
//! the errors for a record of another target, a missing record and a
//! model with nothing to tune. Every run uses its own program caches.

#[path = "../../test/support/mod.rs"]
mod support;

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
    let config = entry.config.map(|v| v.to_string()).join(", ");
    assert!(
        String::from_utf8_lossy(&tiled.stdout).contains(&format!("gemm = array<i64: {config}>")),
        "{}",
        String::from_utf8_lossy(&tiled.stdout)
    );

    // --update keeps the entries of other shapes and replaces this one's.
    let mut extended = record.clone();
    extended
        .gemms
        .push(tcc_compiler::config::tuning::TunedGemm {
            kind: "convolution".into(),
            shape: [1, 49, 512, 4608],
            config: [4, 64, 4, 4, 64, 1],
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
