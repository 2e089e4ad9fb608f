//! Regression tests for the reliability defects of issue 12 in the runtime
//! and its tools: outputs that replaced special files and symlinks, cache
//! entries that hung or crashed the process, unchecked sizes, and inputs
//! accepted silently. Run on the machine's OpenCL device (PoCL in CI).

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use tcc_runtime::HostTensor;
use tcc_runtime::npy::{read_npy, write_npy};

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

// Defects 3 and 4: the program cache handed the driver entries it had not
// validated (a FIFO hung, a symlink to /dev/zero read until OOM) and never
// evicted an entry that crashed the driver.

use tcc_runtime::program_cache::{HEADER_LEN, encode_entry};
use tcc_runtime::{Model, ProgramOrigin};

/// A runtime with a cache in `cache` builds the test model once; returns
/// the entry's path, its bytes and the model.
fn cached_entry(
    cache: &Path,
    salt: u32,
) -> (tempfile::TempDir, Model, std::path::PathBuf, Vec<u8>) {
    let (dir, so) = test_model(&[&format!("TCC_TEST_SALT={salt}")]);
    let model = Model::load(&so).unwrap();
    let rt = runtime(cache, false);
    drop(rt.session(&model).unwrap());
    rt.wait_for_cache_writes();
    let entries = rt.cache_entries_dir().unwrap();
    let files: Vec<_> = std::fs::read_dir(&entries)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one entry, no lock left behind: {files:?}");
    let bytes = std::fs::read(&files[0]).unwrap();
    (dir, model, files[0].clone(), bytes)
}

/// `entry` with its payload replaced by `payload` and a header (length,
/// hash) that matches it: only the driver can tell it is bad.
fn reencoded(entry: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut key = [0u8; 32];
    key.copy_from_slice(&entry[16..48]);
    encode_entry(&key, payload)
}

/// Runs `f` on another thread and fails the test if it takes longer than
/// `seconds` (a hang must fail, not stall the suite).
fn within<T: Send + 'static>(seconds: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(seconds))
        .expect("hung (or panicked)")
}

#[test]
fn fifo_symlink_and_oversized_cache_entries_are_evicted_unread() {
    let cache = tempfile::tempdir().unwrap();
    let (_dir, model, entry, _) = cached_entry(cache.path(), 31);
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    let big = cache.path().join("big");
    // A sparse file one byte over the limit: nothing is read.
    let sparse = std::fs::File::create(&big).unwrap();
    sparse
        .set_len(tcc_runtime::program_cache::MAX_ENTRY_BYTES + 1)
        .unwrap();
    drop(sparse);
    let cases: Vec<(&str, Box<dyn Fn(&Path)>, &str)> = vec![
        (
            "fifo",
            Box::new(|p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success())),
            "not a regular file",
        ),
        (
            "symlink to /dev/zero",
            Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
            "symbolic link",
        ),
        (
            "oversized",
            Box::new(move |p: &Path| std::fs::rename(&big, p).unwrap()),
            "limit on entries",
        ),
    ];
    for (what, make, reason) in cases {
        std::fs::remove_file(&entry).unwrap();
        make(&entry);
        let cache_dir = cache.path().to_path_buf();
        let model_here = model.clone();
        let x = x.clone();
        let (origin, stats, y) = within(120, move || {
            let rt = runtime(&cache_dir, false);
            let mut s = rt.session(&model_here).unwrap();
            let y = s.run("axpb", std::slice::from_ref(&x)).unwrap();
            (s.program_origin(), rt.cache_stats(), y)
        });
        assert_eq!(origin, Some(ProgramOrigin::SourceBuild), "{what}");
        assert_eq!(
            (stats.disk_rejects, stats.disk_writes),
            (1, 1),
            "{what}: {stats:?}"
        );
        let problem = stats.last_disk_problem.unwrap_or_default();
        assert!(problem.contains(reason), "{what}: {problem}");
        assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&ramp(1000)), "{what}");
        // The bad file was replaced by a good entry, trusted next time.
        let metadata = std::fs::symlink_metadata(&entry).unwrap();
        assert!(metadata.file_type().is_file(), "{what}");
        assert!(metadata.len() < 100 << 20, "{what}");
        let rt = runtime(cache.path(), false);
        assert_eq!(
            rt.session(&model).unwrap().program_origin(),
            Some(ProgramOrigin::DiskHit),
            "{what}"
        );
    }
    assert!(
        std::fs::metadata("/dev/zero")
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn an_entry_the_driver_refuses_is_rebuilt_once_then_its_key_is_bypassed() {
    let cache = tempfile::tempdir().unwrap();
    let (_dir, model, entry, good) = cached_entry(cache.path(), 32);
    let garbage: Vec<u8> = (0..good.len() - HEADER_LEN)
        .map(|i| (i * 7919 % 251) as u8)
        .collect();
    let bad = reencoded(&good, &garbage);
    // First time: evicted, rebuilt, written back.
    std::fs::write(&entry, &bad).unwrap();
    let rt = runtime(cache.path(), false);
    let s = rt.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::SourceBuild));
    let st = rt.cache_stats();
    assert_eq!(
        (st.disk_rejects, st.disk_writes, st.bypassed),
        (1, 1, 0),
        "{st:?}"
    );
    assert!(
        st.last_disk_problem
            .as_deref()
            .unwrap_or_default()
            .contains("driver refused"),
        "{st:?}"
    );
    assert!(entry.exists());
    // Second time in a row: evicted, and the key is bypassed from now on.
    std::fs::write(&entry, &bad).unwrap();
    let rt = runtime(cache.path(), false);
    let mut s = rt.session(&model).unwrap();
    let st = rt.cache_stats();
    assert_eq!(
        (st.disk_rejects, st.disk_writes, st.bypassed),
        (1, 0, 1),
        "{st:?}"
    );
    assert!(!entry.exists(), "a bypassed key writes no entry");
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    let y = s.run("axpb", std::slice::from_ref(&x)).unwrap();
    assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&ramp(1000)));
    let rt = runtime(cache.path(), false);
    let s = rt.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::SourceBuild));
    let st = rt.cache_stats();
    assert_eq!(
        (st.source_builds, st.disk_writes, st.bypassed),
        (1, 0, 1),
        "{st:?}"
    );
    assert!(entry.with_extension("bypass").exists());
}

#[test]
fn an_entry_that_crashed_the_driver_is_evicted_by_the_next_process() {
    // A truncated PoCL binary with a matching header and hash: PoCL aborts
    // in pocl_binary_deserialize instead of refusing it. Before the fix
    // every later run crashed the same way.
    let cache = tempfile::tempdir().unwrap();
    let (dir, _model, entry, good) = cached_entry(cache.path(), 33);
    let payload = &good[HEADER_LEN..];
    std::fs::write(&entry, reencoded(&good, &payload[..payload.len() / 2])).unwrap();
    let so = dir.path().join("model.so");
    let run = || {
        tool(
            "tcc-run",
            cache.path(),
            &[
                so.to_str().unwrap(),
                "--function=axpb",
                "--input=1000xf32=1",
                "--verbose",
            ],
        )
    };
    // The first run may die in the driver (it does on PoCL) or the driver
    // may refuse the binary; either way the second run must work.
    let first = run();
    assert!(
        first.status.success() || first.status.code().is_none() || first.status.code() == Some(134),
        "{first:?}"
    );
    let second = run();
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("built from source"),
        "{}",
        stderr(&second)
    );
    assert!(String::from_utf8_lossy(&second.stdout).contains("1000xf32=[2 2.5 3"));
    let third = run();
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(
        stderr(&third).contains("loaded from the disk cache"),
        "the rebuilt entry is trusted: {}",
        stderr(&third)
    );
    assert!(!entry.with_extension("loading").exists());
}

#[test]
fn a_loading_marker_left_by_a_dead_process_evicts_the_entry() {
    let cache = tempfile::tempdir().unwrap();
    let (_dir, model, entry, _) = cached_entry(cache.path(), 34);
    std::fs::write(entry.with_extension("loading"), "12345").unwrap();
    let rt = runtime(cache.path(), false);
    let s = rt.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::SourceBuild));
    let st = rt.cache_stats();
    assert_eq!((st.disk_rejects, st.disk_writes), (1, 1), "{st:?}");
    assert!(st.last_disk_problem.unwrap().contains("died there"));
    assert!(!entry.with_extension("loading").exists());
    // A clean load clears the eviction history.
    let rt = runtime(cache.path(), false);
    assert_eq!(
        rt.session(&model).unwrap().program_origin(),
        Some(ProgramOrigin::DiskHit)
    );
    assert!(!entry.with_extension("evicted").exists());
}

// The lock file: only one process builds a given entry.

#[test]
fn eight_processes_on_one_empty_cache_build_the_program_once() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=35"]);
    let cache = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..8)
        .map(|_| {
            tool_command(
                "tcc-run",
                cache.path(),
                &[
                    so.to_str().unwrap(),
                    "--function=axpb",
                    "--input=1000xf32=1",
                    "--verbose",
                ],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let mut built = 0;
    for o in &outputs {
        assert!(o.status.success(), "{}", stderr(o));
        let err = stderr(o);
        if err.contains("built from source") {
            built += 1;
        } else {
            assert!(err.contains("loaded from the disk cache"), "{err}");
        }
        assert_eq!(o.stdout, outputs[0].stdout, "bit-identical outputs");
    }
    assert_eq!(
        built, 1,
        "one process builds, the others wait and load its entry"
    );
    let left: Vec<_> = std::fs::read_dir(cache.path().join("opencl-programs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "one entry and no lock files left: {left:?}");
}

#[test]
fn a_process_that_waits_too_long_for_the_lock_builds_without_writing() {
    let cache = tempfile::tempdir().unwrap();
    let (dir, model, entry, _) = cached_entry(cache.path(), 36);
    drop(model);
    std::fs::remove_file(&entry).unwrap();
    // This test holds the entry's lock, as a slow builder would.
    let lock = std::fs::File::create(entry.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let start = std::time::Instant::now();
    let o = tool_command(
        "tcc-run",
        cache.path(),
        &[
            dir.path().join("model.so").to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--verbose",
        ],
    )
    .env("TCC_CACHE_LOCK_TIMEOUT", "1")
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(start.elapsed() >= std::time::Duration::from_secs(1));
    assert!(stderr(&o).contains("built from source"), "{}", stderr(&o));
    assert!(
        !entry.exists(),
        "the lock holder writes the entry, not the waiter"
    );
    drop(lock);
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
