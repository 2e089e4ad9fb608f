//! Builds an artifact's kernel program, with two cache levels so a model is
//! compiled by the driver once per machine rather than once per run.
//!
//! * In memory (per `Runtime`): the built `cl_program`, keyed by the cache
//!   key below; a second session of the same model reuses it.
//! * On disk, under `TCC_CACHE_DIR` (default: the user's cache directory +
//!   `/tcc`), in `opencl-programs/<key>.bin`: the driver's binary
//!   (`CL_PROGRAM_BINARIES`). The key is a SHA-256 over platform name and
//!   version, device name, driver version, source kind, build options and a
//!   hash of the source, so a driver upgrade or a different device misses.
//!
//! An entry file is a fixed header (magic, format version, key, payload
//! length, payload SHA-256) followed by the payload. An entry is validated
//! before the driver sees it: it must be a regular file (not a symlink, a
//! FIFO or a device; checked on the opened handle, opened without
//! blocking), at most [`MAX_ENTRY_BYTES`] (checked before reading), and its
//! header must match the key, length and hash. Then the driver must build
//! it and create its kernels. An entry that fails any check is evicted
//! (removed) and rebuilt from source. Every file operation on a key's
//! entry happens under that key's lock file, `<key>.lock` (an exclusive
//! `flock`), so only one process builds a given entry; the others wait for
//! it (up to [`LOCK_TIMEOUT_ENV`] seconds, default
//! [`DEFAULT_LOCK_TIMEOUT_SECS`]) and then load what it wrote, or, after the
//! timeout, build from source without writing.
//!
//! A driver can also crash on a bad binary (PoCL asserts in
//! `pocl_binary_deserialize` on a truncated one) instead of refusing it.
//! So while the driver loads an entry, a marker file `<key>.loading` exists;
//! a process that finds the marker while holding the key's lock knows that
//! the previous load died in the driver, and evicts the entry. A key whose
//! entry is evicted twice in a row gets a `<key>.bypass` file: from then on
//! its program is built from source and never cached (delete the file, or
//! the cache directory, to try again).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opencl3::context::Context;
use opencl3::program::Program;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::device::DeviceInfo;
use crate::error::{Error, Result};

/// Environment variable naming the cache directory.
pub const CACHE_DIR_ENV: &str = "TCC_CACHE_DIR";
/// Subdirectory of the cache directory holding program binaries.
pub const PROGRAMS_SUBDIR: &str = "opencl-programs";

/// Environment variable: how many seconds a process waits for another
/// one that holds a cache entry's lock (is building it) before building the
/// program itself without writing the entry.
pub const LOCK_TIMEOUT_ENV: &str = "TCC_CACHE_LOCK_TIMEOUT";
/// The default of [`LOCK_TIMEOUT_ENV`]: longer than PoCL's slowest first
/// build of a large model (about 250 s).
pub const DEFAULT_LOCK_TIMEOUT_SECS: u64 = 600;
/// The largest entry file read; a larger one is evicted unread. Driver
/// binaries of the largest models are tens of MB.
pub const MAX_ENTRY_BYTES: u64 = 1 << 30;

const MAGIC: &[u8; 8] = b"TCCPROG\0";
const FORMAT_VERSION: u32 = 1;
/// magic + version + reserved + key + payload length + payload hash.
pub const HEADER_LEN: usize = 8 + 4 + 4 + 32 + 8 + 32;

pub type Key = [u8; 32];

/// Kernel program format (`enum tcc_source_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SourceKind {
    OpenClC,
    SpirV,
    Ptx,
}

impl SourceKind {
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::OpenClC => "OpenCL C",
            SourceKind::SpirV => "SPIR-V",
            SourceKind::Ptx => "PTX",
        }
    }
}

/// What to build.
#[derive(Clone, Copy, Debug)]
pub struct ProgramSource<'a> {
    pub kind: SourceKind,
    pub bytes: &'a [u8],
    pub options: &'a str,
}

/// Where a session's program came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ProgramOrigin {
    /// Compiled by the driver from source.
    SourceBuild,
    /// Loaded from a binary in the on-disk cache.
    DiskHit,
    /// Reused from this runtime's memory.
    MemoryHit,
}

impl std::fmt::Display for ProgramOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProgramOrigin::SourceBuild => "built from source",
            ProgramOrigin::DiskHit => "loaded from the disk cache",
            ProgramOrigin::MemoryHit => "reused from memory",
        })
    }
}

/// Cache counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Driver compiles from source.
    pub source_builds: u64,
    /// Programs created from a cached binary.
    pub disk_hits: u64,
    /// Programs reused from memory.
    pub memory_hits: u64,
    /// Entries written to disk.
    pub disk_writes: u64,
    /// Entries found corrupt, truncated, foreign or refused by the driver,
    /// removed and rebuilt.
    pub disk_rejects: u64,
    /// Cache directory or file operations that failed (the build still
    /// succeeds; the entry is just not cached).
    pub disk_errors: u64,
    /// Programs built from source without touching the disk cache because
    /// their key is bypassed (its entry was evicted twice in a row).
    pub bypassed: u64,
    /// Times this runtime waited for another process that held an entry's
    /// lock (was building it).
    pub lock_waits: u64,
    /// Times it gave up waiting and built without writing the entry.
    pub lock_timeouts: u64,
    /// What the last reject or disk error was.
    pub last_disk_problem: Option<String>,
}

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

fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache directory: `TCC_CACHE_DIR` if set and non-empty, else the
/// user's cache directory + `/tcc`; `None` if neither exists.
pub fn default_cache_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => dirs::cache_dir().map(|d| d.join("tcc")),
    }
}

/// The files of one key in the entries directory.
struct EntryPaths {
    entry: PathBuf,
    lock: PathBuf,
    loading: PathBuf,
    evicted: PathBuf,
    bypass: PathBuf,
}

impl EntryPaths {
    fn new(dir: &Path, key: &Key) -> Self {
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
struct KeyLock {
    _file: File,
    path: PathBuf,
}

impl KeyLock {
    /// Waits up to `timeout` for the lock at `path`: `Ok(None)` on timeout;
    /// `waited` tells whether another process held it.
    fn acquire(path: &Path, timeout: Duration, waited: &mut bool) -> std::io::Result<Option<Self>> {
        let deadline = Instant::now() + timeout;
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)?;
            match file.try_lock() {
                Ok(()) => {
                    // The holder before us may have removed the file after we
                    // opened it: then we hold a lock on a file nobody else
                    // can find, so start over on the current one.
                    if same_file(&file, path) {
                        return Ok(Some(KeyLock {
                            _file: file,
                            path: path.to_path_buf(),
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

impl Drop for KeyLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
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
enum ReadProblem {
    Missing,
    /// Evict it: a symlink, not a regular file, too large.
    Reject(String),
    /// An I/O error: leave it.
    Io(String),
}

/// Reads the entry at `path` after checking, on the opened handle, that it
/// is a regular file of at most `limit` bytes. A symlink is not followed,
/// and a FIFO does not block the open.
fn read_entry_file(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, ReadProblem> {
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

/// Programs built for one device, in memory and on disk.
pub struct ProgramCache {
    memory: HashMap<Key, Arc<Program>>,
    dir: Option<PathBuf>,
    stats: CacheStats,
    lock_timeout: Duration,
    max_entry_bytes: u64,
    /// Entries written later, from the program in `memory`, by
    /// [`ProgramCache::finish_writes`] (the runtime's drop, `cache_stats`,
    /// `wait_for_cache_writes`): each holds its key's lock until then.
    deferred: Vec<DeferredEntry>,
}

/// An entry whose writing waits until the process is done with its first
/// calls (see [`DEFER_WRITES_ON_POCL`]).
struct DeferredEntry {
    device: DeviceInfo,
    key: Key,
    path: PathBuf,
    _lock: Option<KeyLock>,
}

impl ProgramCache {
    /// `cache_dir`: the cache directory (entries go in its
    /// `opencl-programs/`), or `None` for no disk cache. The lock timeout
    /// comes from [`LOCK_TIMEOUT_ENV`].
    pub fn new(cache_dir: Option<PathBuf>) -> Self {
        let seconds = std::env::var(LOCK_TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or(DEFAULT_LOCK_TIMEOUT_SECS as f64);
        ProgramCache {
            memory: HashMap::new(),
            dir: cache_dir.map(|d| d.join(PROGRAMS_SUBDIR)),
            stats: CacheStats::default(),
            lock_timeout: Duration::from_secs_f64(seconds.min(1e9)),
            max_entry_bytes: MAX_ENTRY_BYTES,
            deferred: Vec::new(),
        }
    }

    /// The directory holding entry files, if the disk cache is on.
    pub fn entries_dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The counters, after waiting for entries still being written.
    pub fn stats(&mut self) -> CacheStats {
        self.finish_writes();
        self.stats.clone()
    }

    /// The built program for `source`, from memory, disk or the driver.
    pub fn get_or_build(
        &mut self,
        context: &Context,
        device: &DeviceInfo,
        source: &ProgramSource,
    ) -> Result<(Arc<Program>, ProgramOrigin)> {
        let key = cache_key(device, source);
        if let Some(p) = self.memory.get(&key) {
            self.stats.memory_hits += 1;
            return Ok((p.clone(), ProgramOrigin::MemoryHit));
        }
        let (program, origin) = match self.dir.clone() {
            Some(dir) => self.through_disk(context, device, source, &key, &dir)?,
            None => {
                let program = build_from_source(context, device, source)?;
                self.stats.source_builds += 1;
                (program, ProgramOrigin::SourceBuild)
            }
        };
        let program = Arc::new(program);
        self.memory.insert(key, program.clone());
        Ok((program, origin))
    }

    /// The program through the disk cache: under the key's lock, an entry
    /// that passes every check, else a build from source written back.
    fn through_disk(
        &mut self,
        context: &Context,
        device: &DeviceInfo,
        source: &ProgramSource,
        key: &Key,
        dir: &Path,
    ) -> Result<(Program, ProgramOrigin)> {
        let paths = EntryPaths::new(dir, key);
        if let Err(e) = fs::create_dir_all(dir) {
            self.disk_problem(false, format!("cannot create {}: {e}", dir.display()));
        }
        let mut waited = false;
        let lock = match KeyLock::acquire(&paths.lock, self.lock_timeout, &mut waited) {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => {
                // Another process has been building this entry for longer
                // than the timeout: build our own, leave the entry to it.
                self.stats.lock_waits += 1;
                self.stats.lock_timeouts += 1;
                self.stats.last_disk_problem = Some(format!(
                    "{} stayed locked for {:.0} s ({LOCK_TIMEOUT_ENV}); built from source without caching",
                    paths.lock.display(),
                    self.lock_timeout.as_secs_f64()
                ));
                let program = build_from_source(context, device, source)?;
                self.stats.source_builds += 1;
                return Ok((program, ProgramOrigin::SourceBuild));
            }
            Err(e) => {
                // A read-only cache: entries can still be loaded, never
                // written (and a load that crashes cannot be recorded).
                self.disk_problem(false, format!("cannot lock {}: {e}", paths.lock.display()));
                None
            }
        };
        if waited {
            self.stats.lock_waits += 1;
        }
        if paths.bypass.exists() {
            self.stats.bypassed += 1;
            let program = build_from_source(context, device, source)?;
            self.stats.source_builds += 1;
            return Ok((program, ProgramOrigin::SourceBuild));
        }
        if lock.is_some() && paths.loading.exists() {
            let _ = fs::remove_file(&paths.loading);
            self.evict(
                &paths,
                "the last process that handed it to the driver died there (it left the marker file .loading); rebuilt from source".into(),
            );
        }
        if !paths.bypass.exists()
            && let Some(program) =
                self.load_entry(context, device, source, key, &paths, lock.is_some())
        {
            self.stats.disk_hits += 1;
            if paths.evicted.exists() {
                let _ = fs::remove_file(&paths.evicted);
            }
            return Ok((program, ProgramOrigin::DiskHit));
        }
        let program = build_from_source(context, device, source)?;
        self.stats.source_builds += 1;
        if paths.bypass.exists() {
            self.stats.bypassed += 1;
        } else if DEFER_WRITES_ON_POCL
            && binaries_compile_every_kernel(device)
            && source.kind == SourceKind::OpenClC
        {
            // The lock goes with the entry: other processes wait for it.
            self.deferred.push(DeferredEntry {
                device: device.clone(),
                key: *key,
                path: paths.entry.clone(),
                _lock: lock,
            });
            return Ok((program, ProgramOrigin::SourceBuild));
        } else {
            self.store_entry(device, &program, key, &paths.entry);
        }
        drop(lock);
        Ok((program, ProgramOrigin::SourceBuild))
    }

    fn disk_problem(&mut self, reject: bool, what: String) {
        if reject {
            self.stats.disk_rejects += 1;
        } else {
            self.stats.disk_errors += 1;
        }
        self.stats.last_disk_problem = Some(what);
    }

    /// Removes a bad entry and counts it; the second eviction in a row of
    /// the same key bypasses the cache for that key from then on.
    fn evict(&mut self, paths: &EntryPaths, why: String) {
        self.disk_problem(true, format!("{}: {why}", paths.entry.display()));
        match fs::remove_file(&paths.entry) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.disk_problem(
                false,
                format!("cannot remove {}: {e}", paths.entry.display()),
            ),
        }
        let marker = if paths.evicted.exists() {
            let _ = fs::remove_file(&paths.evicted);
            &paths.bypass
        } else {
            &paths.evicted
        };
        if let Err(e) = fs::write(marker, format!("{why}\n")) {
            self.disk_problem(false, format!("cannot write {}: {e}", marker.display()));
        }
    }

    /// A program from the entry at `paths.entry`, or `None` (entry missing,
    /// or rejected and evicted). With `locked`, the `.loading` marker
    /// exists while the driver has the binary.
    fn load_entry(
        &mut self,
        context: &Context,
        device: &DeviceInfo,
        source: &ProgramSource,
        key: &Key,
        paths: &EntryPaths,
        locked: bool,
    ) -> Option<Program> {
        let path = &paths.entry;
        let bytes = match read_entry_file(path, self.max_entry_bytes) {
            Ok(b) => b,
            Err(ReadProblem::Missing) => return None,
            Err(ReadProblem::Io(what)) => {
                self.disk_problem(false, what);
                return None;
            }
            Err(ReadProblem::Reject(why)) => {
                self.evict(paths, format!("{why}; rebuilt from source"));
                return None;
            }
        };
        let problem = match decode_entry(&bytes, key) {
            Ok(payload) => {
                if locked && let Err(e) = fs::write(&paths.loading, std::process::id().to_string())
                {
                    self.disk_problem(
                        false,
                        format!("cannot write {}: {e}", paths.loading.display()),
                    );
                }
                let loaded = program_from_binary(context, device, payload, source.options);
                if locked {
                    let _ = fs::remove_file(&paths.loading);
                }
                match loaded {
                    Ok(p) => return Some(p),
                    Err(e) => format!("the driver refused the cached binary: {e}"),
                }
            }
            Err(p) => p.to_string(),
        };
        self.evict(paths, format!("{problem}; rebuilt from source"));
        None
    }

    fn store_entry(&mut self, device: &DeviceInfo, program: &Program, key: &Key, path: &Path) {
        match write_entry(device, program, key, path) {
            Ok(()) => self.stats.disk_writes += 1,
            Err(why) => self.disk_problem(false, why),
        }
    }

    /// Writes the deferred entries and counts them (`disk_writes`, or
    /// `disk_errors`).
    pub fn finish_writes(&mut self) {
        for entry in std::mem::take(&mut self.deferred) {
            match self.memory.get(&entry.key).cloned() {
                Some(program) => self.store_entry(&entry.device, &program, &entry.key, &entry.path),
                None => self.disk_problem(false, "a deferred entry's program is gone".into()),
            }
        }
    }

    /// Entries still to be written (deferred).
    pub fn pending_writes(&self) -> usize {
        self.deferred.len()
    }
}

/// Whether entries whose binary costs a compile of every kernel (PoCL's)
/// are written after the process's first calls rather than before them:
/// the program stays in memory and [`ProgramCache::finish_writes`]
/// writes the entry when the runtime is dropped (or its cache counters are
/// read). ResNet-50's first call then waits for its own launches' compiles
/// only (14.4 s), not also for the binary's compile of every kernel for
/// any work-group size (16.5 s), which moves to the end of the process.
/// (Writing it from a second context on another thread instead, to overlap
/// the two compiles, made processes abort inside PoCL when they released
/// their programs: `pocl_release_dlhandle_cache: Assertion found->ref_count
/// > 0`.)
const DEFER_WRITES_ON_POCL: bool = true;

/// Whether asking the driver for a program's binary
/// (`CL_PROGRAM_BINARIES`) compiles every kernel of it. PoCL does (a
/// work-group function of dynamic size per kernel, so that the binary runs
/// without a compiler), which made it half of ResNet-50's cold start when
/// done before the first call; tcc defers the entry until after it.
pub fn binaries_compile_every_kernel(device: &DeviceInfo) -> bool {
    device.platform_name.contains("Portable Computing Language")
}

/// Writes `program`'s binary as the entry for `key` at `path` (a temporary
/// file, then a rename); the error says what failed.
fn write_entry(
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
    let entry = encode_entry(key, &binary);
    let written = (|| -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&entry)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    })();
    written.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Builds `source` with the driver, returning the build log on failure.
fn build_from_source(
    context: &Context,
    device: &DeviceInfo,
    source: &ProgramSource,
) -> Result<Program> {
    let mut program = match source.kind {
        SourceKind::OpenClC => {
            let text = std::str::from_utf8(source.bytes).map_err(|e| {
                Error::Unsupported(format!("the artifact's OpenCL C source is not UTF-8: {e}"))
            })?;
            Program::create_from_source(context, text)
                .map_err(|e| Error::cl("clCreateProgramWithSource", e))?
        }
        SourceKind::SpirV => {
            if device.il_version.is_none() {
                return Err(Error::Unsupported(format!(
                    "the artifact's kernels are SPIR-V but {} accepts no intermediate language \
                     (CL_DEVICE_IL_VERSION is empty); compile the model to OpenCL C instead",
                    device.name
                )));
            }
            Program::create_from_il(context, source.bytes)
                .map_err(|e| Error::cl("clCreateProgramWithIL", e))?
        }
        // NVIDIA's OpenCL takes PTX text as a program binary and JITs it.
        SourceKind::Ptx => {
            // SAFETY: the device belongs to the context (both come from the runtime).
            unsafe { Program::create_from_binary(context, &[device.device.id()], &[source.bytes]) }
                .map_err(|e| Error::cl("clCreateProgramWithBinary (PTX)", e))?
        }
    };
    let text = (source.kind == SourceKind::OpenClC)
        .then(|| std::str::from_utf8(source.bytes).ok())
        .flatten();
    build(&mut program, device, source.options, text)?;
    Ok(program)
}

fn program_from_binary(
    context: &Context,
    device: &DeviceInfo,
    binary: &[u8],
    options: &str,
) -> Result<Program> {
    // SAFETY: the device belongs to the context (both come from the runtime).
    let mut program =
        unsafe { Program::create_from_binary(context, &[device.device.id()], &[binary]) }
            .map_err(|e| Error::cl("clCreateProgramWithBinary", e))?;
    build(&mut program, device, options, None)?;
    // The session creates the kernels by name; a binary whose kernels the
    // driver cannot create is refused here, while it can still be evicted.
    opencl3::kernel::create_program_kernels(&program)
        .map_err(|e| Error::cl("clCreateKernelsInProgram", e))?;
    Ok(program)
}

/// Builds `program`; a failure carries the build log and, given the
/// OpenCL C `source`, the kernels the log's errors point into.
fn build(
    program: &mut Program,
    device: &DeviceInfo,
    options: &str,
    source: Option<&str>,
) -> Result<()> {
    let id = device.device.id();
    program.build(&[id], options).map_err(|e| {
        let log = program
            .get_build_log(id)
            .unwrap_or_else(|e| format!("(no build log: {e})"))
            .trim()
            .to_string();
        Error::Build {
            device: device.name.clone(),
            code: e.to_string(),
            kernels: source
                .map(|s| kernels_with_errors(s, &log))
                .unwrap_or_default(),
            log,
        }
    })
}

/// The kernels of OpenCL C `source` that a build log's error lines point
/// into: drivers name the source line (`file.cl:LINE:COLUMN: error: ...`
/// from clang-based ones, PoCL and NVIDIA among them), and a kernel spans
/// from its `__kernel` line to the next one's.
pub fn kernels_with_errors(source: &str, log: &str) -> Vec<String> {
    // (first line, name) of each kernel, in order; lines count from 1.
    let mut starts: Vec<(usize, String)> = Vec::new();
    let mut pending_kernel = None;
    for (index, line) in source.lines().enumerate() {
        let line_number = index + 1;
        if line.trim_start().starts_with("__kernel") {
            pending_kernel = Some(line_number);
        }
        if let Some(start) = pending_kernel
            && let Some(rest) = line.split("void ").nth(1)
            && let Some(name) = rest.split('(').next()
        {
            starts.push((start, name.trim().to_string()));
            pending_kernel = None;
        }
    }
    let mut kernels: Vec<String> = Vec::new();
    for line in log.lines().filter(|l| l.contains("error")) {
        let Some(line_number) = first_line_reference(line) else {
            continue;
        };
        if let Some((_, name)) = starts.iter().rev().find(|(start, _)| *start <= line_number)
            && !kernels.contains(name)
        {
            kernels.push(name.clone());
        }
    }
    kernels
}

/// The LINE of the first `:LINE:COLUMN:` in a log line.
fn first_line_reference(line: &str) -> Option<usize> {
    let parts: Vec<&str> = line.split(':').collect();
    parts.windows(3).find_map(|w| {
        let numeric = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        (numeric(w[0]) && numeric(w[1]))
            .then(|| w[0].parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_errors_name_the_kernels_their_lines_fall_in() {
        let source = "/* prelude */\ninline float f(float x) { return x; }\n\n__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\nvoid conv_0(__global float* a0) {\n  a0[0] = 1.0f;\n}\n\n__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\nvoid softmax_1(__global float* a0) {\n  a0[0] = nope;\n}\n";
        let log = "/root/.cache/pocl/kcache/tempfile_x.cl:11:11: error: use of undeclared identifier 'nope'\n/tmp/t.cl:6:3: warning: something\n1 error generated.";
        assert_eq!(kernels_with_errors(source, log), vec!["softmax_1"]);
        let both = "a.cl:6:3: error: x\na.cl:11:2: error: y\na.cl:10:1: error: z";
        assert_eq!(
            kernels_with_errors(source, both),
            vec!["conv_0", "softmax_1"]
        );
        // An error in the prelude, or a log without line references, names none.
        assert!(kernels_with_errors(source, "a.cl:2:8: error: p").is_empty());
        assert!(kernels_with_errors(source, "error: out of resources").is_empty());
        let error = Error::Build {
            device: "pthread".into(),
            code: "CL_BUILD_PROGRAM_FAILURE".into(),
            kernels: kernels_with_errors(source, log),
            log: log.into(),
        };
        assert!(
            error
                .to_string()
                .starts_with("kernel program failed to build for pthread: CL_BUILD_PROGRAM_FAILURE (errors in kernel softmax_1)\nbuild log:"),
            "{error}"
        );
    }

    #[test]
    fn keys_cover_device_driver_source_and_options() {
        let dev = |name: &str, driver: &str| DeviceInfo {
            index: 0,
            platform_name: "P".into(),
            platform_version: "OpenCL 3.0".into(),
            name: name.into(),
            kind: crate::device::DeviceKind::Cpu,
            opencl_c_version: String::new(),
            il_version: None,
            fp16: false,
            compute_units: 1,
            global_mem_bytes: 1,
            local_mem_bytes: 1,
            max_alloc_bytes: 1,
            base_align_bytes: 128,
            host_unified_memory: false,
            max_work_group_size: 1,
            driver_version: driver.into(),
            device: opencl3::device::Device::new(std::ptr::null_mut()),
            sub_device: None,
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
