//! The on-disk cache entries: the entry format (a fixed header of magic,
//! format version, key, payload length and payload SHA-256, then the
//! payload), the cache key, the files of one key (entry, lock, loading
//! marker, eviction and bypass records), the per-key lock, and reading an
//! entry file safely (a regular file, not followed through a symlink, not
//! blocking on a FIFO, at most a size limit).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use opencl3::program::Program;
use sha2::{Digest, Sha256};

use super::ProgramSource;
use crate::device::DeviceInfo;

const MAGIC: &[u8; 8] = b"TCCPROG\0";
const FORMAT_VERSION: u32 = 1;
/// magic + version + reserved + key + payload length + payload hash.
pub const HEADER_LEN: usize = 8 + 4 + 4 + 32 + 8 + 32;

pub type Key = [u8; 32];

/// Why an entry file was not trusted.
#[derive(Debug, PartialEq, Eq)]
pub enum EntryProblem {
    Truncated { len: usize },
    BadMagic,
    Version(u32),
    ForeignKey,
    LengthMismatch { declared: u64, actual: u64 },
    HashMismatch,
}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryProblem::Truncated { len } => {
                write!(f, "truncated ({len} bytes, header alone is {HEADER_LEN})")
            }
            EntryProblem::BadMagic => write!(f, "not a tcc program cache entry (bad magic)"),
            EntryProblem::Version(v) => {
                write!(f, "entry format version {v}, expected {FORMAT_VERSION}")
            }
            EntryProblem::ForeignKey => write!(f, "entry was written for another key"),
            EntryProblem::LengthMismatch { declared, actual } => {
                write!(f, "payload is {actual} bytes, header says {declared}")
            }
            EntryProblem::HashMismatch => write!(f, "payload hash mismatch (corrupt)"),
        }
    }
}

/// Serialises an entry: header + payload.
pub fn encode_entry(key: &Key, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

/// Checks an entry against `key` and returns its payload.
pub fn decode_entry<'a>(bytes: &'a [u8], key: &Key) -> std::result::Result<&'a [u8], EntryProblem> {
    if bytes.len() < HEADER_LEN {
        return Err(EntryProblem::Truncated { len: bytes.len() });
    }
    let (header, payload) = bytes.split_at(HEADER_LEN);
    if &header[0..8] != MAGIC {
        return Err(EntryProblem::BadMagic);
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != FORMAT_VERSION {
        return Err(EntryProblem::Version(version));
    }
    if &header[16..48] != key {
        return Err(EntryProblem::ForeignKey);
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[48..56]);
    let declared = u64::from_le_bytes(len);
    if declared != payload.len() as u64 {
        return Err(EntryProblem::LengthMismatch {
            declared,
            actual: payload.len() as u64,
        });
    }
    if Sha256::digest(payload).as_slice() != &header[56..88] {
        return Err(EntryProblem::HashMismatch);
    }
    Ok(payload)
}

/// The cache key of `source` on `device`.
pub fn cache_key(device: &DeviceInfo, source: &ProgramSource) -> Key {
    let mut h = Sha256::new();
    for field in [
        "tcc program cache v1",
        &device.platform_name,
        &device.platform_version,
        &device.name,
        &device.driver_version,
        source.kind.name(),
        source.options,
    ] {
        h.update((field.len() as u64).to_le_bytes());
        h.update(field.as_bytes());
    }
    h.update(Sha256::digest(source.bytes));
    h.finalize().into()
}

pub(super) fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// The files of one key in the entries directory.
pub(super) struct EntryPaths {
    pub(super) entry: PathBuf,
    pub(super) lock: PathBuf,
    pub(super) loading: PathBuf,
    pub(super) evicted: PathBuf,
    pub(super) bypass: PathBuf,
}

impl EntryPaths {
    pub(super) fn new(dir: &Path, key: &Key) -> Self {
        let name = hex(key);
        let file = |suffix: &str| dir.join(format!("{name}.{suffix}"));
        EntryPaths {
            entry: file("bin"),
            lock: file("lock"),
            loading: file("loading"),
            evicted: file("evicted"),
            bypass: file("bypass"),
        }
    }
}

/// An exclusive `flock` on a key's lock file, held while the entry is read,
/// loaded, built or written. Dropping it removes the file, then unlocks.
pub(super) struct KeyLock {
    _file: File,
    path: PathBuf,
    /// Passed to another process ([`KeyLock::into_parts`]): it removes
    /// the file when done, not this one.
    handed_over: bool,
}

impl KeyLock {
    /// Waits up to `timeout` for the lock at `path`: `Ok(None)` on timeout;
    /// `waited` tells whether another process held it.
    pub(super) fn acquire(
        path: &Path,
        timeout: Duration,
        waited: &mut bool,
    ) -> std::io::Result<Option<Self>> {
        let deadline = Instant::now() + timeout;
        loop {
            let file = super::private::open_lock_file(path)?;
            match file.try_lock() {
                Ok(()) => {
                    // The holder before us may have removed the file after we
                    // opened it: then we hold a lock on a file nobody else
                    // can find, so start over on the current one.
                    if same_file(&file, path) {
                        return Ok(Some(KeyLock {
                            _file: file,
                            path: path.to_path_buf(),
                            handed_over: false,
                        }));
                    }
                }
                Err(fs::TryLockError::WouldBlock) => {
                    *waited = true;
                    if Instant::now() >= deadline {
                        return Ok(None);
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

impl KeyLock {
    /// The locked file (a duplicate descriptor of the same open file, so
    /// the `flock` goes with it) and its path, without unlocking or
    /// removing it: to pass the lock to another process, which inherits
    /// the descriptor.
    pub(super) fn into_parts(mut self) -> std::io::Result<(File, PathBuf)> {
        let file = self._file.try_clone()?;
        self.handed_over = true;
        Ok((file, self.path.clone()))
    }

    /// A lock held through `file` (a locked descriptor another process
    /// passed on): dropping it removes `path` and unlocks, as usual.
    pub(super) fn from_parts(file: File, path: PathBuf) -> Self {
        KeyLock {
            _file: file,
            path,
            handed_over: false,
        }
    }
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        if !self.handed_over {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// Why an entry file could not be read as one.
pub(super) enum ReadProblem {
    Missing,
    /// Evict it: a symlink, not a regular file, too large.
    Reject(String),
    /// An I/O error: leave it.
    Io(String),
}

/// Reads the entry at `path` after checking, on the opened handle, that it
/// is a regular file of at most `limit` bytes. A symlink is not followed,
/// and a FIFO does not block the open.
pub(super) fn read_entry_file(
    path: &Path,
    limit: u64,
) -> std::result::Result<Vec<u8>, ReadProblem> {
    #[cfg(unix)]
    let opened = {
        use std::os::unix::fs::OpenOptionsExt;
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
    };
    #[cfg(not(unix))]
    let opened = File::open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadProblem::Missing),
        Err(e) => {
            let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            return Err(if is_link {
                ReadProblem::Reject("a symbolic link, not an entry file".into())
            } else {
                ReadProblem::Io(format!("cannot open {}: {e}", path.display()))
            });
        }
    };
    let metadata = file
        .metadata()
        .map_err(|e| ReadProblem::Io(format!("cannot inspect {}: {e}", path.display())))?;
    if !metadata.is_file() {
        return Err(ReadProblem::Reject(format!(
            "not a regular file ({:?})",
            metadata.file_type()
        )));
    }
    if let Some(why) = super::private::untrusted(&metadata) {
        return Err(ReadProblem::Reject(format!("{why}: not trusted")));
    }
    if metadata.len() > limit {
        return Err(ReadProblem::Reject(format!(
            "{} bytes, more than the {limit}-byte limit on entries",
            metadata.len()
        )));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadProblem::Io(format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > limit {
        return Err(ReadProblem::Reject(format!(
            "grew past the {limit}-byte limit while read"
        )));
    }
    Ok(bytes)
}

/// Writes `program`'s binary as the entry for `key` at `path` (a temporary
/// file, then a rename); the error says what failed.
pub(super) fn write_entry(
    device: &DeviceInfo,
    program: &Program,
    key: &Key,
    path: &Path,
) -> std::result::Result<(), String> {
    let binary = match program.get_binaries() {
        Ok(mut bins) if bins.len() == 1 && !bins[0].is_empty() => bins.remove(0),
        Ok(_) => {
            return Err(format!(
                "{} returned no program binary; not cached",
                device.name
            ));
        }
        Err(e) => return Err(format!("clGetProgramInfo(CL_PROGRAM_BINARIES): {e}")),
    };
    write_entry_bytes(&encode_entry(key, &binary), path)
}

/// Writes an encoded entry at `path` (a temporary file, then a rename);
/// the error says what failed.
pub(super) fn write_entry_bytes(entry: &[u8], path: &Path) -> std::result::Result<(), String> {
    let written = (|| -> std::io::Result<()> {
        // The entries directory is private already (`private::prepare`);
        // the temporary file is created 0600.
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(entry)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    })();
    written.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program_cache::SourceKind;

    #[test]
    fn keys_cover_device_driver_source_and_options() {
        let dev = |name: &str, driver: &str| DeviceInfo {
            driver_version: driver.into(),
            ..crate::device::tests::fake(0, name, crate::device::DeviceKind::Cpu)
        };
        let src = |bytes: &'static [u8], options: &'static str| ProgramSource {
            kind: SourceKind::OpenClC,
            bytes,
            options,
        };
        let base = cache_key(&dev("a", "1"), &src(b"k", ""));
        assert_eq!(base, cache_key(&dev("a", "1"), &src(b"k", "")));
        for other in [
            cache_key(&dev("b", "1"), &src(b"k", "")),
            cache_key(&dev("a", "2"), &src(b"k", "")),
            cache_key(&dev("a", "1"), &src(b"k2", "")),
            cache_key(&dev("a", "1"), &src(b"k", "-O2")),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn entry_round_trip_and_validation() {
        let key = [7u8; 32];
        let payload = b"driver binary bytes".to_vec();
        let entry = encode_entry(&key, &payload);
        assert_eq!(entry.len(), HEADER_LEN + payload.len());
        assert_eq!(decode_entry(&entry, &key).unwrap(), &payload[..]);

        assert_eq!(
            decode_entry(&entry[..10], &key),
            Err(EntryProblem::Truncated { len: 10 })
        );
        assert_eq!(
            decode_entry(&entry[..entry.len() - 1], &key),
            Err(EntryProblem::LengthMismatch {
                declared: payload.len() as u64,
                actual: payload.len() as u64 - 1
            })
        );
        assert_eq!(
            decode_entry(&entry, &[8u8; 32]),
            Err(EntryProblem::ForeignKey)
        );

        let mut bad = entry.clone();
        bad[0] = b'X';
        assert_eq!(decode_entry(&bad, &key), Err(EntryProblem::BadMagic));
        let mut bad = entry.clone();
        bad[8] = 9;
        assert_eq!(decode_entry(&bad, &key), Err(EntryProblem::Version(9)));
        let mut bad = entry.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(decode_entry(&bad, &key), Err(EntryProblem::HashMismatch));
        let mut bad = entry.clone();
        bad.push(0);
        assert!(matches!(
            decode_entry(&bad, &key),
            Err(EntryProblem::LengthMismatch { .. })
        ));
    }
}
