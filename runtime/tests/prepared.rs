//! Prepared programs (`tcc compile --prepare`, `<artifact>.prepared/`) on
//! the machine's OpenCL device (PoCL in CI): a prepared binary is loaded
//! instead of compiling the kernels, and one that is damaged, written for
//! another program or device, or not trusted is never handed to the
//! driver: the program is built from source instead, with the reason.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;
use tcc_runtime::program_cache::{HEADER_LEN, decode_entry, encode_entry};
use tcc_runtime::{HostTensor, Model, ProgramOrigin};

/// Builds `so`'s program into a scratch cache and returns its entry file
/// (name and bytes), as `tcc compile --prepare` does through `tcc-run`.
fn built_entry(so: &Path) -> (String, Vec<u8>) {
    let scratch = tempfile::tempdir().unwrap();
    let rt = runtime(scratch.path(), false);
    let model = Model::load(so).unwrap();
    let mut s = rt.session(&model).unwrap();
    s.warm_up("axpb").unwrap();
    rt.wait_for_cache_writes();
    let entries: Vec<PathBuf> = fs::read_dir(rt.cache_entries_dir().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let name = entries[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    (name, fs::read(&entries[0]).unwrap())
}

fn prepared_dir(so: &Path) -> PathBuf {
    let dir = so.with_file_name("model.so.prepared");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn put(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o644)).unwrap();
}

/// A fresh runtime on an empty cache runs `model` once; returns the
/// program's origin, the counters and the output.
fn first_run(model: &Model) -> (ProgramOrigin, tcc_runtime::CacheStats, Vec<f32>) {
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let mut s = rt.session(model).unwrap();
    let origin = s.program_origin().unwrap();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    let y = s.run("axpb", std::slice::from_ref(&x)).unwrap()[0]
        .to_f32()
        .unwrap();
    drop(s);
    (origin, rt.cache_stats(), y)
}

#[test]
fn a_prepared_binary_is_loaded_on_an_empty_cache() {
    let (dir, so) = test_model(&["TCC_TEST_SALT=61"]);
    let (name, entry) = built_entry(&so);
    put(&prepared_dir(&so).join(&name), &entry);

    let model = Model::load(&so).unwrap();
    let (origin, st, y) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::Prepared);
    assert_eq!(
        (
            st.prepared_loads,
            st.source_builds,
            st.disk_hits,
            st.disk_writes
        ),
        (1, 0, 0, 0),
        "loaded, not compiled, and nothing left to write: {st:?}"
    );
    assert_eq!(y, axpb_expected(&ramp(1000)));

    // tcc-run says so, and finishes without writing anything afterwards.
    let cache = tempfile::tempdir().unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--verbose",
        ],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("loaded from the artifact's prepared binary"),
        "{err}"
    );
    assert!(!err.contains("writing the program cache entry"), "{err}");
    drop(dir);
}

#[test]
fn damaged_foreign_and_untrusted_prepared_binaries_are_never_loaded() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=62"]);
    let (_dir2, other_so) = test_model(&["TCC_TEST_SALT=63"]);
    let (name, good) = built_entry(&so);
    let (other_name, other) = built_entry(&other_so);
    assert_ne!(name, other_name);
    let prepared = prepared_dir(&so);
    let path = prepared.join(&name);
    let model = Model::load(&so).unwrap();

    // Every bit of the payload and of the header's key, length and hash
    // matters: a sample of flips across them, each refused before the
    // driver sees the binary.
    let mut flips: Vec<usize> = (16..HEADER_LEN).step_by(5).collect();
    flips.extend((HEADER_LEN..good.len()).step_by((good.len() - HEADER_LEN) / 7 + 1));
    flips.push(good.len() - 1);
    for at in flips {
        let mut damaged = good.clone();
        damaged[at] ^= 0x10;
        put(&path, &damaged);
        let (origin, st, y) = first_run(&model);
        assert_eq!(origin, ProgramOrigin::SourceBuild, "byte {at}");
        assert_eq!(
            (st.prepared_loads, st.prepared_rejects, st.source_builds),
            (0, 1, 1),
            "byte {at}: {st:?}"
        );
        assert!(
            st.last_disk_problem
                .as_deref()
                .unwrap_or("")
                .contains("prepared program refused"),
            "byte {at}: {st:?}"
        );
        assert_eq!(y, axpb_expected(&ramp(1000)), "byte {at}");
    }

    // Another program's binary under this one's name (its header names
    // its own key): refused. The same binary under its own name, as a
    // prepared entry for another device would be: not found, built from
    // source, nothing refused.
    put(&path, &other);
    let (origin, st, _) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::SourceBuild);
    assert_eq!(st.prepared_rejects, 1, "{st:?}");
    assert!(
        st.last_disk_problem.unwrap().contains("another key"),
        "foreign key"
    );
    fs::remove_file(&path).unwrap();
    put(&prepared.join(&other_name), &other);
    let (origin, st, y) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::SourceBuild);
    assert_eq!((st.prepared_loads, st.prepared_rejects), (0, 0), "{st:?}");
    assert_eq!(y, axpb_expected(&ramp(1000)));

    // A good binary that others could have rewritten is not trusted.
    put(&path, &good);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
    let (origin, st, _) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::SourceBuild);
    assert_eq!(st.prepared_rejects, 1, "{st:?}");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(&prepared, fs::Permissions::from_mode(0o777)).unwrap();
    let (origin, st, _) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::SourceBuild);
    assert_eq!(st.prepared_rejects, 1, "{st:?}");
    fs::set_permissions(&prepared, fs::Permissions::from_mode(0o755)).unwrap();

    // A symlink in its place is not followed.
    fs::remove_file(&path).unwrap();
    let elsewhere = so.with_file_name("elsewhere.bin");
    put(&elsewhere, &good);
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    let (origin, st, _) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::SourceBuild);
    assert_eq!(st.prepared_rejects, 1, "{st:?}");

    // And the good one, back in place, is loaded.
    fs::remove_file(&path).unwrap();
    put(&path, &good);
    assert!(decode_entry(&good, &good[16..48].try_into().unwrap()).is_ok());
    let (origin, st, _) = first_run(&model);
    assert_eq!(origin, ProgramOrigin::Prepared, "{st:?}");
}

#[test]
fn a_prepared_binary_for_the_wrong_key_content_is_refused_without_a_disk_cache() {
    // Without a disk cache the prepared binary is loaded directly, after
    // the same checks.
    let (_dir, so) = test_model(&["TCC_TEST_SALT=64"]);
    let (name, good) = built_entry(&so);
    let path = prepared_dir(&so).join(&name);
    let model = Model::load(&so).unwrap();
    let run = || {
        let rt = tcc_runtime::Runtime::with_options(
            tcc_runtime::DeviceSelector::Default,
            tcc_runtime::RuntimeOptions {
                disk_cache: false,
                ..Default::default()
            },
        )
        .unwrap();
        let origin = rt.session(&model).unwrap().program_origin().unwrap();
        (origin, rt.cache_stats())
    };
    put(&path, &good);
    let (origin, st) = run();
    assert_eq!((origin, st.prepared_loads), (ProgramOrigin::Prepared, 1));
    let mut key = [0u8; 32];
    key.copy_from_slice(&good[16..48]);
    put(&path, &encode_entry(&key, b"not a driver binary at all"));
    // Valid header and hash, so only the driver can refuse it; PoCL does
    // (it is not a pocl binary), and the program is built from source.
    let (origin, st) = run();
    assert_eq!(origin, ProgramOrigin::SourceBuild, "{st:?}");
    assert_eq!((st.prepared_loads, st.prepared_rejects), (0, 1), "{st:?}");
}

// Issue 35, item 3: the first `tcc-run` of a model on PoCL spent 10-16 s
// after printing its result, writing the program cache entry (PoCL
// compiles every kernel once more for the binary). The entry is now
// written by a background process that holds the entry's lock.

/// The entry files (`.bin`) in `cache`'s entries directory.
fn entries(cache: &Path) -> Vec<PathBuf> {
    fs::read_dir(cache.join("opencl-programs"))
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "bin"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn nothing_but_the_exit_follows_the_first_result() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=65"]);
    let cache = tempfile::tempdir().unwrap();
    let args = [
        so.to_str().unwrap(),
        "--function=axpb",
        "--input=1000xf32=1",
        "--verbose",
    ];
    let first = tool("tcc-run", cache.path(), &args);
    let err = stderr(&first);
    assert!(first.status.success(), "{err}");
    assert!(err.contains("built from source"), "{err}");
    // The tool itself never asked the driver for the binary.
    assert!(!err.contains("writing the program cache entry"), "{err}");
    let pid: u32 = err
        .split("written in the background (pid ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no background writer: {err}"));
    assert_ne!(pid, std::process::id());

    // A second run waits for the writer's lock and loads its entry.
    let second = tool("tcc-run", cache.path(), &args);
    let err2 = stderr(&second);
    assert!(second.status.success(), "{err2}");
    assert!(err2.contains("loaded from the disk cache"), "{err2}");
    assert_eq!(first.stdout, second.stdout, "bit-identical outputs");
    assert_eq!(entries(cache.path()).len(), 1);
    let left: Vec<_> = fs::read_dir(cache.path().join("opencl-programs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "no lock file left behind: {left:?}");
}

#[test]
fn tcc_cache_write_foreground_writes_the_entry_before_the_exit() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=66"]);
    let cache = tempfile::tempdir().unwrap();
    let o = tool_command(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
        ],
    )
    .env("TCC_CACHE_WRITE", "foreground")
    .output()
    .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("in the background"), "{err}");
    assert_eq!(entries(cache.path()).len(), 1, "{err}");
}
