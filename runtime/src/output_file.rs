//! Writing an output file the way command-line tools should: a regular file
//! (or a new one) is replaced atomically, through a temporary file in the
//! same directory and a rename, so that a failure never leaves it half
//! written; anything else is written through, as coreutils do.
//!
//! - A symlink is followed: its target is written (replaced atomically if it
//!   is a regular file), and the link stays a link.
//! - A character device, block device, FIFO or socket (`/dev/null`,
//!   `/dev/stdout` on a terminal or pipe, a named pipe) is opened for
//!   writing and written to; it is never replaced by a regular file. So is
//!   a regular file reached through a link that cannot be followed by name
//!   (`/dev/stdout` redirected to a deleted file).
//! - A directory is an error.
//!
//! A new file gets mode 0666 (0777 when `executable`) less the umask, as
//! `open(2)` would give it; a replaced regular file keeps its mode. This one
//! function serves `tcc compile -o`, `tcc import -o` and
//! `tcc-run --output=@FILE`; [`append_output`] serves `--output=+FILE`.
//!
//! No partial file is left behind: a temporary is named
//! `.tcc-out-<pid>-XXXXXX`; a failing append is cut back to the file's
//! length before it; the tools call [`remove_partial_files_on_interrupt`],
//! so that SIGINT or SIGTERM removes the temporaries (and cuts back the
//! appends) of writes in progress before the process dies of the signal;
//! and a write removes the temporaries that dead processes (SIGKILL, a
//! crash) left in its directory.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The prefix of temporary output files; the process id follows.
pub const TEMP_PREFIX: &str = ".tcc-out-";

/// A write in progress that an interrupt must undo.
enum Pending {
    /// This process's temporaries (`prefix`, which holds the pid) in a
    /// directory: registered before the temporary is created, so that a
    /// signal between its creation and its registration finds it too.
    TemporariesIn(PathBuf, String),
    /// A file being appended to, and its length before.
    Append(PathBuf, u64),
}

static PENDING: Mutex<Option<HashMap<u64, Pending>>> = Mutex::new(None);
static NEXT_PENDING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Registers `pending` until dropped.
struct PendingGuard(u64);

impl PendingGuard {
    fn new(pending: Pending) -> Self {
        let id = NEXT_PENDING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        map.get_or_insert_with(HashMap::new).insert(id, pending);
        PendingGuard(id)
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let mut map = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = map.as_mut() {
            map.remove(&self.0);
        }
    }
}

/// Undoes every write in progress: removes temporaries, cuts appends back.
fn undo_pending_writes() {
    let mut map = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for (_, pending) in map.take().unwrap_or_default() {
        match pending {
            Pending::TemporariesIn(directory, prefix) => {
                for entry in std::fs::read_dir(&directory)
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    if entry.file_name().to_string_lossy().starts_with(&prefix) {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
            }
            Pending::Append(path, length) => {
                if let Ok(file) = OpenOptions::new().write(true).open(&path) {
                    let _ = file.set_len(length);
                }
            }
        }
    }
}

/// From now on, SIGINT and SIGTERM first undo the writes in progress
/// (temporary files removed, appends cut back), then end the process as the
/// signal would have (its default action, so the exit status says which).
/// A thread waits for the signals (`signal-hook`), so the clean-up does not
/// run in a signal handler. Call once, early in `main`.
pub fn remove_partial_files_on_interrupt() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("tcc-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                undo_pending_writes();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
}

/// Removes the temporary outputs (`.tcc-out-<pid>-*`) that processes no
/// longer running left in `directory`: only regular files of this user,
/// and only when their process is gone (`kill(pid, 0)` says ESRCH).
pub fn remove_stale_temporaries(directory: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    // SAFETY: no preconditions.
    let uid = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid > 0)
        else {
            continue;
        };
        // SAFETY: signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if !gone {
            continue;
        }
        let path = entry.path();
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.uid() == uid) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Appends what `write` writes to `path` (created if missing). A failure
/// (a full disk, an interrupt) cuts the file back to its length before, so
/// it never ends in a partial record. Errors do not repeat `path`.
pub fn append_output(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        // A FIFO or device: nothing to cut back.
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        return out.flush();
    }
    let before = metadata.len();
    let _pending = PendingGuard::new(Pending::Append(path.to_path_buf(), before));
    let written = (|| {
        let mut out = BufWriter::new(&file);
        write(&mut out)?;
        out.flush()?;
        file.sync_data()
    })();
    if let Err(e) = written {
        return Err(match file.set_len(before) {
            Ok(()) => e,
            Err(cut) => io::Error::new(
                e.kind(),
                format!("{e}; cutting it back to its {before} bytes failed too: {cut}"),
            ),
        });
    }
    Ok(())
}

/// How many symlinks [`resolve_symlinks`] follows before giving up (as
/// Linux's `ELOOP` limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// `path` with every symlink in its last component followed, even when the
/// final target does not exist yet (a dangling link names the file to
/// create). Relative link targets are taken relative to the link's
/// directory.
pub fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)?;
                current = if target.is_absolute() {
                    target
                } else {
                    current
                        .parent()
                        .map(|parent| parent.join(&target))
                        .unwrap_or(target)
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Writes the output `path` with `write` (see the module documentation).
/// Errors do not repeat `path`: the caller names it.
pub fn write_output(
    path: &Path,
    executable: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let named = |e: io::Error, what: &str| match what {
        "write" => e,
        _ => io::Error::new(e.kind(), format!("cannot {what} it: {e}")),
    };
    // What the kernel reaches through `path` (following every link,
    // including /proc's magic ones such as /dev/stdout -> /proc/self/fd/1).
    let existing = match std::fs::metadata(path) {
        Ok(metadata) => Some(metadata),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(named(e, "inspect")),
    };
    if let Some(metadata) = &existing {
        if metadata.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is a directory",
            ));
        }
        if !metadata.is_file() {
            // A device, FIFO or socket (/dev/null, a pipe behind
            // /dev/stdout): write through it.
            return write_through(path, false, write);
        }
    }
    // A regular file or a new one: replace it atomically at the end of its
    // symlinks. When the links cannot be followed by name (a /proc magic
    // link to a deleted or unnamed file), write through instead.
    let target = resolve_symlinks(path).map_err(|e| named(e, "resolve"))?;
    if let Some(metadata) = &existing
        && !same_inode(metadata, &target)
    {
        return write_through(path, true, write);
    }
    let directory = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    remove_stale_temporaries(directory);
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    let _pending = PendingGuard::new(Pending::TemporariesIn(
        directory.to_path_buf(),
        prefix.clone(),
    ));
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // open(2) takes the umask off this mode.
        let mode = if executable { 0o777 } else { 0o666 };
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    let temp = builder.tempfile_in(directory).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot create a temporary file in {} to write {}: {e}",
                directory.display(),
                path.display()
            ),
        )
    })?;
    {
        let mut out = BufWriter::new(temp.as_file());
        write(&mut out).map_err(|e| named(e, "write"))?;
        out.flush().map_err(|e| named(e, "write"))?;
    }
    if let Some(metadata) = &existing {
        // Replacing a regular file keeps its mode.
        temp.as_file()
            .set_permissions(metadata.permissions())
            .map_err(|e| named(e, "set the permissions of"))?;
    }
    temp.persist(&target).map_err(|e| named(e.error, "write"))?;
    Ok(())
}

/// Opens `path` for writing (without replacing it) and writes it.
fn write_through(
    path: &Path,
    truncate: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .truncate(truncate)
        .open(path)?;
    let mut out = BufWriter::new(file);
    write(&mut out)?;
    out.flush()
}

#[cfg(unix)]
fn same_inode(metadata: &std::fs::Metadata, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| m.dev() == metadata.dev() && m.ino() == metadata.ino())
}

#[cfg(not(unix))]
fn same_inode(_metadata: &std::fs::Metadata, path: &Path) -> bool {
    path.exists()
}

/// [`write_output`] of a byte string.
pub fn write_output_bytes(path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
    write_output(path, executable, |out| out.write_all(bytes))
}

/// Opens `path` for reading only if it is a regular file (not a FIFO, a
/// device or a directory), following symlinks; the check is made on the
/// opened handle, so nothing can swap the file in between. Opening does
/// not block on a FIFO.
pub fn open_regular_file(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?
    };
    #[cfg(not(unix))]
    let file = File::open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    use std::path::Path;

    #[test]
    fn a_new_file_respects_the_umask_and_a_replaced_one_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_output_bytes(&path, b"one", false).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let umask = current_umask();
        assert_eq!(mode, 0o666 & !umask, "umask {umask:o}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_output_bytes(&path, b"two", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let exe = dir.path().join("m.so");
        write_output_bytes(&exe, b"\x7fELF", true).unwrap();
        let mode = std::fs::metadata(&exe).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o777 & !umask);
    }

    fn current_umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
    }

    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("target.txt", &link).unwrap();
        write_output_bytes(&link, b"new", false).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link names the file to create.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("created.txt"), &dangling).unwrap();
        write_output_bytes(&dangling, b"made", false).unwrap();
        assert!(
            std::fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read(dir.path().join("created.txt")).unwrap(),
            b"made"
        );
        // A loop is an error, not a hang.
        let a = dir.path().join("loop_a");
        std::os::unix::fs::symlink("loop_b", &a).unwrap();
        std::os::unix::fs::symlink("loop_a", dir.path().join("loop_b")).unwrap();
        assert!(write_output_bytes(&a, b"x", false).is_err());
    }

    #[test]
    fn special_files_are_written_through_not_replaced() {
        // (Not tried on /dev/null itself: a regression would destroy it on
        // the test machine. A FIFO takes the same path: not a regular file.)
        // A FIFO: the bytes arrive at its reader and it stays a FIFO.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(&fifo).unwrap())
        };
        write_output_bytes(&fifo, b"through the pipe", false).unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        // A directory is refused.
        let err = write_output_bytes(dir.path(), b"x", false).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn open_regular_file_refuses_fifos_and_devices_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let err = open_regular_file(&fifo).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(open_regular_file(Path::new("/dev/zero")).is_err());
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(open_regular_file(&file).is_ok());
    }
}
