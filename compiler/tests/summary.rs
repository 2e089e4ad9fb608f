//! scripts/summarize-tests.sh, the closing line of `make test`, on
//! synthetic cargo logs: cases are counted one by one, a crashed or unbuilt
//! test binary and a failing exit status count as failures, skips are
//! listed with their reasons, and the script's exit status agrees with the
//! line.

use std::path::Path;
use std::process::Command;

/// (the summary line, the other lines, the exit code) for `log` and
/// cargo's `status`, with `sentinel` as the stand-in for ~/.cache.
fn summarize(log: &str, status: i32, sentinel: Option<&Path>) -> (String, String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.log");
    std::fs::write(&path, log).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/summarize-tests.sh");
    let mut command = Command::new("bash");
    command.arg(&script).arg(&path).arg(status.to_string());
    if let Some(sentinel) = sentinel {
        command.arg(sentinel);
    }
    let output = command.output().expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines: Vec<&str> = stdout.lines().collect();
    let last = lines.pop().unwrap_or("").to_string();
    (last, lines.join("\n"), output.status.code().unwrap_or(-1))
}

const LIT_AND_SCOREBOARD: &str = "
     Running tests/lit.rs (target/debug/deps/lit-1)

running 1 test
TCC-TALLY lit_suite 43 0 0
test lit_suite ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.77s

     Running tests/onnx_scoreboard.rs (target/debug/deps/onnx_scoreboard-2)

running 3 tests
test a ... ok
TCC-TALLY b 112 0 5
TCC-TALLY-SKIP b test_x: unsupported: f64
test b ... ok
test c ... ignored, needs a GPU

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 9.00s
";

#[test]
fn cases_are_counted_one_by_one_and_skips_listed() {
    let (line, rest, code) = summarize(LIT_AND_SCOREBOARD, 0, None);
    // lit's 43 cases, the scoreboard's 112 + 5 and test a; c is ignored.
    assert_eq!(line, "156 passed, 0 failed, 6 skipped");
    assert_eq!(code, 0);
    assert!(rest.contains("test_x: unsupported: f64"), "{rest}");
    assert!(rest.contains("c: ignored, needs a GPU"), "{rest}");
}

/// Test files that are modules of one binary: libtest names a test
/// `module::name`, its tally names the function.
#[test]
fn tallies_match_module_qualified_test_names() {
    let log = "     Running tests/main.rs (target/debug/deps/integration-1)

running 3 tests
TCC-TALLY lit_suite 43 0 0
test lit::lit_suite ... ok
TCC-TALLY b 10 1 2
test onnx_scoreboard::b ... FAILED
test layers::a ... ok

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s
";
    let (line, rest, code) = summarize(log, 101, None);
    // lit's 43 cases, b's 10 + 1 failed + 2 skipped, and layers::a.
    assert_eq!(line, "54 passed, 1 failed, 2 skipped", "{rest}");
    assert!(!rest.contains("printed a tally but no result"), "{rest}");
    assert_eq!(code, 1);
}

#[test]
fn a_crashed_binary_and_a_failing_tally_are_failures() {
    let log = format!(
        "{LIT_AND_SCOREBOARD}
     Running tests/crash.rs (target/debug/deps/crash-3)

running 2 tests
test d ... ok
error: test failed, to rerun pass `-p tcc-compiler --test crash`
     Running tests/lit2.rs (target/debug/deps/lit2-4)

running 1 test
TCC-TALLY lit2 40 3 0
TCC-TALLY-FAIL lit2 lit/x.mlir: lit: FAIL
test lit2 ... FAILED

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s
"
    );
    let (line, rest, code) = summarize(&log, 101, None);
    // d passed before the crash; the crash is one failure; lit2's 3.
    assert_eq!(line, "197 passed, 4 failed, 6 skipped");
    assert_eq!(code, 1);
    assert!(
        rest.contains("crash.rs") && rest.contains("crashed or killed"),
        "{rest}"
    );
    assert!(rest.contains("lit/x.mlir: lit: FAIL"), "{rest}");
}

/// A result line written while another test's stderr had no line break
/// yet still counts (seen in `make test`: a verifier message glued in
/// front of a unit test's `ok`).
#[test]
fn a_result_glued_behind_other_output_counts() {
    let log = "
     Running unittests src/lib.rs (target/debug/deps/tcc_dialects-1)

running 3 tests
test a ... ok
error: vector_width, max_local_bytes and max_workgroup_size must be positivetest strategy::tests::round_trip ... ok
loc(\"x\"): error: bad thingtest b ... FAILED

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s
";
    let (line, rest, code) = summarize(log, 101, None);
    assert_eq!(line, "2 passed, 1 failed, 0 skipped");
    assert_eq!(code, 1);
    assert!(rest.contains("unittests src/lib.rs: b"), "{rest}");
}

#[test]
fn a_failing_status_is_never_zero_failures() {
    let (line, rest, code) = summarize(LIT_AND_SCOREBOARD, 101, None);
    assert_eq!(line, "156 passed, 1 failed, 6 skipped");
    assert_eq!(code, 1);
    assert!(rest.contains("exited with status 101"), "{rest}");
    // A build failure, with no test run at all.
    let (line, _, code) = summarize(
        "error: could not compile `tcc-compiler` (lib) due to 1 previous error\n",
        101,
        None,
    );
    assert_eq!((line.as_str(), code), ("0 passed, 1 failed, 0 skipped", 1));
    // An empty log: nothing was tested.
    let (line, _, code) = summarize("", 0, None);
    assert_eq!((line.as_str(), code), ("0 passed, 1 failed, 0 skipped", 1));
}

#[test]
fn writes_to_the_default_cache_are_failures() {
    let sentinel = tempfile::tempdir().unwrap();
    let (line, _, code) = summarize(LIT_AND_SCOREBOARD, 0, Some(sentinel.path()));
    assert_eq!(
        (line.as_str(), code),
        ("156 passed, 0 failed, 6 skipped", 0)
    );
    std::fs::create_dir_all(sentinel.path().join("pocl/kcache")).unwrap();
    std::fs::write(sentinel.path().join("pocl/kcache/x.bc"), "x").unwrap();
    let (line, rest, code) = summarize(LIT_AND_SCOREBOARD, 0, Some(sentinel.path()));
    assert_eq!(
        (line.as_str(), code),
        ("156 passed, 1 failed, 6 skipped", 1)
    );
    assert!(rest.contains("default cache directory"), "{rest}");
}
