//! `tcc onnx-test DIR...`: runs ONNX backend test cases — directories
//! with `model.onnx` and `test_data_set_*/{input,output}_*.pb`, as in the
//! onnx package's `backend/test/data/pytorch-{converted,operator}` — through
//! import, compilation and the OpenCL runtime, compares the outputs, and
//! reports `N passed, M failed, K unsupported`. With `--expectations` a
//! case that does worse than its entry (`pass`, `unsupported: ...`,
//! `fail: ...`) is a regression and the command fails.
//!
//! `tolerance.rs` holds the comparison bounds, `case.rs` one case's import,
//! compilation, run and comparison.

mod case;
mod tolerance;

use case::case_name;
pub use case::{prepare_cases, run_case};
pub use tolerance::{
    ATOL_PER_SCALE, CaseTolerance, EXACT_OPS, RTOL, accumulation_length, case_tolerance,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime, RuntimeOptions};

use crate::config::Target;
use crate::driver::pipeline::compile_module_to_kernels;
use crate::driver::run::target_for;
use crate::driver::session::Session;
use crate::front::onnx::proto::{OptionalProto, SequenceProto, TensorProto};
use crate::front::onnx::tensor::Const;
use crate::front::onnx::{self, DType, ImportOptions, Structure, tensor};

#[derive(Args, Debug)]
pub struct ScoreboardArgs {
    /// Test-case directories, or directories of them (e.g. .../onnx/backend/test/data/pytorch-converted).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Expectation list (case → pass | unsupported: reason | fail: reason); a case doing worse is a regression.
    #[arg(long)]
    pub expectations: Option<PathBuf>,
    /// Write the observed results in the expectation-list format to this file.
    #[arg(long)]
    pub write_expectations: Option<PathBuf>,
    /// Only cases whose name contains this.
    #[arg(long)]
    pub filter: Option<String>,
    /// OpenCL device (index or name substring; default TCC_DEVICE, else first GPU, else first CPU).
    #[arg(long)]
    pub device: Option<String>,
    /// Print every case, not only failures.
    #[arg(short, long)]
    pub verbose: bool,
    /// Run this many cases at once (worker threads, each with its own OpenCL runtime).
    #[arg(short, long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// Run nothing: compile every case for --target into this directory, with its inputs and expected outputs as .npy, for a machine without the compiler (`scripts/onnx/onnx-scoreboard-device.sh` runs them there).
    #[arg(long, value_name = "DIR", requires = "target")]
    pub prepare: Option<PathBuf>,
    /// The target --prepare compiles for.
    #[arg(long, value_parser = |s: &str| s.parse::<Target>())]
    pub target: Option<Target>,
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// It passes with these graph inputs given their values at compile
    /// time (`--input-value`, the one value every data set gives them):
    /// inputs the import needs to know (a shape, axes, pads, sizes, Range
    /// bounds, a trip count), which tcc does not compute at run time.
    PassWithValues(Vec<String>),
    /// The importer (or the input phase) rejects the model: an op, type or
    /// feature tcc does not support.
    Unsupported(String),
    /// Anything else: a compile error, a run error, wrong numbers.
    Fail(String),
}

/// How [`Outcome::PassWithValues`] is written, before the inputs' names.
const PASS_WITH_VALUES: &str = "pass with --input-value ";

impl Outcome {
    /// Whether the case passed (with or without inputs given at compile
    /// time).
    pub fn is_pass(&self) -> bool {
        matches!(self, Outcome::Pass | Outcome::PassWithValues(_))
    }

    pub fn render(&self) -> String {
        match self {
            Outcome::Pass => "pass".into(),
            Outcome::PassWithValues(names) => {
                format!("{PASS_WITH_VALUES}{}", names.join(","))
            }
            Outcome::Unsupported(r) => format!("unsupported: {r}"),
            Outcome::Fail(r) => format!("fail: {r}"),
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        let text = text.trim();
        if text == "pass" {
            return Some(Outcome::Pass);
        }
        if let Some(names) = text.strip_prefix(PASS_WITH_VALUES) {
            return Some(Outcome::PassWithValues(
                names.split(',').map(|n| n.trim().to_string()).collect(),
            ));
        }
        if let Some(r) = text.strip_prefix("unsupported:") {
            return Some(Outcome::Unsupported(r.trim().to_string()));
        }
        text.strip_prefix("fail:")
            .map(|r| Outcome::Fail(r.trim().to_string()))
    }
}

/// The case directories under `dirs` (a directory with `model.onnx` is a
/// case; otherwise its subdirectories are searched).
pub fn find_cases(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut cases = Vec::new();
    for dir in dirs {
        if dir.join("model.onnx").is_file() {
            cases.push(dir.clone());
            continue;
        }
        let entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.join("model.onnx").is_file())
            .collect();
        if found.is_empty() {
            bail!(
                "{} has no test cases (directories with model.onnx)",
                dir.display()
            );
        }
        found.sort();
        cases.extend(found);
    }
    Ok(cases)
}

/// Reads an expectation list: `name outcome` lines (the outcome as
/// [`render_expectations_with`] escapes it), `#` comments.
pub fn read_expectations(path: &Path) -> Result<BTreeMap<String, Outcome>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, outcome) = line
            .split_once(' ')
            .ok_or_else(|| anyhow!("{}:{}: expected 'case outcome'", path.display(), number + 1))?;
        let outcome = Outcome::parse(&unescape(outcome)).ok_or_else(|| {
            anyhow!(
                "{}:{}: unknown outcome '{outcome}'",
                path.display(),
                number + 1
            )
        })?;
        out.insert(name.to_string(), outcome);
    }
    Ok(out)
}

/// Runs every case on `jobs` worker threads (at least 1; one runs on the
/// calling thread), each with its own OpenCL runtime and MLIR contexts, and
/// returns the outcomes by name. Most backend cases are tiny, so their
/// time is the per-case compilation and kernel builds; note that PoCL
/// builds the programs of one process one at a time (a process-wide
/// compiler lock), so threads overlap tcc's own work and the runs, not the
/// kernel builds: to use several cores for those, run shards of the cases
/// in several processes (`tcc onnx-test -j1 --write-expectations FILE
/// CASE...`, as `compiler/tests/onnx_node_suite.rs` does). The runtimes
/// have no on-disk program cache: on PoCL, writing an entry asks for the
/// program's binary, which builds every kernel a second time, and a
/// runtime keeps each entry's key locked until it writes the entry when
/// dropped, so workers building the same program would wait on each
/// other; each runtime's in-memory cache still shares its builds. A case
/// that panics ends as a failure naming the panic, not the whole run.
pub fn run_cases_parallel(
    cases: &[PathBuf],
    device: Option<&str>,
    verbose: bool,
    jobs: usize,
) -> Result<BTreeMap<String, Outcome>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let jobs = jobs.clamp(1, cases.len().max(1));
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(BTreeMap::new());
    let worker = || -> Result<()> {
        let runtime = Runtime::with_options(
            DeviceSelector::from_flag_or_env(device),
            RuntimeOptions {
                disk_cache: false,
                ..RuntimeOptions::default()
            },
        )?;
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(case) = cases.get(index) else {
                return Ok(());
            };
            let name = case_name(case);
            let start = Instant::now();
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(case, &runtime)))
                    .unwrap_or_else(|panic| {
                        let message = panic
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| panic.downcast_ref::<&str>().copied())
                            .unwrap_or("(no message)");
                        Outcome::Fail(format!("panic: {message}"))
                    });
            if verbose || !outcome.is_pass() {
                eprintln!(
                    "{name}: {} ({:.1}s)",
                    outcome.render(),
                    start.elapsed().as_secs_f64()
                );
            }
            outcomes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name, outcome);
        }
    };
    if jobs == 1 {
        worker()?;
    } else {
        std::thread::scope(|scope| -> Result<()> {
            let workers: Vec<_> = (0..jobs).map(|_| scope.spawn(&worker)).collect();
            for worker in workers {
                worker
                    .join()
                    .map_err(|_| anyhow!("a scoreboard worker thread panicked"))??;
            }
            Ok(())
        })?;
    }
    Ok(outcomes
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// Whether `outcome` is what `expected` says: `pass` must pass;
/// `unsupported: R` and `fail: R` must end the same way with a reason that
/// contains `R` (so an expectation names its reason, and a different
/// failure, or a pass, does not match).
pub fn matches_expectation(outcome: &Outcome, expected: &Outcome) -> bool {
    match (outcome, expected) {
        (Outcome::Pass, Outcome::Pass) => true,
        (Outcome::PassWithValues(got), Outcome::PassWithValues(want)) => got == want,
        (Outcome::Unsupported(got), Outcome::Unsupported(want))
        | (Outcome::Fail(got), Outcome::Fail(want)) => {
            !want.is_empty() && got.contains(want.as_str())
        }
        _ => false,
    }
}

/// Cases that did not end as expected (a case without an entry must pass),
/// including expected failures that now pass (the list must be updated).
pub fn regressions(
    outcomes: &BTreeMap<String, Outcome>,
    expected: &BTreeMap<String, Outcome>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, outcome) in outcomes {
        let want = expected.get(name).cloned().unwrap_or(Outcome::Pass);
        if !matches_expectation(outcome, &want) {
            let hint = if outcome.is_pass() {
                " (it now passes: update the expectation)"
            } else {
                ""
            };
            out.push(format!(
                "{name}: expected {}, got {}{hint}",
                want.render(),
                outcome.render()
            ));
        }
    }
    out
}

pub fn summary(outcomes: &BTreeMap<String, Outcome>) -> String {
    let passed = outcomes.values().filter(|o| o.is_pass()).count();
    let with_values = outcomes
        .values()
        .filter(|o| matches!(o, Outcome::PassWithValues(_)))
        .count();
    let unsupported = outcomes
        .values()
        .filter(|o| matches!(o, Outcome::Unsupported(_)))
        .count();
    let failed = outcomes.len() - passed - unsupported;
    let with_values = match with_values {
        0 => String::new(),
        n => format!(" ({n} of them with inputs given at compile time)"),
    };
    format!("{passed} passed{with_values}, {failed} failed, {unsupported} unsupported")
}

pub fn render_expectations(outcomes: &BTreeMap<String, Outcome>) -> String {
    render_expectations_with(
        "# ONNX backend test cases (onnx package: backend/test/data/pytorch-converted and pytorch-operator)\n\
         # and what tcc does with them: pass | unsupported: reason | fail: reason.\n\
         # `tcc onnx-test DIRS --expectations test/onnx/expectations.txt` fails when a case does not end as listed (outcome and reason).\n",
        outcomes,
    )
}

/// An expectation list of `outcomes` after the comment lines `header`,
/// one line per case: a reason's line breaks and backslashes are written
/// as `\n`, `\r` and `\\`, so that [`read_expectations`] reads back
/// exactly the outcomes written (a panic's message, say, spans lines).
pub fn render_expectations_with(header: &str, outcomes: &BTreeMap<String, Outcome>) -> String {
    let mut text = String::from(header);
    for (name, outcome) in outcomes {
        text.push_str(&format!("{name} {}\n", escape(&outcome.render())));
    }
    text
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

pub fn run(args: &ScoreboardArgs) -> Result<()> {
    let mut cases = find_cases(&args.dirs)?;
    if let Some(filter) = &args.filter {
        cases.retain(|c| {
            c.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(filter.as_str()))
        });
    }
    if let Some(out) = &args.prepare {
        let target = args.target.expect("clap requires --target with --prepare");
        let ended = prepare_cases(&cases, target, out, args.verbose)?;
        return crate::driver::write_stdout(&format!(
            "{} of {} cases prepared in {} for --target={target}; {} ended before running (listed in OUTCOMES)\n",
            cases.len() - ended.len(),
            cases.len(),
            out.display(),
            ended.len()
        ));
    }
    let outcomes = run_cases_parallel(
        &cases,
        args.device.as_deref(),
        args.verbose,
        args.jobs as usize,
    )?;
    if let Some(path) = &args.write_expectations {
        crate::driver::write_atomically(path, render_expectations(&outcomes).as_bytes())?;
    }
    crate::driver::write_stdout(&format!(
        "{} (of {} cases; outputs compared bit for bit for exact ops, else with rtol {RTOL} and an atol scaled by the output and the longest accumulation)\n",
        summary(&outcomes),
        outcomes.len()
    ))?;
    if let Some(path) = &args.expectations {
        let expected = read_expectations(path)?;
        let regressions = regressions(&outcomes, &expected);
        if !regressions.is_empty() {
            bail!(
                "{} regression(s) against {}:\n  {}",
                regressions.len(),
                path.display(),
                regressions.join("\n  ")
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A written list reads back as exactly the outcomes written, whatever
    /// the reasons hold (line breaks, backslashes, a trailing backslash):
    /// `tcc onnx-test --write-expectations` is how the test suites collect
    /// the outcomes of child processes.
    #[test]
    fn written_outcomes_read_back_unchanged() {
        let outcomes: BTreeMap<String, Outcome> = [
            ("a", Outcome::Pass),
            (
                "a2",
                Outcome::PassWithValues(vec!["start".into(), "limit".into()]),
            ),
            (
                "b",
                Outcome::Fail(
                    "panic: assertion `left == right` failed\n  left: 1\n right: 2".into(),
                ),
            ),
            (
                "c",
                Outcome::Unsupported(r"op Foo at C:\path\n (not a break)".into()),
            ),
            (
                "d",
                Outcome::Fail("carriage\r\nreturn, backslash at the end \\".into()),
            ),
        ]
        .into_iter()
        .map(|(name, outcome)| (name.to_string(), outcome))
        .collect();
        let text = render_expectations_with("# header\n", &outcomes);
        assert_eq!(text.lines().count(), 1 + outcomes.len(), "{text}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.txt");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_expectations(&path).unwrap(), outcomes);
    }

    /// A pass with inputs given at compile time is a pass, counted apart,
    /// and matches only an expectation that gives the same inputs.
    #[test]
    fn passes_with_given_inputs_count_apart() {
        let given = Outcome::PassWithValues(vec!["axes".into()]);
        assert!(given.is_pass());
        assert_eq!(given.render(), "pass with --input-value axes");
        assert_eq!(Outcome::parse(&given.render()), Some(given.clone()));
        assert!(matches_expectation(&given, &given));
        assert!(!matches_expectation(&given, &Outcome::Pass));
        assert!(!matches_expectation(&Outcome::Pass, &given));
        assert!(!matches_expectation(
            &given,
            &Outcome::PassWithValues(vec!["shape".into()])
        ));
        let outcomes: BTreeMap<String, Outcome> = [
            ("a".to_string(), Outcome::Pass),
            ("b".to_string(), given),
            ("c".to_string(), Outcome::Fail("x".into())),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            summary(&outcomes),
            "2 passed (1 of them with inputs given at compile time), 1 failed, 0 unsupported"
        );
    }
}
