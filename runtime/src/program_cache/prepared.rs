//! Prepared programs: driver binaries that `tcc compile --prepare` built at
//! build time and wrote next to the artifact, in `<artifact>.prepared/`,
//! one entry per device (`<key>.bin`, the program cache's entry format), so
//! that the first run on that device loads its kernels instead of compiling
//! them (PoCL's run-time compile is most of a CPU cold start: ResNet-50's
//! first result from empty caches took 10 s, and 1.1 s prepared).
//!
//! A prepared entry is found by the same key as a cache entry (platform,
//! device, driver version, build options, source hash), so another CPU or
//! driver simply finds no file and builds from source. It is native code
//! beside native code (the artifact), so it is trusted as much as the
//! artifact and no more: the directory and the file must not be symlinks,
//! must be owned by this user or by the artifact's owner, and must not be
//! writable by their group or others; the file must be a regular file (on
//! the opened handle) of at most the entry size limit, and its header must
//! name the key and hash its payload. Anything else is refused with the
//! reason, and the program is built from source.

use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::entry::{Key, decode_entry, hex};

/// The suffix of the directory next to an artifact that holds its prepared
/// programs: `model.so` has `model.so.prepared/`.
pub const PREPARED_SUFFIX: &str = ".prepared";

/// Where an artifact's prepared programs are, and whom they may belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedDir {
    /// The artifact file, as it was loaded.
    pub artifact: PathBuf,
    pub dir: PathBuf,
    /// The owner of the artifact file: its prepared entries may belong to
    /// it (an artifact installed by another user, root say) or to the user
    /// running it.
    pub artifact_owner: Option<u32>,
}

impl PreparedDir {
    /// The prepared directory of the artifact at `artifact`
    /// (`<artifact>.prepared`), or `None` when `artifact` has no file name.
    pub fn beside(artifact: &Path) -> Option<Self> {
        let name = artifact.file_name()?;
        let mut dir_name = name.to_os_string();
        dir_name.push(PREPARED_SUFFIX);
        Some(PreparedDir {
            artifact: artifact.to_path_buf(),
            dir: artifact.with_file_name(dir_name),
            artifact_owner: fs::metadata(artifact).ok().map(|m| m.uid()),
        })
    }

    /// The entry file for `key`.
    pub fn entry_path(&self, key: &Key) -> PathBuf {
        self.dir.join(format!("{}.bin", hex(key)))
    }

    /// Why `metadata` (of the directory or an entry) is not trusted.
    fn untrusted(&self, metadata: &fs::Metadata) -> Option<String> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        let owner = metadata.uid();
        if owner != me && Some(owner) != self.artifact_owner {
            return Some(format!(
                "owned by uid {owner}, neither this user (uid {me}) nor the artifact's owner"
            ));
        }
        let mode = metadata.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Some(format!("writable by its group or others (mode {mode:04o})"));
        }
        None
    }

    /// The checked entry bytes (header and payload) for `key`: `Ok(None)`
    /// when there is none, `Err(why)` when there is one that must not be
    /// loaded.
    pub fn read(&self, key: &Key, limit: u64) -> Result<Option<Vec<u8>>, String> {
        let dir_meta = match fs::symlink_metadata(&self.dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot inspect {}: {e}", self.dir.display())),
        };
        if dir_meta.file_type().is_symlink() {
            return Err(format!("{} is a symbolic link", self.dir.display()));
        }
        if !dir_meta.is_dir() {
            return Err(format!("{} is not a directory", self.dir.display()));
        }
        if let Some(why) = self.untrusted(&dir_meta) {
            return Err(format!("{} is {why}", self.dir.display()));
        }
        let path = self.entry_path(key);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
        };
        let metadata = file
            .metadata()
            .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
        if !metadata.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        if let Some(why) = self.untrusted(&metadata) {
            return Err(format!("{} is {why}", path.display()));
        }
        if metadata.len() > limit {
            return Err(format!(
                "{} is {} bytes, more than the {limit}-byte limit on entries",
                path.display(),
                metadata.len()
            ));
        }
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if bytes.len() as u64 > limit {
            return Err(format!("{} grew past the entry size limit", path.display()));
        }
        decode_entry(&bytes, key).map_err(|why| format!("{}: {why}", path.display()))?;
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program_cache::encode_entry;
    use std::os::unix::fs::PermissionsExt;

    fn setup(name: &str) -> (tempfile::TempDir, PreparedDir) {
        let root = tempfile::tempdir().unwrap();
        let artifact = root.path().join(name);
        fs::write(&artifact, b"not really an artifact").unwrap();
        let prepared = PreparedDir::beside(&artifact).unwrap();
        assert_eq!(prepared.dir, root.path().join(format!("{name}.prepared")));
        fs::create_dir(&prepared.dir).unwrap();
        fs::set_permissions(&prepared.dir, fs::Permissions::from_mode(0o755)).unwrap();
        (root, prepared)
    }

    fn write(path: &Path, bytes: &[u8], mode: u32) {
        fs::write(path, bytes).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_good_entry_is_read_and_a_missing_one_is_none() {
        let (_root, prepared) = setup("m.so");
        let key = [3u8; 32];
        assert_eq!(prepared.read(&key, 1 << 20), Ok(None));
        let entry = encode_entry(&key, b"binary");
        // Readable by everyone is fine (a shared install); writable is not.
        write(&prepared.entry_path(&key), &entry, 0o644);
        assert_eq!(prepared.read(&key, 1 << 20), Ok(Some(entry)));
    }

    #[test]
    fn damaged_foreign_loose_or_linked_entries_are_refused() {
        let (root, prepared) = setup("m.so");
        let key = [3u8; 32];
        let path = prepared.entry_path(&key);
        let mut entry = encode_entry(&key, b"binary");
        *entry.last_mut().unwrap() ^= 1;
        write(&path, &entry, 0o600);
        let err = prepared.read(&key, 1 << 20).unwrap_err();
        assert!(err.contains("hash mismatch"), "{err}");

        // Another key's entry renamed to this key's file name.
        write(&path, &encode_entry(&[4u8; 32], b"binary"), 0o600);
        let err = prepared.read(&key, 1 << 20).unwrap_err();
        assert!(err.contains("another key"), "{err}");

        write(&path, &encode_entry(&key, b"binary"), 0o666);
        let err = prepared.read(&key, 1 << 20).unwrap_err();
        assert!(err.contains("writable by its group or others"), "{err}");

        write(&path, &encode_entry(&key, b"binary"), 0o600);
        let err = prepared.read(&key, 10).unwrap_err();
        assert!(err.contains("limit"), "{err}");

        fs::remove_file(&path).unwrap();
        let elsewhere = root.path().join("elsewhere.bin");
        write(&elsewhere, &encode_entry(&key, b"binary"), 0o600);
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let err = prepared.read(&key, 1 << 20).unwrap_err();
        assert!(err.contains("cannot open"), "{err}");

        fs::remove_file(&path).unwrap();
        fs::set_permissions(&prepared.dir, fs::Permissions::from_mode(0o777)).unwrap();
        let err = prepared.read(&key, 1 << 20).unwrap_err();
        assert!(err.contains("writable by its group or others"), "{err}");
    }

    #[test]
    fn a_symlinked_prepared_directory_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let artifact = root.path().join("m.so");
        fs::write(&artifact, b"x").unwrap();
        let real = root.path().join("real");
        fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, root.path().join("m.so.prepared")).unwrap();
        let prepared = PreparedDir::beside(&artifact).unwrap();
        let err = prepared.read(&[1u8; 32], 1 << 20).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
    }
}
