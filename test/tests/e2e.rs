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
//! Each model runs in a worker child process (this test binary, re-executed
//! with a filter for one model test and `TCC_E2E_WORKER` set), which runs
//! the models the parent's tests send it one after another on one OpenCL
//! runtime, so that a crash or a hang in the compiler, the runtime or an
//! OpenCL driver fails the model it happened in only (the worker is
//! replaced; so is one whose model failed), and can be listed in
//! test/expected-failures.txt. TCC_E2E_IN_PROCESS=1 runs models in this
//! process instead (for a debugger); TCC_E2E_TIMEOUT (seconds, default
//! 300) bounds a model.
//!
//! There is no skipping: without an OpenCL device every model test fails.

#[path = "../support/mod.rs"]
mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};
use support::{CaseResult, Tally};
use tcc_compiler::config::Target;
use tcc_e2e::{ModelSpec, compare, compare_outputs, expected_failures, list_models};
use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime, RuntimeOptions};

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

/// The upstream-MLIR reference outputs of `function` of the model at
/// `path` on `inputs`. They do not depend on the target, so a worker that
/// runs the same model for another target with the same inputs reuses
/// them (the reference compiles and runs the model on the CPU each time).
fn reference(
    path: &std::path::Path,
    function: &str,
    inputs: &[HostTensor],
) -> Result<Vec<HostTensor>> {
    type Runs = Vec<(std::path::PathBuf, String, Vec<HostTensor>, Vec<HostTensor>)>;
    static RUNS: std::sync::Mutex<Runs> = std::sync::Mutex::new(Vec::new());
    let runs = || {
        RUNS.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some((.., outputs)) = runs()
        .iter()
        .find(|(p, f, i, _)| p == path && f == function && i == inputs)
    {
        return Ok(outputs.clone());
    }
    let outputs = tcc_compiler::reference::run(path, function, inputs)?;
    let mut runs = runs();
    // Only the last few models are kept: a model's targets run close together.
    if runs.len() >= 16 {
        runs.remove(0);
    }
    runs.push((
        path.to_path_buf(),
        function.to_string(),
        inputs.to_vec(),
        outputs.clone(),
    ));
    Ok(outputs)
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
        let want = reference(&spec.path, fname, &inputs)
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
        compare_outputs(fname, &got, &want, spec.tolerance, &mut failures);
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

/// Set in a worker child: it serves models read from its stdin.
const WORKER_ENV: &str = "TCC_E2E_WORKER";
/// Ends a worker's output for one model: `TCC-E2E-END <status>`.
const END_MARKER: &str = "TCC-E2E-END";
/// Models one worker runs before the next takes over (bounds how much
/// one process accumulates: loaded libraries, built programs).
const MODELS_PER_WORKER: usize = 24;

/// A worker child's loop: one model per stdin line (`NAME TARGET`), its
/// output (the compiler's, the driver's, the failure report) on stdout
/// and stderr, which the parent reads from one pipe, then an end line.
/// One OpenCL runtime serves them all: its set-up (PoCL loads its kernel
/// library, about 0.7 s of CPU) and the process start were most of a
/// small model's cost when every model had a process of its own.
fn serve() {
    unsafe extern "C" {
        fn fflush(stream: *mut std::ffi::c_void) -> i32;
    }
    // Ends libtest's `test NAME ... ` line, so that the first model's
    // output starts a line of its own.
    println!();
    let runtime = runtime();
    let stdin = std::io::stdin();
    let mut line = String::new();
    while {
        line.clear();
        stdin.read_line(&mut line).unwrap_or(0) > 0
    } {
        let mut words = line.split_whitespace();
        let (Some(name), Some(target)) = (words.next(), words.next()) else {
            continue;
        };
        let status = match &runtime {
            Err(e) => {
                eprintln!("{ENVIRONMENT_MARKER}: {e:#}");
                "fail"
            }
            Ok(runtime) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_model(name, target, runtime)
            })) {
                Ok(Ok(())) => "ok",
                Ok(Err(e)) => {
                    eprintln!("{e:#}");
                    "fail"
                }
                // A panic may leave the runtime in any state: this worker
                // ends after reporting it.
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)");
                    eprintln!("{name} ({target}): panic: {message}");
                    "panic"
                }
            },
        };
        let _ = std::io::stdout().flush();
        // SAFETY: fflush(NULL) flushes every C stdio stream (a driver's).
        unsafe { fflush(std::ptr::null_mut()) };
        println!("{END_MARKER} {status}");
        let _ = std::io::stdout().flush();
        if status == "panic" {
            std::process::exit(0);
        }
    }
}

/// A worker child and the lines of its output.
struct Worker {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    served: usize,
    _caches: tempfile::TempDir,
}

/// The idle workers; a test takes one (or starts one) and gives it back.
static IDLE: std::sync::Mutex<Vec<Worker>> = std::sync::Mutex::new(Vec::new());

/// Ends the idle workers when this process exits (an `atexit` handler,
/// registered with the first worker): each reads the end of its input,
/// exits, and is waited for, and its caches are removed.
extern "C" fn end_idle_workers() {
    let workers = std::mem::take(
        &mut *IDLE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for mut worker in workers {
        drop(worker.stdin);
        let _ = worker.child.wait();
    }
}

/// Starts a worker: this test binary, re-executed with a filter for one
/// model test (`test`), which serves models instead of running its own.
fn start_worker(test: &str) -> std::io::Result<Worker> {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        unsafe extern "C" {
            fn atexit(callback: extern "C" fn()) -> i32;
        }
        // SAFETY: registers a plain function, run once at exit.
        unsafe { atexit(end_idle_workers) };
    });
    let exe = std::env::current_exe()?;
    // Under this process's own cache directory (test/support), which is
    // removed when it exits: workers still idle then are never dropped.
    let caches = match support::isolated_cache_dir()
        .as_deref()
        .and_then(std::path::Path::parent)
    {
        Some(root) => tempfile::tempdir_in(root)?,
        None => tempfile::tempdir()?,
    };
    let (reader, writer) = std::io::pipe()?;
    let mut command = Command::new(exe);
    // Each worker gets its own program caches (tcc's and PoCL's): workers
    // run concurrently, and a model's result must not depend on another
    // process writing the same cache entry at the same moment.
    support::isolate_command(&mut command, caches.path());
    let mut child = command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(WORKER_ENV, "1")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        // The pipe's write ends now belong to the child only (the Command
        // holding them is dropped below), so the reader sees EOF when the
        // child dies.
        .spawn()?;
    drop(command);
    let stdin = child.stdin.take().expect("piped stdin");
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        let mut reader = std::io::BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                // Lossy: a driver may print bytes that are not UTF-8.
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line).trim_end().to_string();
                    if send.send(text).is_err() {
                        return;
                    }
                }
            }
        }
    });
    Ok(Worker {
        child,
        stdin,
        lines,
        served: 0,
        _caches: caches,
    })
}

/// Runs one model in a worker child, so that a crash or a hang fails this
/// model only (the worker is then replaced).
fn run_in_worker(test: &str, name: &str, target: &str) -> Outcome {
    let idle = IDLE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .pop();
    let mut worker = match idle {
        Some(worker) => worker,
        None => match start_worker(test) {
            Ok(worker) => worker,
            Err(e) => {
                return Outcome::Environment(format!("cannot start a worker test process: {e}"));
            }
        },
    };
    if let Err(e) = writeln!(worker.stdin, "{name} {target}").and_then(|()| worker.stdin.flush()) {
        let _ = worker.child.kill();
        let _ = worker.child.wait();
        return Outcome::Environment(format!("cannot send the model to a worker: {e}"));
    }
    let limit = Duration::from_secs(
        std::env::var("TCC_E2E_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(300),
    );
    let start = Instant::now();
    let mut output = Vec::new();
    let end = loop {
        let left = limit.saturating_sub(start.elapsed());
        match worker.lines.recv_timeout(left) {
            // The end line may follow other output on its line (libtest's
            // `test NAME ... ` before the first model).
            Ok(line) => match line.find(END_MARKER) {
                Some(at) => {
                    output.push(line[..at].to_string());
                    break Some(line[at + END_MARKER.len()..].trim().to_string());
                }
                None => output.push(line),
            },
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = worker.child.kill();
                let _ = worker.child.wait();
                return Outcome::Fail(format!(
                    "{name}: timed out after {} s\n{}",
                    limit.as_secs(),
                    tidy_child_output(&output.join("\n"))
                ));
            }
            // The worker died with this model: a crash.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
        }
    };
    let output = output.join("\n");
    let tidy = tidy_child_output(&output);
    match end.as_deref() {
        Some("ok") => {
            worker.served += 1;
            if worker.served < MODELS_PER_WORKER {
                IDLE.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(worker);
            } else {
                drop(worker.stdin);
                let _ = worker.child.wait();
            }
            Outcome::Pass
        }
        Some(status) => {
            // A failed model may have left the runtime in any state: the
            // worker ends, and the next model gets a fresh one.
            drop(worker.stdin);
            let _ = worker.child.wait();
            if output.contains(ENVIRONMENT_MARKER) {
                Outcome::Environment(tidy)
            } else if status == "fail" || status == "panic" {
                Outcome::Fail(tidy)
            } else {
                Outcome::Environment(format!("a worker ended a model with '{status}':\n{output}"))
            }
        }
        None => {
            use std::os::unix::process::ExitStatusExt as _;
            let status = worker.child.wait();
            match status.as_ref().ok().and_then(|s| s.signal()) {
                Some(signal) => Outcome::Fail(format!(
                    "{name}: the test process was killed by signal {signal} (a crash)\n{tidy}"
                )),
                None if output.contains(ENVIRONMENT_MARKER) => Outcome::Environment(tidy),
                None => Outcome::Fail(format!(
                    "{name}: the test process exited ({status:?}) while running the model\n{tidy}"
                )),
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
    if std::env::var_os(WORKER_ENV).is_some() {
        return serve();
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
        run_in_worker(test, name, target)
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
    if std::env::var_os(WORKER_ENV).is_some() {
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
