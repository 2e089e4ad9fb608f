//! The ONNX scoreboard: every case of the onnx package's backend test data
//! (`pytorch-converted`, `pytorch-operator`) and the hand-made models of
//! `test/onnx/models` is imported, compiled, run on the default OpenCL
//! device and compared; a case doing worse than `test/onnx/expectations.txt`
//! says is a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tcc_compiler::front::scoreboard::{self, Outcome};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// The onnx package's backend test data: TCC_ONNX_DATA, else found
/// through `python3 -c "import onnx"`.
fn onnx_data() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("TCC_ONNX_DATA") {
        return Some(PathBuf::from(dir));
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import onnx, os; print(os.path.dirname(onnx.__file__))",
        ])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let dir =
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("backend/test/data");
    dir.is_dir().then_some(dir)
}

fn check(outcomes: &BTreeMap<String, Outcome>) {
    let expected =
        scoreboard::read_expectations(&repo("test/onnx/expectations.txt")).expect("expectations");
    let regressions = scoreboard::regressions(outcomes, &expected);
    println!("{}", scoreboard::summary(outcomes));
    assert!(
        regressions.is_empty(),
        "regressions against test/onnx/expectations.txt:\n  {}",
        regressions.join("\n  ")
    );
}

#[test]
fn hand_made_models_pass() {
    let cases = scoreboard::find_cases(&[repo("test/onnx/models")]).expect("cases");
    assert!(cases.len() >= 17, "{} cases", cases.len());
    let outcomes = scoreboard::run_cases(&cases, None, true).expect("OpenCL runtime");
    check(&outcomes);
}

#[test]
fn onnx_backend_test_data_has_no_regressions() {
    // `make deps` installs the onnx package: its absence is a failure, not
    // a skip.
    let data = onnx_data().expect(
        "the ONNX backend test data is missing: run `make deps` (installs the onnx PyPI package) or set TCC_ONNX_DATA",
    );
    let cases = scoreboard::find_cases(&[
        data.join("pytorch-converted"),
        data.join("pytorch-operator"),
    ])
    .expect("cases");
    assert_eq!(
        cases.len(),
        117,
        "the onnx package's pytorch-converted + pytorch-operator cases"
    );
    let outcomes = scoreboard::run_cases(&cases, None, false).expect("OpenCL runtime");
    check(&outcomes);
    let passed = outcomes.values().filter(|o| **o == Outcome::Pass).count();
    assert!(
        passed * 100 >= 90 * outcomes.len(),
        "{passed} of {} pass (target: 90%)",
        outcomes.len()
    );
}
