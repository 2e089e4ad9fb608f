//! Regression tests for the reliability defects of issue 12 in the runtime
//! and its tools: outputs that replaced special files and symlinks, cache
//! entries that hung or crashed the process, unchecked sizes, and inputs
//! accepted silently. Run on the machine's OpenCL device (PoCL in CI).
//! The program cache's are in `program_cache.rs`.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use common::*;
use tcc_runtime::npy::{read_npy, write_npy};
use tcc_runtime::{HostTensor, Model};

fn x_npy(dir: &Path) -> std::path::PathBuf {
    let xp = dir.join("x.npy");
    write_npy(&xp, &HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap()).unwrap();
    xp
}

// Defect 2: the atomic output write replaced special files and symlinks.

#[test]
fn output_to_a_symlink_writes_its_target_and_keeps_the_link() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let xp = x_npy(dir.path());
    let target = dir.path().join("real.npy");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.path().join("link.npy");
    std::os::unix::fs::symlink("real.npy", &link).unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            &format!("--input=@{}", xp.display()),
            &format!("--output=@{}", link.display()),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        read_npy(&target).unwrap().to_f32().unwrap(),
        axpb_expected(&ramp(1000))
    );
}

#[test]
fn output_to_a_fifo_is_written_through() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let xp = x_npy(dir.path());
    let fifo = dir.path().join("out.npy");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            &format!("--input=@{}", xp.display()),
            &format!("--output=@{}", fifo.display()),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = reader.join().unwrap();
    assert!(
        bytes.starts_with(b"\x93NUMPY"),
        "npy bytes through the FIFO"
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

// Defect 10: .npy outputs were written mode 0600 whatever the umask.

#[test]
fn npy_outputs_follow_the_umask() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let xp = x_npy(dir.path());
    for (umask, mode) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let yp = dir.path().join(format!("y{umask}.npy"));
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_tcc-run"))
            .args([
                so.to_str().unwrap(),
                "--function=axpb",
                &format!("--input=@{}", xp.display()),
                &format!("--output=@{}", yp.display()),
            ])
            .env("TCC_CACHE_DIR", cache.path())
            .env_remove("TCC_DEVICE")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let got = std::fs::metadata(&yp).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "umask {umask}: mode {got:o}");
    }
}

// Defect 5: unchecked sizes. A huge literal was allocated (OOM abort)
// before its shape was checked; an .npy header shape of (2^64-1, 4, 16)
// panicked inside npyz. Defect 9: an .npy with trailing junk was accepted.

/// A version 1 .npy file of f32 with this header shape and data.
fn npy_bytes(shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

#[test]
fn inputs_are_checked_against_the_signature_before_they_are_built() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    for tool_name in ["tcc-run", "tcc-benchmark"] {
        let o = tool(
            tool_name,
            cache.path(),
            &[so, "--function=axpb", "--input=1000000000x1000000xf32=1"],
        );
        assert_fails_with(
            &o,
            "input 0 of @axpb expects 1000xf32, got 1000000000x1000000xf32 from the command line",
        );
    }
    let huge = dir.path().join("huge.npy");
    std::fs::write(&huge, npy_bytes("(18446744073709551615, 4, 16)", &[])).unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            &format!("--input=@{}", huge.display()),
        ],
    );
    assert_fails_with(
        &o,
        "the header's shape (18446744073709551615, 4, 16) is too large",
    );
    // A header that matches the function, over too little data: the file
    // is not read beyond its header before the type check, then refused.
    let short = dir.path().join("short.npy");
    std::fs::write(&short, npy_bytes("(1000,)", &[0; 400])).unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            &format!("--input=@{}", short.display()),
        ],
    );
    assert_fails_with(
        &o,
        "truncated: 1000xf32 needs 4000 bytes of data, the file has 400",
    );
    let junk = dir.path().join("junk.npy");
    let mut data = vec![0u8; 4000];
    data.extend(b"trailing junk");
    std::fs::write(&junk, npy_bytes("(1000,)", &data)).unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            &format!("--input=@{}", junk.display()),
        ],
    );
    assert_fails_with(&o, "13 bytes follow the data");
}

// Defect 6: a closed stdout gives an error naming it (exit 1, no panic).

#[test]
fn a_closed_stdout_is_an_error_that_says_so() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let mut child = tool_command(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_fails_with(&o, "error: cannot write to standard output: Broken pipe");
}

// Defect 9: `tcc-benchmark --iterations=100000000000` aborted allocating a
// latency vector for every call.

#[test]
fn a_huge_iteration_count_runs_in_constant_memory() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let mut child = tool_command(
        "tcc-benchmark",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=100000000000",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let still_running = child.try_wait().unwrap().is_none();
    let rss_kb: u64 = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert!(
        still_running,
        "tcc-benchmark exited early ({:?}):\n{}",
        output.status,
        stderr(&output)
    );
    // Its memory stays small while it runs (a vector of 10^11 latencies
    // would be 800 GB).
    assert!(rss_kb < 1 << 20, "resident memory {rss_kb} kB");
}

// Concurrency: 8 threads on one Runtime.

#[test]
fn eight_threads_on_one_runtime_give_bit_identical_outputs() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=42"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    let expected = HostTensor::from_f32(vec![1000], &axpb_expected(&ramp(1000))).unwrap();
    // Each thread with its own session.
    let outputs: Vec<Vec<Vec<u8>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    let mut session = rt.session(&model).unwrap();
                    (0..50)
                        .map(|_| {
                            session.run("axpb", std::slice::from_ref(&x)).unwrap()[0]
                                .bytes
                                .to_vec()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for thread in &outputs {
        for bytes in thread {
            assert_eq!(bytes, &expected.bytes, "bit-identical outputs");
        }
    }
    let stats = rt.cache_stats();
    assert_eq!(
        stats.source_builds, 1,
        "one build for 8 sessions: {stats:?}"
    );
    // And 8 threads sharing one session (behind a mutex: a session runs
    // one call at a time).
    let shared = std::sync::Mutex::new(rt.session(&model).unwrap());
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for _ in 0..50 {
                    let y = shared
                        .lock()
                        .unwrap()
                        .run("axpb", std::slice::from_ref(&x))
                        .unwrap();
                    assert_eq!(y[0].bytes, expected.bytes);
                }
            });
        }
    });
    drop(shared);
    assert_eq!(rt.pool_stats().in_use_bytes, 0, "{:?}", rt.pool_stats());
}

// Fault injection: an alloc callback, a kernel build and a launch fail in
// turn; each gives a clear error and leaves the session usable, without
// leaking pool buffers.

#[test]
fn injected_faults_give_clear_errors_and_leave_the_session_usable() {
    use tcc_runtime::Fault;
    let (_dir, so) = test_model(&["TCC_TEST_SALT=43"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    let expected = axpb_expected(&ramp(1000));

    rt.inject_fault(Fault::KernelBuild, 1);
    let e = rt
        .session(&model)
        .err()
        .expect("the build fails")
        .to_string();
    assert!(
        e.contains("kernel program failed to build") && e.contains("injected fault"),
        "{e}"
    );
    let mut session = rt.session(&model).unwrap();
    let y = session.run("axpb", std::slice::from_ref(&x)).unwrap();
    assert_eq!(y[0].to_f32().unwrap(), expected);
    let before = rt.pool_stats();

    for (fault, needle) in [
        (Fault::Alloc, "runtime call alloc() failed"),
        (Fault::Launch, "runtime call launch() failed"),
    ] {
        rt.inject_fault(fault, 1);
        let e = session
            .run("axpb", std::slice::from_ref(&x))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("@axpb failed") && e.contains(needle) && e.contains("injected fault"),
            "{fault:?}: {e}"
        );
        let y = session.run("axpb", std::slice::from_ref(&x)).unwrap();
        assert_eq!(
            y[0].to_f32().unwrap(),
            expected,
            "{fault:?}: usable afterwards"
        );
        let after = rt.pool_stats();
        assert_eq!(
            after.in_use_bytes, before.in_use_bytes,
            "{fault:?}: {after:?}"
        );
        assert_eq!(
            after.current_bytes, before.current_bytes,
            "{fault:?}: {after:?}"
        );
    }
}

/// `--output=@/dev/stdout` with stdout a pipe: /dev/stdout is a /proc
/// magic link to the pipe, which cannot be followed by name; it is written
/// through.
#[test]
fn output_to_dev_stdout_reaches_the_pipe() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let xp = x_npy(dir.path());
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            &format!("--input=@{}", xp.display()),
            "--output=@/dev/stdout",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let at = o
        .stdout
        .windows(6)
        .position(|w| w == b"\x93NUMPY")
        .expect("npy bytes on stdout");
    let npy = dir.path().join("from-stdout.npy");
    std::fs::write(&npy, &o.stdout[at..]).unwrap();
    assert_eq!(
        read_npy(&npy).unwrap().to_f32().unwrap(),
        axpb_expected(&ramp(1000))
    );
}
