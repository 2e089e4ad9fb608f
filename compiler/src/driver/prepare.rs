//! `tcc compile --prepare`: moves the driver's kernel compile from the
//! first run to build time. On a CPU through PoCL the first run of a model
//! spends nearly all its time compiling kernels (ResNet-50: about 10 s of
//! a 10.8 s first result from empty caches); a prepared artifact's first
//! run loads them instead (about 1 s).
//!
//! It runs `tcc-run --prepare` on the new artifact (the program is built,
//! each function called once on zeros so the driver compiles every kernel
//! for its launch size, and the program cache entry written) with a fresh
//! private cache directory, then moves that entry into
//! `<artifact>.prepared/<key>.bin`, where the runtime looks on a miss (see
//! `tcc_runtime::program_cache::PreparedDir`). The key covers the device,
//! driver version, build options and kernel source, so the entry is found
//! only by the device and driver it was built for; entries for other
//! devices already in the directory are kept.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};
use tcc_runtime::program_cache::{PREPARED_SUFFIX, PROGRAMS_SUBDIR, decode_entry};

/// The `tcc-run` next to this executable (an install or `target/debug`
/// puts them side by side), else the one on `PATH`.
fn tcc_run() -> PathBuf {
    std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("tcc-run"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("tcc-run"))
}

/// Prepares `artifact` for `device` (a `tcc-run --device` selector; empty
/// for the default device) and returns the entry files written.
pub fn prepare_artifact(artifact: &Path, device: &str) -> Result<Vec<PathBuf>> {
    let Some(name) = artifact.file_name() else {
        bail!("--prepare: {} has no file name", artifact.display());
    };
    let mut dir_name = name.to_os_string();
    dir_name.push(PREPARED_SUFFIX);
    let prepared = artifact.with_file_name(dir_name);
    let cache = tempfile::tempdir().context("--prepare: cannot create a temporary directory")?;
    let mut command = Command::new(tcc_run());
    command
        .arg("--prepare")
        .arg(artifact)
        .env("TCC_CACHE_DIR", cache.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if !device.is_empty() {
        command.arg(format!("--device={device}"));
    }
    eprintln!(
        "tcc compile: --prepare: building the kernels for {} (the driver compiles each one once)",
        if device.is_empty() {
            "the default device"
        } else {
            device
        }
    );
    let output = command.output().with_context(|| {
        format!(
            "--prepare runs {} (install it beside tcc, or put it on PATH)",
            tcc_run().display()
        )
    })?;
    let report = String::from_utf8_lossy(&output.stdout);
    for line in report.lines() {
        eprintln!("tcc compile: --prepare: {line}");
    }
    if !output.status.success() {
        bail!(
            "--prepare: `tcc-run --prepare {}` failed ({}); the artifact is written, unprepared",
            artifact.display(),
            output.status
        );
    }
    let entries = cache.path().join(PROGRAMS_SUBDIR);
    let mut written = Vec::new();
    let listing = fs::read_dir(&entries).with_context(|| {
        format!(
            "--prepare: the run wrote no program cache ({})",
            entries.display()
        )
    })?;
    for item in listing {
        let item = item.with_context(|| format!("--prepare: cannot list {}", entries.display()))?;
        let file_name = item.file_name();
        let Some(stem) = file_name.to_str().and_then(|n| n.strip_suffix(".bin")) else {
            continue;
        };
        let Some(key) = parse_key(stem) else {
            continue;
        };
        let bytes = fs::read(item.path())
            .with_context(|| format!("--prepare: cannot read {}", item.path().display()))?;
        decode_entry(&bytes, &key).map_err(|why| {
            anyhow::anyhow!("--prepare: the entry {stem}.bin is not valid: {why}")
        })?;
        if written.is_empty() {
            create_prepared_dir(&prepared)?;
        }
        let target = prepared.join(format!("{stem}.bin"));
        let mut tmp = tempfile::NamedTempFile::new_in(&prepared)
            .with_context(|| format!("--prepare: cannot write into {}", prepared.display()))?;
        std::io::Write::write_all(&mut tmp, &bytes)
            .and_then(|()| tmp.as_file().sync_all())
            .and_then(|()| {
                tmp.as_file()
                    .set_permissions(fs::Permissions::from_mode(0o644))
            })
            .with_context(|| format!("--prepare: cannot write {}", target.display()))?;
        tmp.persist(&target)
            .map_err(|e| e.error)
            .with_context(|| format!("--prepare: cannot write {}", target.display()))?;
        written.push(target);
    }
    if written.is_empty() {
        bail!(
            "--prepare: the device's program was not cached (a driver whose binaries tcc does not cache?); the artifact is written, unprepared"
        );
    }
    Ok(written)
}

/// 64 hex digits: a cache key.
fn parse_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// Creates `dir` (mode 0755: others may read what it holds, only its owner
/// may write, as the runtime requires), refusing a symlink or a file.
fn create_prepared_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            bail!("--prepare: {} exists and is not a directory", dir.display())
        }
        Ok(_) => {}
        Err(_) => {
            fs::create_dir(dir)
                .with_context(|| format!("--prepare: cannot create {}", dir.display()))?;
        }
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("--prepare: cannot set the mode of {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_64_hex_digits() {
        let hex: String = (0..32).map(|i| format!("{:02x}", i * 7)).collect();
        let key = parse_key(&hex).unwrap();
        assert_eq!(key[1], 7);
        assert_eq!(key[31], 217);
        assert!(parse_key(&hex[1..]).is_none());
        assert!(parse_key(&"zz".repeat(32)).is_none());
        assert!(parse_key("").is_none());
    }
}
