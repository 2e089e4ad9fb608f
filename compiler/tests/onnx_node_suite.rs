//! The ONNX backend node suite: every node test case that the installed
//! onnx package generates (`onnx.backend.test.loader.load_node_model_tests`,
//! 1,884 with onnx 1.23.2; the package no longer ships them as files) is
//! written under target/ by `test/onnx/node_suite.py` at test time, then
//! imported, compiled, run on the default OpenCL device and compared as
//! the scoreboard compares (docs/onnx.md, "The scoreboard"), in one
//! `tcc onnx-test` child process per core
//! (`onnx_scoreboard::run_in_processes`: PoCL builds one process's kernels
//! one at a time). A case that does not end as
//! `test/onnx/node-expectations.txt` says (the same outcome and reason) is
//! a failure, and each case counts in the summary line. The training-only
//! cases (optimizers, gradients, training-mode Dropout and
//! BatchNormalization, as the generator's TRAINING list names them from
//! their op types) must be refused with a "training op" error, and are
//! counted apart in the printed totals.
//!
//! `TCC_WRITE_EXPECTATIONS=1 cargo test -p tcc-compiler --test
//! onnx_node_suite` writes the observed outcomes to the expectation list
//! instead of checking them (then review the diff).

use crate::{onnx_scoreboard, support};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use support::{CaseResult, Tally};
use tcc_compiler::driver::scoreboard::{self, Outcome};

const EXPECTATIONS: &str = "test/onnx/node-expectations.txt";

/// How the scoreboard says that a wrong result is within the case's own
/// rtol/atol (its `data.json`).
const OWN_BOUNDS: &str = "all within the case's own rtol";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// The generated suite: its case directories and the training-only
/// cases' names. Generated once per test process.
struct Suite {
    cases: Vec<PathBuf>,
    training: BTreeSet<String>,
}

fn suite() -> &'static Suite {
    static SUITE: OnceLock<Suite> = OnceLock::new();
    SUITE.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx-node-suite");
        let start = Instant::now();
        // `make deps` installs the onnx package: its absence is a failure,
        // not a skip.
        let output = Command::new("python3")
            .arg(repo("test/onnx/node_suite.py"))
            .arg(&out)
            .output()
            .unwrap_or_else(|e| panic!("cannot run python3: {e}"));
        assert!(
            output.status.success(),
            "test/onnx/node_suite.py failed (run `make deps`: it installs the onnx package):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "{} ({:.1}s)",
            String::from_utf8_lossy(&output.stdout).trim(),
            start.elapsed().as_secs_f64()
        );
        let cases = scoreboard::find_cases(std::slice::from_ref(&out)).expect("cases");
        let training = std::fs::read_to_string(out.join("TRAINING"))
            .expect("TRAINING")
            .lines()
            .map(str::to_string)
            .collect();
        Suite { cases, training }
    })
}

fn case_names(cases: &[PathBuf]) -> BTreeSet<String> {
    cases
        .iter()
        .filter_map(|c| c.file_name()?.to_str().map(str::to_string))
        .collect()
}

fn totals(what: &str, outcomes: &BTreeMap<String, Outcome>) -> String {
    format!(
        "{what}: {} cases, {}",
        outcomes.len(),
        scoreboard::summary(outcomes)
    )
}

#[test]
fn onnx_node_suite_has_no_regressions() {
    let suite = suite();
    let start = Instant::now();
    let jobs = onnx_scoreboard::jobs();
    let outcomes = onnx_scoreboard::run_in_processes(&suite.cases, false, true);
    let seconds = start.elapsed().as_secs_f64();
    let (training, inference): (BTreeMap<_, _>, BTreeMap<_, _>) = outcomes
        .clone()
        .into_iter()
        .partition(|(name, _)| suite.training.contains(name));
    println!("{}", totals("all node cases", &outcomes));
    println!("{}", totals("not training-only", &inference));
    println!("{}", totals("training-only", &training));
    println!("ran in {seconds:.0} s in {jobs} child processes");
    eprintln!(
        "node suite: {}; {}; {} ({seconds:.0} s, {jobs} child processes)",
        totals("all", &outcomes),
        totals("not training-only", &inference),
        totals("training-only", &training)
    );

    let path = repo(EXPECTATIONS);
    if std::env::var_os("TCC_WRITE_EXPECTATIONS").is_some() {
        let header = format!(
            "# The ONNX backend node suite (test/onnx/node_suite.py writes the cases of the installed onnx\n\
             # package) and what tcc does with them: pass | unsupported: reason | fail: reason.\n\
             # compiler/tests/onnx_node_suite.rs fails when a case does not end as listed (outcome and reason).\n\
             # Regenerate: TCC_WRITE_EXPECTATIONS=1 cargo test -p tcc-compiler --test integration onnx_node_suite\n\
             # {}\n\
             # {}\n",
            totals("all node cases", &outcomes),
            totals("not training-only", &inference),
        );
        // A wrong result within the case's own bounds is listed by that
        // reason alone (the numbers in the rest of the message vary with
        // the device); any other failure keeps its whole message, to be
        // read and explained.
        let listed: BTreeMap<String, Outcome> = outcomes
            .iter()
            .map(|(name, outcome)| {
                let outcome = match outcome {
                    Outcome::Fail(reason) if reason.contains(OWN_BOUNDS) => {
                        Outcome::Fail(reason[reason.find(OWN_BOUNDS).unwrap_or(0)..].to_string())
                    }
                    other => other.clone(),
                };
                (name.clone(), outcome)
            })
            .collect();
        std::fs::write(
            &path,
            scoreboard::render_expectations_with(&header, &listed),
        )
        .expect("write the expectation list");
        println!("wrote {}", path.display());
        return;
    }

    let expected = scoreboard::read_expectations(&path).expect("expectations");
    let mut tally = Tally::new("onnx_node_suite_has_no_regressions");
    let mut problems = scoreboard::regressions(&outcomes, &expected);
    for (name, outcome) in &outcomes {
        let want = expected.get(name).cloned().unwrap_or(Outcome::Pass);
        let mut result = if !scoreboard::matches_expectation(outcome, &want) {
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
        // Training-only cases are refused as such, whatever the list says.
        let refused_as_training =
            matches!(outcome, Outcome::Unsupported(reason) if reason.contains("training op"));
        if suite.training.contains(name) && !refused_as_training {
            let problem = format!(
                "{name} is training-only but ended {}, not with a 'training op' error",
                outcome.render()
            );
            result = CaseResult::Failed(problem.clone());
            problems.push(problem);
        }
        tally.add(name, result);
    }
    tally.report();
    assert!(
        problems.is_empty(),
        "{} case(s) did not end as {EXPECTATIONS} says:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// Every entry of the expectation list names a case of the suite, every
/// entry that is not `pass` names its reason, and a wrong result is never
/// listed without one.
#[test]
fn node_expectations_name_existing_cases_and_reasons() {
    if std::env::var_os("TCC_WRITE_EXPECTATIONS").is_some() {
        // The list is being rewritten by the test above.
        return;
    }
    let expected = scoreboard::read_expectations(&repo(EXPECTATIONS)).expect("expectations");
    let names = case_names(&suite().cases);
    for (name, outcome) in &expected {
        assert!(
            names.contains(name),
            "{EXPECTATIONS} lists {name}, which is no case of the installed onnx package's node suite"
        );
        if let Outcome::Unsupported(reason) | Outcome::Fail(reason) = outcome {
            assert!(!reason.is_empty(), "{EXPECTATIONS}: {name} names no reason");
        }
    }
}

/// The generator's training list is what its op types say: the
/// optimizers and gradients, and the training-mode cases of Dropout and
/// BatchNormalization, and no inference case (the loss functions are
/// imported, so their cases are inference cases).
#[test]
fn training_cases_are_the_training_ops() {
    let suite = suite();
    for name in [
        "test_adam",
        "test_adagrad",
        "test_training_dropout",
        "test_batchnorm_epsilon_training_mode",
    ] {
        assert!(
            suite.training.contains(name),
            "{name} is not listed as training-only"
        );
    }
    for name in [
        "test_dropout_default",
        "test_batchnorm_epsilon",
        "test_sce_mean",
        "test_nllloss_NC",
        "test_softmax_axis_0",
    ] {
        assert!(
            !suite.training.contains(name),
            "{name} is listed as training-only"
        );
    }
    let names = case_names(&suite.cases);
    assert!(suite.training.is_subset(&names));
}
