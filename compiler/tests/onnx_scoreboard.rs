//! The ONNX scoreboard: every case of the onnx package's backend test data
//! (`pytorch-converted`, `pytorch-operator`) and the hand-made models of
//! `test/onnx/models` is imported, compiled, run on the default OpenCL
//! device and compared with a per-case tolerance (bit for bit for exact
//! ops); a case that does not end as `test/onnx/expectations.txt` says (the
//! same outcome and reason) is a failure. Each case is reported to the
//! summary line on its own. The cases run in `tcc onnx-test` child
//! processes, one per core ([`run_in_processes`], which the node suite
//! uses too).

use crate::support;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
                Outcome::Pass | Outcome::PassWithValues(_) => CaseResult::Passed,
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

/// Child processes for [`run_in_processes`]: `TCC_TEST_JOBS`, else one
/// per core.
pub(crate) fn jobs() -> usize {
    std::env::var("TCC_TEST_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .filter(|&j| j > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// Runs `cases` as `scoreboard::run_cases_parallel` does (no on-disk
/// program cache: with PoCL, storing a program there asks for its binary,
/// which compiles every kernel a second time, and nothing here loads those
/// entries again), in [`jobs`] child processes instead of threads: PoCL
/// builds the programs of one process one at a time (a process-wide
/// compiler lock), so in one process every kernel build of every case
/// waits for one core, whatever the number of threads. The cases are dealt out in turn (case `i` to child `i mod
/// n`, so that the expensive families, whose names sort together, are
/// shared out), each child runs its share with `tcc onnx-test -j1
/// --write-expectations FILE CASE...` with caches of its own
/// (`support::isolate_command`), and the outcomes are read back with
/// `scoreboard::read_expectations`. A case that a child did not report (it
/// crashed or could not start its runtime) ends as a failure that says so.
/// The children are started under `support::device_and_spawn_lock`; what
/// they print goes to this test's captured output. With
/// `unoptimized_kernels` the children build their kernel programs with
/// `-cl-opt-disable` (`TCC_OPENCL_BUILD_OPTIONS`): for suites of many
/// small graphs whose kernels run once, where the driver's optimizer is
/// most of a case's time (PoCL, the ONNX node suite: about a third of its
/// time) and the outcome is what the graph computes, not how fast.
pub(crate) fn run_in_processes(
    cases: &[PathBuf],
    verbose: bool,
    unoptimized_kernels: bool,
) -> BTreeMap<String, Outcome> {
    let jobs = jobs().clamp(1, cases.len().max(1));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut children = Vec::new();
    {
        let _serial = support::device_and_spawn_lock();
        for k in 0..jobs {
            let shard: Vec<&PathBuf> = cases.iter().skip(k).step_by(jobs).collect();
            let work = dir.path().join(format!("child{k}"));
            std::fs::create_dir_all(&work).expect("a child's directory");
            let outcomes = work.join("outcomes.txt");
            let log = work.join("output.txt");
            let output = File::create(&log).expect("a child's log");
            let mut command = Command::new(env!("CARGO_BIN_EXE_tcc"));
            command
                .args(["onnx-test", "-j1", "--write-expectations"])
                .arg(&outcomes);
            if verbose {
                command.arg("--verbose");
            }
            command
                .arg("--")
                .args(&shard)
                .stdin(Stdio::null())
                .stdout(output.try_clone().expect("a child's log"))
                .stderr(output);
            support::isolate_command(&mut command, &work);
            if unoptimized_kernels {
                command.env(tcc_runtime::OPENCL_BUILD_OPTIONS_ENV, "-cl-opt-disable");
            }
            let child = command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", env!("CARGO_BIN_EXE_tcc")));
            children.push((shard, outcomes, log, child));
        }
    }
    let mut merged = BTreeMap::new();
    for (shard, outcomes, log, mut child) in children {
        let status = child.wait().expect("wait for a `tcc onnx-test` child");
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        eprint!("{output}");
        let reported = match status.success() {
            true => scoreboard::read_expectations(&outcomes).map_err(|e| format!("{e:#}")),
            false => Err(format!(
                "it ended with {status}: {}",
                output.lines().last().unwrap_or("(no output)")
            )),
        };
        for case in shard {
            let name = case
                .file_name()
                .and_then(|n| n.to_str())
                .expect("a case directory's name")
                .to_string();
            let outcome = match &reported {
                Ok(reported) => reported.get(&name).cloned().unwrap_or_else(|| {
                    Outcome::Fail("its `tcc onnx-test` child did not report it".into())
                }),
                Err(why) => Outcome::Fail(format!(
                    "its `tcc onnx-test` child did not report it: {why}"
                )),
            };
            merged.insert(name, outcome);
        }
    }
    merged
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
    let outcomes = run_in_processes(&cases, true, true);
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
    let outcomes = run_in_processes(&cases, false, true);
    check("exporter_models_pass", &outcomes);
}

/// Runs a directory of exporter cases whose data sets differ in their
/// symbolic extents: `count` cases (with what they are), each with the
/// data set `last_set` (and what the sets are), checked against the
/// expectation list as `test`.
fn run_fixture_dir(test: &str, cases: Vec<PathBuf>, count: (usize, &str), last_set: (&str, &str)) {
    assert_eq!(cases.len(), count.0, "{}", count.1);
    for case in &cases {
        assert!(
            case.join(last_set.0).is_dir(),
            "{}: {}",
            case.display(),
            last_set.1
        );
    }
    let outcomes = run_in_processes(&cases, false, true);
    check(test, &outcomes);
}

/// The same architectures exported with a symbolic `batch` (and
/// `sequence`) axis (`gen.py --dynamic`), with data sets at batch 2 and 3:
/// the scoreboard keeps the dimensions whose extent differs between the
/// data sets symbolic, so one artifact runs both.
fn dynamic_exporter_cases() -> Vec<PathBuf> {
    scoreboard::find_cases(&[repo("test/onnx/exporters-dynamic")]).expect("cases")
}

#[test]
fn exporter_models_with_a_symbolic_batch_pass() {
    run_fixture_dir(
        "exporter_models_with_a_symbolic_batch_pass",
        dynamic_exporter_cases(),
        (
            14,
            "7 architectures x 2 exporters in test/onnx/exporters-dynamic",
        ),
        ("test_data_set_1", "a second data set at another batch"),
    );
}

/// The language models of test/onnx/exporters-dynamic with data sets at
/// three (batch, sequence) pairs (`sequence_sets.py`: 2 x 16, 3 x 11 with
/// a padded row, 1 x 4; T5's decoder sequence too): `batch` and
/// `sequence` both symbolic, one artifact runs all three.
fn sequence_exporter_cases() -> Vec<PathBuf> {
    scoreboard::find_cases(&[repo("test/onnx/exporters-sequence")]).expect("cases")
}

#[test]
fn exporter_models_with_a_symbolic_sequence_pass() {
    run_fixture_dir(
        "exporter_models_with_a_symbolic_sequence_pass",
        sequence_exporter_cases(),
        (
            8,
            "BERT, GPT-2, Llama and T5 x 2 exporters in test/onnx/exporters-sequence",
        ),
        (
            "test_data_set_2",
            "three data sets at different sequence lengths",
        ),
    );
}

/// GPT-2 exported with its key/value cache (`kv_cache.py`), each with
/// four data sets that are the steps of a decode loop (a 6-token prompt
/// on an empty cache, one-token steps at 6 and 13 cached positions, a
/// batch of 3 with a row whose mask hides two positions): the static
/// cache (transformers' `StaticCache`, both exporters) runs all four in
/// one artifact with `batch` and `sequence` symbolic; the growing cache
/// (its mask `past_sequence + sequence` long) is refused, saying why.
fn kv_cache_cases() -> Vec<PathBuf> {
    scoreboard::find_cases(&[repo("test/onnx/exporters-kv")]).expect("cases")
}

#[test]
fn exporter_models_with_a_kv_cache_run_their_decode_steps() {
    run_fixture_dir(
        "exporter_models_with_a_kv_cache_run_their_decode_steps",
        kv_cache_cases(),
        (
            3,
            "GPT-2 with a static cache (2 exporters) and with a growing one in test/onnx/exporters-kv",
        ),
        ("test_data_set_3", "four decode steps"),
    );
}

#[test]
fn onnx_backend_test_data_has_no_regressions() {
    let cases = backend_cases();
    assert_eq!(
        cases.len(),
        117,
        "the onnx package's pytorch-converted + pytorch-operator cases"
    );
    let outcomes = run_in_processes(&cases, false, true);
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
        .chain(&dynamic_exporter_cases())
        .chain(&sequence_exporter_cases())
        .chain(&kv_cache_cases())
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
