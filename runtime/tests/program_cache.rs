//! The program cache on the machine's OpenCL device (PoCL in CI): hits in
//! memory and on disk, rebuilt entries, and the regression tests for its
//! reliability defects of issue 12 (defects 3 and 4): entries that hung
//! or crashed the process, a driver that refuses an entry, a load that
//! died in the driver, and several processes on one cache.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use tcc_runtime::program_cache::{HEADER_LEN, encode_entry};
use tcc_runtime::{HostTensor, Model, ProgramOrigin, RuntimeOptions};

#[test]
fn program_cache_hits_in_memory_then_on_disk() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=11"]);
    let cache = tempfile::tempdir().unwrap();
    let model = Model::load(&so).unwrap();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();

    let rt1 = runtime(cache.path(), false);
    let mut s = rt1.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::SourceBuild));
    s.run("axpb", std::slice::from_ref(&x)).unwrap();
    let s2 = rt1.session(&model).unwrap();
    assert_eq!(s2.program_origin(), Some(ProgramOrigin::MemoryHit));
    let st = rt1.cache_stats();
    assert_eq!(
        (
            st.source_builds,
            st.memory_hits,
            st.disk_hits,
            st.disk_writes
        ),
        (1, 1, 0, 1),
        "{st:?}"
    );
    let entries: Vec<_> = fs::read_dir(rt1.cache_entries_dir().unwrap())
        .unwrap()
        .collect();
    assert_eq!(entries.len(), 1);

    // A new runtime (a new process, as far as the cache can tell).
    let rt2 = runtime(cache.path(), false);
    let mut s = rt2.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::DiskHit));
    let st = rt2.cache_stats();
    assert_eq!(
        (st.source_builds, st.disk_hits),
        (0, 1),
        "no driver compile on a disk hit: {st:?}"
    );
    let y = s.run("axpb", std::slice::from_ref(&x)).unwrap();
    assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&ramp(1000)));

    // Extra build options (TCC_OPENCL_BUILD_OPTIONS) make a program of
    // their own: built from source next to the entry without them, then
    // found on disk by the next runtime with the same options; same
    // results.
    let unoptimized = || RuntimeOptions {
        extra_build_options: Some(" -cl-opt-disable ".into()),
        ..Default::default()
    };
    let rt3 = runtime_with(cache.path(), unoptimized());
    let mut s = rt3.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::SourceBuild));
    let y = s.run("axpb", std::slice::from_ref(&x)).unwrap();
    assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&ramp(1000)));
    drop(s);
    drop(rt3);
    let rt4 = runtime_with(cache.path(), unoptimized());
    let s = rt4.session(&model).unwrap();
    assert_eq!(s.program_origin(), Some(ProgramOrigin::DiskHit));
    let entries = fs::read_dir(rt4.cache_entries_dir().unwrap())
        .unwrap()
        .count();
    assert_eq!(entries, 2, "one entry per build options");
}

#[test]
fn corrupt_truncated_and_foreign_cache_entries_are_rebuilt() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=12"]);
    let (_dir2, other_so) = test_model(&["TCC_TEST_SALT=13"]);
    let cache = tempfile::tempdir().unwrap();
    let model = Model::load(&so).unwrap();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();

    let rt = runtime(cache.path(), false);
    drop(rt.session(&model).unwrap());
    rt.wait_for_cache_writes();
    let dir = rt.cache_entries_dir().unwrap();
    let entry = fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let good = fs::read(&entry).unwrap();

    // An entry written for another program, under this program's name.
    let rt_other = runtime(cache.path(), false);
    drop(rt_other.session(&Model::load(&other_so).unwrap()).unwrap());
    rt_other.wait_for_cache_writes();
    let foreign_path = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| *p != entry)
        .unwrap();
    let foreign = fs::read(&foreign_path).unwrap();

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x5a;
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("corrupt", flipped, "payload hash mismatch"),
        ("truncated", good[..good.len() / 2].to_vec(), "header says"),
        ("header only", good[..20].to_vec(), "truncated"),
        ("foreign", foreign, "another key"),
    ];
    for (what, bytes, reason) in cases {
        fs::write(&entry, &bytes).unwrap();
        let rt = runtime(cache.path(), false);
        let mut s = rt.session(&model).unwrap();
        let st = rt.cache_stats();
        assert_eq!(
            s.program_origin(),
            Some(ProgramOrigin::SourceBuild),
            "{what}"
        );
        assert_eq!(
            (st.disk_rejects, st.source_builds, st.disk_hits),
            (1, 1, 0),
            "{what}: {st:?}"
        );
        let problem = st.last_disk_problem.unwrap();
        assert!(problem.contains(reason), "{what}: {problem}");
        let y = s.run("axpb", std::slice::from_ref(&x)).unwrap();
        assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&ramp(1000)), "{what}");
        // The rebuilt entry was written back and is trusted next time.
        let rt = runtime(cache.path(), false);
        assert_eq!(
            rt.session(&model).unwrap().program_origin(),
            Some(ProgramOrigin::DiskHit),
            "{what}"
        );
    }
}

// Defects 3 and 4: the program cache handed the driver entries it had not
// validated (a FIFO hung, a symlink to /dev/zero read until OOM) and never
// evicted an entry that crashed the driver.

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
    // may refuse the binary; either way the second run must work. Under
    // AddressSanitizer (`make test-asan`) PoCL's read past the end of its
    // copy of the binary is reported (exit 1) before it can crash: that
    // counts as dying in the driver only when the report's summary points
    // into PoCL, not into tcc.
    let first = run();
    let died_in_driver_under_asan = stderr(&first)
        .lines()
        .any(|l| l.starts_with("SUMMARY: AddressSanitizer:") && l.contains("/libpocl.so"));
    assert!(
        first.status.success()
            || first.status.code().is_none()
            || first.status.code() == Some(134)
            || died_in_driver_under_asan,
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

// Issue 38, item 4: the cache trusted whatever it found. A cache directory
// pre-filled by another user was loaded, `umask 000` created the cache
// directories 0777, and a symlinked `opencl-programs` was followed.

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn cache_directories_and_files_are_private_whatever_the_umask() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=41"]);
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("new/tcc");
    let run = || {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("umask 000 && exec \"$@\"")
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_tcc-run"))
            .args([
                so.to_str().unwrap(),
                "--function=axpb",
                "--input=1000xf32=1",
            ])
            .env("TCC_CACHE_DIR", &cache)
            .env("POCL_CACHE_DIR", scratch.path().join("pocl"))
            .env_remove("TCC_DEVICE")
            .env_remove("TCC_BACKEND");
        command.output().unwrap()
    };
    let output = run();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("warning"), "{}", stderr(&output));
    let entries = cache.join("opencl-programs");
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(&entries), 0o700);
    let files: Vec<_> = fs::read_dir(&entries)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    // The private cache is used by the next run, under the same umask.
    let again = run();
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(again.stdout, output.stdout);
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
}

#[test]
fn a_cache_another_user_could_write_is_never_loaded() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("tcc");
    let (model_dir, model, entry, _) = cached_entry(&cache, 42);
    let so = model_dir.path().join("model.so");
    let entries = entry.parent().unwrap().to_path_buf();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    let fresh = |cache: &Path| {
        let rt = runtime(cache, false);
        let mut s = rt.session(&model).unwrap();
        let y = s.run("axpb", std::slice::from_ref(&x)).unwrap();
        assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&ramp(1000)));
        (s.program_origin(), rt.cache_stats())
    };
    // The private cache is used.
    assert_eq!(fresh(&cache).0, Some(ProgramOrigin::DiskHit));

    // A directory writable by others: the run goes on without the cache,
    // which stays as it was.
    for (dir, loose) in [(&cache, 0o777), (&entries, 0o777), (&entries, 0o770)] {
        chmod(dir, loose);
        let (origin, stats) = fresh(&cache);
        assert_eq!(
            origin,
            Some(ProgramOrigin::SourceBuild),
            "{dir:?} {loose:o}"
        );
        let why = stats.refused_dir.unwrap_or_default();
        assert!(
            why.contains("writable by its group or others"),
            "{dir:?} {loose:o}: {why}"
        );
        assert_eq!((stats.disk_hits, stats.disk_writes), (0, 0));
        assert!(entry.exists());
        chmod(dir, 0o700);
    }
    // The warning is one line on stderr of the tools.
    chmod(&entries, 0o777);
    let output = tool(
        "tcc-run",
        &cache,
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let warnings: Vec<_> = stderr(&output)
        .lines()
        .filter(|l| l.contains("warning: not using the program cache"))
        .map(str::to_string)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&output));
    assert!(warnings[0].contains("opencl-programs is writable by its group or others (mode 0777)"));
    chmod(&entries, 0o700);

    // An entry writable by others is evicted and rebuilt, never loaded.
    chmod(&entry, 0o666);
    let (origin, stats) = fresh(&cache);
    assert_eq!(origin, Some(ProgramOrigin::SourceBuild));
    assert_eq!(stats.disk_rejects, 1, "{stats:?}");
    assert!(
        stats
            .last_disk_problem
            .unwrap_or_default()
            .contains("writable by its group or others (mode 0666): not trusted")
    );
    assert_eq!(mode(&entry), 0o600);
    assert_eq!(fresh(&cache).0, Some(ProgramOrigin::DiskHit));

    // A symlinked entries directory is not followed.
    let elsewhere = scratch.path().join("elsewhere");
    fs::rename(&entries, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &entries).unwrap();
    let (origin, stats) = fresh(&cache);
    assert_eq!(origin, Some(ProgramOrigin::SourceBuild));
    assert!(
        stats
            .refused_dir
            .unwrap_or_default()
            .contains("opencl-programs is a symbolic link")
    );
    fs::remove_file(&entries).unwrap();
    fs::rename(&elsewhere, &entries).unwrap();

    // A cache directory or entry owned by another user (needs root to
    // plant; as another user, the mode checks above stand for it).
    if unsafe { libc::geteuid() } == 0 {
        let chown = |path: &Path, uid: u32| {
            std::os::unix::fs::lchown(path, Some(uid), None).unwrap();
        };
        chown(&cache, 65534);
        let (origin, stats) = fresh(&cache);
        assert_eq!(origin, Some(ProgramOrigin::SourceBuild));
        assert!(
            stats
                .refused_dir
                .unwrap_or_default()
                .contains("is owned by uid 65534, not by this user (uid 0)")
        );
        chown(&cache, 0);
        chown(&entry, 65534);
        let (origin, stats) = fresh(&cache);
        assert_eq!(origin, Some(ProgramOrigin::SourceBuild));
        assert!(
            stats
                .last_disk_problem
                .unwrap_or_default()
                .contains("owned by uid 65534")
        );
        assert_eq!(fresh(&cache).0, Some(ProgramOrigin::DiskHit));
    }
}
