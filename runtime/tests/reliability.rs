//! Regression tests for the reliability defects of issue 12 in the runtime
//! and its tools: outputs that replaced special files and symlinks, cache
//! entries that hung or crashed the process, unchecked sizes, and inputs
//! accepted silently. Run on the machine's OpenCL device (PoCL in CI).

mod common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use tcc_runtime::HostTensor;
use tcc_runtime::npy::{read_npy, write_npy};

fn tool(name: &str, cache: &Path, args: &[&str]) -> Output {
    tool_command(name, cache, args).output().expect("run the binary")
}

fn tool_command(name: &str, cache: &Path, args: &[&str]) -> Command {
    let exe = match name {
        "tcc-run" => env!("CARGO_BIN_EXE_tcc-run"),
        _ => env!("CARGO_BIN_EXE_tcc-benchmark"),
    };
    let mut command = Command::new(exe);
    command
        .args(args)
        .env("TCC_CACHE_DIR", cache)
        .env_remove("TCC_DEVICE");
    command
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a clean failure: exit code 1, the message on stderr, no panic.
fn assert_fails_with(o: &Output, message: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains(message),
        "expected `{message}` in stderr:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

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
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
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
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
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
    assert!(bytes.starts_with(b"\x93NUMPY"), "npy bytes through the FIFO");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
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
