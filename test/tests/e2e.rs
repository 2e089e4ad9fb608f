//! End-to-end tests: one #[test] per test/models/*.mlir and kernel-tuning
//! target (listed by build.rs: `model_<name>__<target>`, every target's
//! kernels on the test device, or the one a `// TARGET:` header pins). Each
//! compiles the model with tcc for that target, runs every function on
//! deterministic inputs on the OpenCL device, runs the same inputs through
//! the upstream-MLIR reference on the CPU, and compares every output within
//! the model's `// TOLERANCE:`; where test/models/expected/<model>/ holds
//! independently computed outputs (numpy, for the composite ops), both the
//! device's and the reference's outputs are compared with them too.
//!
//! Each model runs in a child process (this test binary, re-executed with
//! a filter for that one test) so that a crash or a hang in the compiler,
//! the runtime or an OpenCL driver fails that model only, and can be listed
//! in test/expected-failures.txt. TCC_E2E_IN_PROCESS=1 runs models in this
//! process instead (for a debugger); TCC_E2E_TIMEOUT (seconds, default 300)
//! bounds a child.
//!
//! There is no skipping: without an OpenCL device every model test fails.

#[path = "../support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};
use support::{CaseResult, Tally};
use tcc_compiler::config::Target;
use tcc_e2e::{ModelSpec, compare, expected_failures, list_models};
use tcc_runtime::{DeviceSelector, Model, Runtime, RuntimeOptions};

/// Set in a child to the model it must run in-process.
const CHILD_ENV: &str = "TCC_E2E_CHILD";
/// Printed by a child whose failure is the environment's (no OpenCL
/// device), not the model's: never an expected failure.
const ENVIRONMENT_MARKER: &str = "TCC-E2E-ENVIRONMENT-ERROR";

macro_rules! model_test {
    ($test:ident, $model:expr, $target:expr) => {
        #[test]
        #[allow(non_snake_case)]
        fn $test() {
            check_model(stringify!($test), $model, $target);
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/models.rs"));

fn runtime() -> Result<Runtime> {
    // No on-disk program cache: every run builds the kernels, so that a
    // kernel the device compiler rejects cannot hide behind a cached binary.
    let options = RuntimeOptions {
        disk_cache: false,
        ..RuntimeOptions::default()
    };
    Runtime::with_options(DeviceSelector::from_flag_or_env(None), options)
        .context("no usable OpenCL device")
}

/// Compiles, runs and compares one model in this process. `Err` is the
/// model's failure report.
fn run_model(name: &str, target: &str, runtime: &Runtime) -> Result<()> {
    let spec = ModelSpec::by_name(name)?;
    spec.tolerance_rule()?;
    let target: Target = target
        .parse()
        .map_err(|e| anyhow!("{}: target {target}: {e}", spec.path.display()))?;
    let fixtures = tcc_e2e::Fixtures::load(name)?;
    let directory = tempfile::tempdir().context("cannot create a temporary directory")?;
    let library = directory.path().join(format!("{name}.so"));
    tcc_compiler::driver::compile::compile_file(&spec.path, target, &library).map_err(|e| {
        anyhow!(
            "tcc failed to compile {} for target {target:?}:\n{e:#}",
            spec.path.display()
        )
    })?;
    let model =
        Model::load(&library).map_err(|e| anyhow!("cannot load the compiled model: {e}"))?;
    let mut session = runtime.session(&model).map_err(|e| {
        anyhow!(
            "cannot build the model's kernels on {}: {e}",
            runtime.device().name
        )
    })?;
    let functions = model.functions().to_vec();
    if functions.is_empty() {
        return Err(anyhow!("the compiled model has no functions"));
    }
    let mut failures = Vec::new();
    for function in &functions {
        let fname = &function.name;
        let inputs = spec.inputs(fname, &function.inputs)?;
        let got = session
            .run(fname, &inputs)
            .map_err(|e| anyhow!("running @{fname} on {} failed: {e}", runtime.device().name))?;
        let want = tcc_compiler::reference::run(&spec.path, fname, &inputs)
            .map_err(|e| anyhow!("the reference run of @{fname} failed: {e:#}"))?;
        spec.check_scale(&want)?;
        if let Some(fixtures) = &fixtures {
            fixtures.check_inputs(fname, &inputs)?;
            let independent = fixtures.outputs(fname, want.len())?;
            for (index, expected) in independent.iter().enumerate() {
                for (who, tensor) in [
                    ("the device", &got.get(index)),
                    ("the reference", &want.get(index)),
                ] {
                    let Some(tensor) = tensor else { continue };
                    if let Err(message) = compare(tensor, expected, spec.tolerance) {
                        failures.push(format!(
                            "@{fname} output {index}: {who} disagrees with the independent expected output ({}): {message}",
                            fixtures.describe(fname, index)
                        ));
                    }
                }
            }
        }
        if got.len() != want.len() {
            failures.push(format!(
                "@{fname}: {} outputs, the reference has {}",
                got.len(),
                want.len()
            ));
            continue;
        }
        for (index, (g, w)) in got.iter().zip(&want).enumerate() {
            if let Err(message) = compare(g, w, spec.tolerance) {
                failures.push(format!(
                    "@{fname} output {index} ({}): {message}",
                    w.type_string()
                ));
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(
            "{name}: wrong results on {} (target {target:?}):\n  {}",
            runtime.device().name,
            failures.join("\n  ")
        ))
    }
}

/// What the child run of a model ended with.
enum Outcome {
    Pass,
    /// The model failed (an error, a mismatch, a crash or a timeout).
    Fail(String),
    /// The environment failed (no OpenCL device): never expected.
    Environment(String),
}

fn in_child(name: &str, target: &str) {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(e) => panic!("{ENVIRONMENT_MARKER}: {e:#}"),
    };
    if let Err(e) = run_model(name, target, &runtime) {
        panic!("{e:#}");
    }
}

fn run_child(test: &str, name: &str) -> Outcome {
    let exe = std::env::current_exe().expect("the test binary's path");
    let log_dir = tempfile::tempdir().expect("a temporary directory");
    let log_path = log_dir.path().join("child.log");
    let log = std::fs::File::create(&log_path).expect("a log file");
    let mut command = Command::new(exe);
    // Each child gets its own program caches (tcc's and PoCL's): children
    // run concurrently, and a model's result must not depend on another
    // process writing the same cache entry at the same moment.
    support::isolate_command(&mut command, log_dir.path());
    let mut child = match command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, test)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return Outcome::Environment(format!("cannot start the child test process: {e}")),
    };
    let limit = Duration::from_secs(
        std::env::var("TCC_E2E_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(300),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                return Outcome::Environment(format!(
                    "cannot wait for the child test process: {e}"
                ));
            }
        }
    };
    // Lossy: a driver may print bytes that are not UTF-8 (a failed
    // read_to_string would leave the output empty).
    let output =
        String::from_utf8_lossy(&std::fs::read(&log_path).unwrap_or_default()).into_owned();
    let ran_one = output.contains("test result: ok. 1 passed");
    let raw_output = output.clone();
    let output = tidy_child_output(&output);
    match status {
        None => Outcome::Fail(format!(
            "{name}: timed out after {} s\n{output}",
            limit.as_secs()
        )),
        Some(status) if status.success() => {
            // A filter that matched nothing also exits 0: make sure it ran.
            if ran_one {
                Outcome::Pass
            } else {
                Outcome::Environment(format!(
                    "the child ran no test (exit 0); its whole output:\n{raw_output}"
                ))
            }
        }
        Some(_) if output.contains(ENVIRONMENT_MARKER) => Outcome::Environment(output),
        Some(status) => {
            use std::os::unix::process::ExitStatusExt as _;
            match status.signal() {
                Some(signal) => Outcome::Fail(format!(
                    "{name}: the test process was killed by signal {signal} (a crash)\n{output}"
                )),
                None => Outcome::Fail(output),
            }
        }
    }
}

/// Drops libtest's chatter from a child's output.
fn tidy_child_output(output: &str) -> String {
    output
        .lines()
        .filter(|l| {
            let l = l.trim();
            !(l.is_empty()
                || l.starts_with("running ")
                || l.starts_with("test result:")
                || l.starts_with("failures:")
                || l.starts_with("note: run with `RUST_BACKTRACE")
                || l.starts_with("---- ")
                || l.starts_with("test model_")
                || l.starts_with("model_")
                || l == "FAILED"
                || (l.starts_with("thread '") && l.contains("panicked at"))
                || l.starts_with("error: test failed"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_model(test: &str, name: &str, target: &str) {
    if std::env::var(CHILD_ENV).as_deref() == Ok(test) {
        return in_child(name, target);
    }
    let outcome = if std::env::var_os("TCC_E2E_IN_PROCESS").is_some() {
        match runtime() {
            Err(e) => Outcome::Environment(format!("{e:#}")),
            Ok(runtime) => match run_model(name, target, &runtime) {
                Ok(()) => Outcome::Pass,
                Err(e) => Outcome::Fail(format!("{e:#}")),
            },
        }
    } else {
        run_child(test, name)
    };
    let expected = expected_failures().expect("test/expected-failures.txt parses");
    let listed = expected
        .get(&format!("{name}@{target}"))
        .or_else(|| expected.get(name));
    match (outcome, listed) {
        (Outcome::Environment(message), _) => {
            panic!("{name} ({target}): cannot run the end-to-end test: {message}")
        }
        (Outcome::Pass, None) => {}
        (Outcome::Pass, Some(reason)) => panic!(
            "{name} ({target}) now passes but is listed in test/expected-failures.txt ({reason}): remove it from the list"
        ),
        (Outcome::Fail(message), None) => panic!("{message}"),
        (Outcome::Fail(message), Some(reason)) => {
            eprintln!("{name} ({target}): expected failure ({reason}):\n{message}");
            // Not a pass: the summary counts it as skipped, with the reason.
            let mut tally = Tally::new(test);
            tally.add(
                &format!("{name}@{target}"),
                CaseResult::Skipped(format!("expected failure: {reason}")),
            );
            tally.report();
        }
    }
}

#[test]
fn at_least_twenty_models() {
    let models = list_models().unwrap();
    assert!(
        models.len() >= 20,
        "test/models holds {} models; the suite needs at least 20",
        models.len()
    );
}

#[test]
fn expected_failures_name_existing_models() {
    let models: Vec<String> = list_models()
        .unwrap()
        .iter()
        .filter_map(|p| p.file_stem()?.to_str().map(str::to_string))
        .collect();
    for name in expected_failures().unwrap().keys() {
        assert!(
            models.contains(name),
            "test/expected-failures.txt lists {name}, which is not in test/models"
        );
    }
}

#[test]
fn every_model_declares_a_tolerance() {
    for path in list_models().unwrap() {
        ModelSpec::load(&path).unwrap_or_else(|e| panic!("{e:#}"));
    }
}

/// Every model's tolerance is within the suite's rule (test/README.md,
/// "Tolerances"), or its header says why not.
#[test]
fn every_tolerance_is_within_the_rule() {
    let violations: Vec<String> = list_models()
        .unwrap()
        .iter()
        .filter_map(|path| {
            let spec = ModelSpec::load(path).unwrap_or_else(|e| panic!("{e:#}"));
            spec.tolerance_rule().err().map(|e| format!("{e:#}"))
        })
        .collect();
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// Without an OpenCL device the suite fails instead of passing vacuously.
#[test]
fn opencl_device_is_available() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let runtime = runtime().unwrap_or_else(|e| {
        panic!("{e:#}: the end-to-end suite needs an OpenCL device (PoCL on CPUs)")
    });
    eprintln!("device: {}", runtime.device().summary());
}

/// The composite ops the reference takes from tcc's own
/// tcc-decompose-composites, each checked against independent (numpy)
/// outputs in composites.mlir.
const INDEPENDENTLY_CHECKED_COMPOSITES: &[&str] = &[
    "tcc.softmax",
    "tcc.log_softmax",
    "tcc.layer_norm",
    "tcc.gelu",
    "tcc.silu",
    "tcc.attention",
];

/// Every tcc composite op any model uses has independent expected outputs:
/// composites.mlir uses it (with both gelu forms) and has fixtures.
#[test]
fn every_composite_op_has_an_independent_reference() {
    let composites = std::fs::read_to_string(tcc_e2e::models_dir().join("composites.mlir"))
        .expect("test/models/composites.mlir");
    for op in INDEPENDENTLY_CHECKED_COMPOSITES {
        assert!(
            composites.contains(&format!("= {op} ")),
            "composites.mlir does not use {op}"
        );
    }
    assert!(composites.contains("approximate = \"tanh\""));
    assert!(
        tcc_e2e::Fixtures::load("composites")
            .expect("fixtures")
            .is_some(),
        "test/models/expected/composites is missing"
    );
    for path in list_models().unwrap() {
        let text = std::fs::read_to_string(&path).unwrap();
        // Comments may name ops the model does not use.
        let code: String = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        // An op's use is `%r = tcc.op ...`: the word after an `=` (attributes
        // such as `tcc.name = "x"` come before one).
        let words: Vec<&str> = code
            .split(|c: char| c.is_whitespace() || c == '(' || c == '"')
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            if pair[0] != "=" {
                continue;
            }
            if let Some(rest) = pair[1].strip_prefix("tcc.") {
                let op: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let op = format!("tcc.{op}");
                assert!(
                    INDEPENDENTLY_CHECKED_COMPOSITES.contains(&op.as_str()),
                    "{} uses {op}, which has no independent expected outputs (add it to composites.mlir and test/models/expected/gen.py)",
                    path.display()
                );
            }
        }
    }
}
