//! The ONNX scoreboard: every case of the onnx package's backend test data
//! (`pytorch-converted`, `pytorch-operator`) and the hand-made models of
//! `test/onnx/models` is imported, compiled, run on the default OpenCL
//! device and compared with a per-case tolerance (bit for bit for exact
//! ops); a case that does not end as `test/onnx/expectations.txt` says (the
//! same outcome and reason) is a failure. Each case is reported to the
//! summary line on its own.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{CaseResult, Tally};
use tcc_compiler::driver::scoreboard::{self, Outcome};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// The onnx package's backend test data: TCC_ONNX_DATA, else found
/// through `python3 -c "import onnx"` (tried three times: under the
/// parallel test load of CI, one start of python3 through pyenv's shim
/// once failed), or why not.
fn onnx_data() -> Result<PathBuf, String> {
    if let Ok(dir) = std::env::var("TCC_ONNX_DATA") {
        return Ok(PathBuf::from(dir));
    }
    let mut why = String::new();
    for _ in 0..3 {
        let output = match Command::new("python3")
            .args([
                "-c",
                "import onnx, os; print(os.path.dirname(onnx.__file__))",
            ])
            .output()
        {
            Ok(output) => output,
            Err(e) => {
                why = format!("cannot run python3: {e}");
                continue;
            }
        };
        if !output.status.success() {
            why = format!(
                "python3 -c 'import onnx' failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            continue;
        }
        let dir =
            PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("backend/test/data");
        return match dir.is_dir() {
            true => Ok(dir),
            false => Err(format!("{} is not a directory", dir.display())),
        };
    }
    Err(why)
}

/// Reports every case to the summary (a pass, a failure, or a skip with
/// its reason when the case ends as its expectation says it does not pass)
/// and fails on any case that does not end as expected.
fn check(test: &str, outcomes: &BTreeMap<String, Outcome>) {
    let expected =
        scoreboard::read_expectations(&repo("test/onnx/expectations.txt")).expect("expectations");
    let mut tally = Tally::new(test);
    for (name, outcome) in outcomes {
        let want = expected.get(name).cloned().unwrap_or(Outcome::Pass);
        let result = if !scoreboard::matches_expectation(outcome, &want) {
            CaseResult::Failed(format!(
                "expected {}, got {}",
                want.render(),
                outcome.render()
            ))
        } else {
            match outcome {
                Outcome::Pass => CaseResult::Passed,
                other => CaseResult::Skipped(other.render()),
            }
        };
        tally.add(name, result);
    }
    tally.report();
    let regressions = scoreboard::regressions(outcomes, &expected);
    println!("{}", scoreboard::summary(outcomes));
    assert!(
        regressions.is_empty(),
        "cases that did not end as test/onnx/expectations.txt says:\n  {}",
        regressions.join("\n  ")
    );
}

fn backend_cases() -> Vec<PathBuf> {
    // `make deps` installs the onnx package: its absence is a failure, not
    // a skip.
    let data = onnx_data().unwrap_or_else(|why| {
        panic!(
            "the ONNX backend test data is missing ({why}): run `make deps` (installs the onnx PyPI package) or set TCC_ONNX_DATA"
        )
    });
    scoreboard::find_cases(&[
        data.join("pytorch-converted"),
        data.join("pytorch-operator"),
    ])
    .expect("cases")
}

/// Runs `cases` on worker threads without the on-disk program cache
/// (`scoreboard::run_cases_parallel`). With PoCL, storing a program in the
/// disk cache asks for its binary, which compiles every kernel a second
/// time (a generic work-group function): nothing here loads those entries
/// again, so the cache only doubled the kernel builds. The workers use
/// every core (the cases mostly wait on the kernel compiler).
fn run(cases: &[PathBuf], verbose: bool) -> BTreeMap<String, Outcome> {
    let jobs = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2);
    scoreboard::run_cases_parallel(cases, None, verbose, jobs).expect("OpenCL runtime")
}

fn hand_made_cases() -> Vec<PathBuf> {
    scoreboard::find_cases(&[repo("test/onnx/models")]).expect("cases")
}

/// Small models of the architectures people export (BERT, GPT-2, T5, ViT,
/// Whisper's encoder, a Llama-style decoder, a U-Net with Resize), each
/// from torch's TorchScript and dynamo exporters, with onnxruntime's
/// outputs (`test/onnx/exporters/gen.py`).
fn exporter_cases() -> Vec<PathBuf> {
    scoreboard::find_cases(&[repo("test/onnx/exporters")]).expect("cases")
}

#[test]
fn hand_made_models_pass() {
    let cases = hand_made_cases();
    assert!(cases.len() >= 18, "{} cases", cases.len());
    let outcomes = run(&cases, true);
    check("hand_made_models_pass", &outcomes);
}

#[test]
fn exporter_models_pass() {
    let cases = exporter_cases();
    assert_eq!(
        cases.len(),
        14,
        "7 architectures x 2 exporters in test/onnx/exporters"
    );
    let outcomes = run(&cases, false);
    check("exporter_models_pass", &outcomes);
}

#[test]
fn onnx_backend_test_data_has_no_regressions() {
    let cases = backend_cases();
    assert_eq!(
        cases.len(),
        117,
        "the onnx package's pytorch-converted + pytorch-operator cases"
    );
    let outcomes = run(&cases, false);
    check("onnx_backend_test_data_has_no_regressions", &outcomes);
    let passed = outcomes.values().filter(|o| **o == Outcome::Pass).count();
    assert!(
        passed * 100 >= 90 * outcomes.len(),
        "{passed} of {} pass (target: 90%)",
        outcomes.len()
    );
}

/// Every entry of the expectation list names an existing case, and every
/// entry that is not `pass` names its reason.
#[test]
fn expectations_name_existing_cases_and_reasons() {
    let expected =
        scoreboard::read_expectations(&repo("test/onnx/expectations.txt")).expect("expectations");
    let names: std::collections::BTreeSet<String> = backend_cases()
        .iter()
        .chain(&hand_made_cases())
        .chain(&exporter_cases())
        .filter_map(|c| c.file_name()?.to_str().map(str::to_string))
        .collect();
    for (name, outcome) in &expected {
        assert!(
            names.contains(name),
            "test/onnx/expectations.txt lists {name}, which is no case"
        );
        if let Outcome::Unsupported(reason) | Outcome::Fail(reason) = outcome {
            assert!(
                !reason.is_empty(),
                "test/onnx/expectations.txt: {name} names no reason"
            );
        }
    }
}

/// The expectation check itself: a different reason, or a pass where a
/// failure is listed, does not match.
#[test]
fn expectations_match_kind_and_reason() {
    let unsupported = |r: &str| Outcome::Unsupported(r.into());
    let fail = |r: &str| Outcome::Fail(r.into());
    assert!(scoreboard::matches_expectation(
        &unsupported("graph input '0' has element type double"),
        &unsupported("element type double")
    ));
    assert!(!scoreboard::matches_expectation(
        &unsupported("unsupported op Foo"),
        &unsupported("element type double")
    ));
    assert!(!scoreboard::matches_expectation(
        &fail("element type double"),
        &unsupported("element type double")
    ));
    assert!(!scoreboard::matches_expectation(
        &Outcome::Pass,
        &unsupported("element type double")
    ));
    assert!(!scoreboard::matches_expectation(&fail("x"), &Outcome::Pass));
    assert!(!scoreboard::matches_expectation(&fail("x"), &fail("")));
}
