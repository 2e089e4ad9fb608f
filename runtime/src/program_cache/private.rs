//! Keeps the disk cache private. Cache entries are native code the driver
//! runs (PoCL binaries), and their SHA-256 guards against corruption, not
//! tampering; so, as ssh does with `~/.ssh`, the cache is trusted only if
//! nobody else can write to it: its directories are created 0700 and its
//! files 0600 whatever the umask, and a directory or entry not owned by
//! the effective user, or writable by its group or others, or a symlink, is
//! refused (the directory: the run goes on without the disk cache, with a
//! one-line warning; an entry: it is evicted and rebuilt).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the cache's directories.
pub const DIR_MODE: u32 = 0o700;
/// The mode of the cache's files.
pub const FILE_MODE: u32 = 0o600;

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why `metadata` (of a cache directory or file, from `lstat` or the open
/// handle) is not trusted, or `None`.
pub(super) fn untrusted(metadata: &fs::Metadata) -> Option<String> {
    let uid = effective_uid();
    if metadata.uid() != uid {
        return Some(format!(
            "owned by uid {}, not by this user (uid {uid})",
            metadata.uid()
        ));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Some(format!("writable by its group or others (mode {mode:04o})"));
    }
    None
}

/// Creates `dir` (mode 0700) if it is missing, then checks that it is a
/// real directory (not a symlink) that only this user can write to.
fn private_dir(dir: &Path) -> Result<(), String> {
    match DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => {
            // The umask may have cleared bits of 0700; set them exactly.
            fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
                .map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))?;
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let metadata =
        fs::symlink_metadata(dir).map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
    if metadata.file_type().is_symlink() {
        return Err(format!("{} is a symbolic link", dir.display()));
    }
    if !metadata.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    match untrusted(&metadata) {
        Some(why) => Err(format!("{} is {why}", dir.display())),
        None => Ok(()),
    }
}

/// Makes the entries directory `entries` and the cache directory above it
/// private (creating them, and the cache directory's missing parents, as
/// needed), or says why the disk cache must not be used.
pub(super) fn prepare(entries: &Path) -> Result<(), String> {
    let root = entries.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(root) = root {
        if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        private_dir(root)?;
    }
    private_dir(entries)
}

/// Creates (or truncates) the small file `path` with mode 0600, not
/// following a symlink, and writes `text` into it.
pub(super) fn write_small_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// Opens (creating, mode 0600) the lock file `path` for reading and
/// writing, not following a symlink.
pub(super) fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}
