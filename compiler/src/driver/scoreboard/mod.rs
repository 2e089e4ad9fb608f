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
    /// The importer (or the input phase) rejects the model: an op, type or
    /// feature tcc does not support.
    Unsupported(String),
    /// Anything else: a compile error, a run error, wrong numbers.
    Fail(String),
}

impl Outcome {
    pub fn render(&self) -> String {
        match self {
            Outcome::Pass => "pass".into(),
            Outcome::Unsupported(r) => format!("unsupported: {r}"),
            Outcome::Fail(r) => format!("fail: {r}"),
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        let text = text.trim();
        if text == "pass" {
            return Some(Outcome::Pass);
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

/// Reads an expectation list: `name: outcome` lines, `#` comments.
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
        let outcome = Outcome::parse(outcome).ok_or_else(|| {
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

/// Runs every case and prints the summary; returns the outcomes by name.
pub fn run_cases(
    cases: &[PathBuf],
    device: Option<&str>,
    verbose: bool,
) -> Result<BTreeMap<String, Outcome>> {
    let runtime = Runtime::new(DeviceSelector::from_flag_or_env(device))?;
    let mut outcomes = BTreeMap::new();
    for case in cases {
        let name = case_name(case);
        let start = Instant::now();
        let outcome = run_case(case, &runtime);
        if verbose || outcome != Outcome::Pass {
            eprintln!(
                "{name}: {} ({:.1}s)",
                outcome.render(),
                start.elapsed().as_secs_f64()
            );
        }
        outcomes.insert(name, outcome);
    }
    Ok(outcomes)
}

/// As [`run_cases`], on `jobs` worker threads (at least 1), each with its
/// own OpenCL runtime (a runtime builds one program at a time; no disk
/// program cache, see below) and MLIR contexts: most backend cases are tiny, so their time is the per-case
/// compilation and kernel builds, which run in parallel. A case that
/// panics ends as a failure naming the panic, not the whole run.
pub fn run_cases_parallel(
    cases: &[PathBuf],
    device: Option<&str>,
    verbose: bool,
    jobs: usize,
) -> Result<BTreeMap<String, Outcome>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let jobs = jobs.clamp(1, cases.len().max(1));
    if jobs == 1 {
        return run_cases(cases, device, verbose);
    }
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    // Without the on-disk program cache: on PoCL a runtime
                    // keeps each entry's key locked until it writes the
                    // entry when dropped, so workers building the same
                    // program would wait on each other's locks. Each
                    // worker's in-memory cache still shares its builds.
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
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                run_case(case, &runtime)
                            }))
                            .unwrap_or_else(|panic| {
                                let message = panic
                                    .downcast_ref::<String>()
                                    .map(String::as_str)
                                    .or_else(|| panic.downcast_ref::<&str>().copied())
                                    .unwrap_or("(no message)");
                                Outcome::Fail(format!("panic: {message}"))
                            });
                        if verbose || outcome != Outcome::Pass {
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
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow!("a scoreboard worker thread panicked"))??;
        }
        Ok(())
    })?;
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
            let hint = if *outcome == Outcome::Pass {
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
    let passed = outcomes.values().filter(|o| **o == Outcome::Pass).count();
    let unsupported = outcomes
        .values()
        .filter(|o| matches!(o, Outcome::Unsupported(_)))
        .count();
    let failed = outcomes.len() - passed - unsupported;
    format!("{passed} passed, {failed} failed, {unsupported} unsupported")
}

pub fn render_expectations(outcomes: &BTreeMap<String, Outcome>) -> String {
    render_expectations_with(
        "# ONNX backend test cases (onnx package: backend/test/data/pytorch-converted and pytorch-operator)\n\
         # and what tcc does with them: pass | unsupported: reason | fail: reason.\n\
         # `tcc onnx-test DIRS --expectations test/onnx/expectations.txt` fails when a case does not end as listed (outcome and reason).\n",
        outcomes,
    )
}

/// An expectation list of `outcomes` after the comment lines `header`.
pub fn render_expectations_with(header: &str, outcomes: &BTreeMap<String, Outcome>) -> String {
    let mut text = String::from(header);
    for (name, outcome) in outcomes {
        text.push_str(&format!("{name} {}\n", outcome.render()));
    }
    text
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
