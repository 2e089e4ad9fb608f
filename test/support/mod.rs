//! Support shared by tcc's integration tests (included with
//! `#[path = ".../test/support/mod.rs"] mod support;`, so that it needs no
//! crate of its own):
//!
//! - **tallies**: a test that runs many cases (the lit suite, the ONNX
//!   scoreboard, an e2e model's expected failure) reports each case to
//!   `scripts/summarize-tests.sh`, which counts the cases instead of the one
//!   `#[test]` (see docs/testing.md);
//! - **caches**: every test process that includes this module gets its own
//!   tcc and PoCL program caches under a fresh temporary directory (set up
//!   before `main`), never the user's `~/.cache`; [`isolate_command`] gives
//!   a child process caches of its own.

#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The prefix of the lines `scripts/summarize-tests.sh` reads.
pub const TALLY_PREFIX: &str = "TCC-TALLY";

/// What happened to one case of a multi-case test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseResult {
    Passed,
    Failed(String),
    /// Not run or not counted as a pass, with the reason (unsupported, an
    /// expected failure).
    Skipped(String),
}

/// The cases of one `#[test]`, reported when [`Tally::report`] is called.
pub struct Tally {
    test: String,
    cases: Vec<(String, CaseResult)>,
}

impl Tally {
    /// `test` is the `#[test]` function's name, as libtest prints it.
    pub fn new(test: &str) -> Self {
        Tally {
            test: test.to_string(),
            cases: Vec::new(),
        }
    }

    pub fn add(&mut self, case: &str, result: CaseResult) {
        self.cases.push((case.to_string(), result));
    }

    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for (_, result) in &self.cases {
            match result {
                CaseResult::Passed => counts.0 += 1,
                CaseResult::Failed(_) => counts.1 += 1,
                CaseResult::Skipped(_) => counts.2 += 1,
            }
        }
        counts
    }

    /// Writes the tally to the process's real stderr (not libtest's
    /// captured output, so that it reaches the log of a passing test too):
    /// one `TCC-TALLY <test> <passed> <failed> <skipped>` line, then one
    /// `TCC-TALLY-SKIP <test> <case>: <reason>` or `TCC-TALLY-FAIL ...`
    /// line per case that did not pass. Each line is one write, so lines of
    /// tests running in parallel do not interleave.
    pub fn report(&self) {
        let (passed, failed, skipped) = self.counts();
        let mut lines = vec![format!(
            "{TALLY_PREFIX} {} {passed} {failed} {skipped}\n",
            self.test
        )];
        for (case, result) in &self.cases {
            let (kind, reason) = match result {
                CaseResult::Passed => continue,
                CaseResult::Failed(reason) => ("FAIL", reason),
                CaseResult::Skipped(reason) => ("SKIP", reason),
            };
            let reason = reason.lines().next().unwrap_or("").trim();
            lines.push(format!(
                "{TALLY_PREFIX}-{kind} {} {case}: {reason}\n",
                self.test
            ));
        }
        let mut stderr = std::io::stderr().lock();
        for line in lines {
            let _ = stderr.write_all(line.as_bytes());
        }
        let _ = stderr.flush();
    }
}

/// Set in the environment of a process whose caches are already its own
/// (by [`isolate_command`] or by this module in a parent test process).
const ISOLATED_ENV: &str = "TCC_TEST_CACHES_ISOLATED";

/// This test process's cache directory: `TCC_CACHE_DIR`, `POCL_CACHE_DIR`
/// and `XDG_CACHE_HOME` point into it for the process and every process it
/// starts. Set before `main` (below), so before any test thread or OpenCL
/// runtime exists; PoCL reads its cache directory once per process, so
/// in-process OpenCL shares this directory per test binary, and child
/// processes get their own through [`isolate_command`].
pub fn isolated_cache_dir() -> Option<PathBuf> {
    std::env::var_os("TCC_CACHE_DIR").map(PathBuf::from)
}

/// Runs before `main` in every test binary that includes this module
/// (an ELF constructor: the process is still single-threaded, so setting
/// the environment is sound).
extern "C" fn isolate_caches_before_main() {
    if std::env::var_os(ISOLATED_ENV).is_some() {
        return;
    }
    // `make test` points TCC_TEST_CACHE_ROOT at target/test-caches (and
    // empties it first); elsewhere the system's temporary directory, removed
    // again when the process exits.
    let root = std::env::var_os("TCC_TEST_CACHE_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = root.join(format!("tcc-test-caches-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_err() {
        // Leave the environment alone: the sentinel check of `make test`
        // (XDG_CACHE_HOME) still catches a test falling back to ~/.cache.
        return;
    }
    // SAFETY: no other thread exists before main.
    unsafe {
        std::env::set_var("TCC_CACHE_DIR", dir.join("tcc"));
        std::env::set_var("POCL_CACHE_DIR", dir.join("pocl"));
        std::env::set_var("XDG_CACHE_HOME", dir.join("xdg"));
        std::env::set_var(ISOLATED_ENV, "1");
        atexit(remove_cache_dir_at_exit);
    }
    let _ = CACHE_DIR.set(dir);
}

static CACHE_DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_cache_dir_at_exit() {
    if let Some(dir) = CACHE_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
}

#[used]
#[unsafe(link_section = ".init_array")]
static ISOLATE_CACHES: extern "C" fn() = isolate_caches_before_main;

/// Gives a child process its own caches under `dir` (a test's temporary
/// directory).
pub fn isolate_command(command: &mut std::process::Command, dir: &Path) {
    command
        .env("TCC_CACHE_DIR", dir.join("tcc-cache"))
        .env("POCL_CACHE_DIR", dir.join("pocl-cache"))
        .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
        .env(ISOLATED_ENV, "1");
}

/// A runtime on the default device (`--device`/`TCC_DEVICE`, else the
/// first GPU, else PoCL) without the disk program cache, for tests that
/// compile fresh artifacts on every run. A missing device fails the test.
pub fn uncached_runtime() -> tcc_runtime::Runtime {
    tcc_runtime::Runtime::with_options(
        tcc_runtime::DeviceSelector::from_flag_or_env(None),
        tcc_runtime::RuntimeOptions {
            disk_cache: false,
            ..tcc_runtime::RuntimeOptions::default()
        },
    )
    .expect("an OpenCL device")
}

/// Serializes the tests of one test binary that both run kernels in the
/// process (PoCL's worker threads) and spawn processes (`tcc compile`):
/// each takes this guard first. Spawning a child while another test
/// thread of the same process was running PoCL failed with EFAULT ("Bad
/// address") on the CI machine (`storage.rs`, session 9).
pub fn device_and_spawn_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// f32 inputs for `function` of `model`, element `i` of input `k` being
/// `value(k, i)` (called in input order, then element order).
pub fn f32_inputs(
    model: &tcc_runtime::Model,
    function: &str,
    mut value: impl FnMut(usize, usize) -> f32,
) -> Vec<tcc_runtime::HostTensor> {
    let info = model
        .functions()
        .iter()
        .find(|f| f.name == function)
        .expect("function");
    info.inputs
        .iter()
        .enumerate()
        .map(|(k, desc)| {
            let count: usize = desc.shape.iter().product();
            let values: Vec<f32> = (0..count).map(|i| value(k, i)).collect();
            tcc_runtime::HostTensor::from_f32(desc.shape.clone(), &values).expect("f32 input")
        })
        .collect()
}
