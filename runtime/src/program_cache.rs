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
//!
//! The cache is private ([`private`]): entries are native code, so a cache
//! directory or entry that another user could have written is refused.
//!
//! An artifact may carry prepared programs ([`prepared`]: entries that
//! `tcc compile --prepare` wrote next to it). On a miss, the entry for the
//! key is taken from there (checked as strictly), copied into the cache and
//! loaded like a cache entry, so a driver crash on it is caught the same way.

mod build;
mod entry;
mod prepared;
mod private;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use opencl3::context::Context;
use opencl3::program::Program;
use serde::Serialize;

pub use build::kernels_with_errors;
use build::{build_from_source, program_from_binary};
use entry::{EntryPaths, KeyLock, ReadProblem, read_entry_file, write_entry, write_entry_bytes};
pub use entry::{EntryProblem, HEADER_LEN, Key, cache_key, decode_entry, encode_entry};
pub use prepared::{PREPARED_SUFFIX, PreparedDir};

use crate::device::DeviceInfo;
use crate::error::Result;

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
    /// Loaded from the binary `tcc compile --prepare` wrote next to the
    /// artifact (`<artifact>.prepared/`).
    Prepared,
}

impl std::fmt::Display for ProgramOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProgramOrigin::SourceBuild => "built from source",
            ProgramOrigin::DiskHit => "loaded from the disk cache",
            ProgramOrigin::MemoryHit => "reused from memory",
            ProgramOrigin::Prepared => "loaded from the artifact's prepared binary",
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
    /// Programs loaded from an artifact's prepared binary
    /// (`<artifact>.prepared/`, `tcc compile --prepare`).
    pub prepared_loads: u64,
    /// Prepared binaries refused (damaged, for another key, not trusted,
    /// or refused by the driver); the program was built from source.
    pub prepared_rejects: u64,
    /// What the last reject or disk error was.
    pub last_disk_problem: Option<String>,
    /// Why the disk cache was not used at all: its directory is not
    /// private (owned by another user, writable by others, a symlink) or
    /// could not be created.
    pub refused_dir: Option<String>,
}

/// The cache directory: `TCC_CACHE_DIR` if set and non-empty, else the
/// user's cache directory + `/tcc`; `None` if neither exists.
pub fn default_cache_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => dirs::cache_dir().map(|d| d.join("tcc")),
    }
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
    /// Whether `dir` was created or checked private ([`private::prepare`]).
    dir_checked: bool,
}

/// An entry whose writing waits until the process is done with its first
/// calls (see [`DEFER_WRITES_ON_POCL`]).
struct DeferredEntry {
    device: DeviceInfo,
    key: Key,
    path: PathBuf,
    lock: Option<KeyLock>,
    /// The artifact file the program came from, when it was loaded from
    /// one: another process can then build and write the entry
    /// ([`ProgramCache::hand_over_writes`]).
    artifact: Option<PathBuf>,
    /// The build options the program was built with: the source's, or
    /// those salted after a driver crash ([`driver_cache_salted`]), which
    /// the writer must build with too.
    options: String,
}

/// A deferred entry passed to another process to write
/// ([`ProgramCache::hand_over_writes`]): that process inherits `lock` (the
/// key's lock file, still locked, so other processes keep waiting for the
/// entry), builds the artifact's program from source (the driver's own
/// cache has it by now) and writes the entry ([`write_handed_over`]).
pub struct HandOver {
    pub artifact: PathBuf,
    /// The device's global index (`--device=N`).
    pub device_index: usize,
    /// The entry's key, in hex (its file name without `.bin`).
    pub key_hex: String,
    /// The key's lock file, locked; its descriptor must reach the writer.
    pub lock: std::fs::File,
    pub lock_path: PathBuf,
    /// The build options to build with (see [`write_handed_over`]).
    pub build_options: String,
    key: Key,
    device: DeviceInfo,
    entry: PathBuf,
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
            dir_checked: false,
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

    /// The built program for `source`, from memory, disk, the artifact's
    /// `prepared` binaries or the driver.
    pub fn get_or_build(
        &mut self,
        context: &Context,
        device: &DeviceInfo,
        source: &ProgramSource,
        prepared: Option<&PreparedDir>,
    ) -> Result<(Arc<Program>, ProgramOrigin)> {
        let key = cache_key(device, source);
        if let Some(p) = self.memory.get(&key) {
            self.stats.memory_hits += 1;
            return Ok((p.clone(), ProgramOrigin::MemoryHit));
        }
        if !self.dir_checked {
            self.dir_checked = true;
            if let Some(dir) = &self.dir
                && let Err(why) = private::prepare(dir)
            {
                // As ssh does with a loose ~/.ssh: say so in one line and
                // go on without it.
                eprintln!("warning: not using the program cache: {why}");
                self.stats.refused_dir = Some(why);
                self.dir = None;
            }
        }
        let (program, origin) = match self.dir.clone() {
            Some(dir) => self.through_disk(context, device, source, &key, &dir, prepared)?,
            None => match self.load_prepared_directly(context, device, source, &key, prepared) {
                Some(program) => (program, ProgramOrigin::Prepared),
                None => {
                    let program = build_from_source(context, device, source)?;
                    self.stats.source_builds += 1;
                    (program, ProgramOrigin::SourceBuild)
                }
            },
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
        prepared: Option<&PreparedDir>,
    ) -> Result<(Program, ProgramOrigin)> {
        let paths = EntryPaths::new(dir, key);
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
        let mut salted_options = None;
        if lock.is_some() && paths.loading.exists() {
            let _ = fs::remove_file(&paths.loading);
            self.evict(
                &paths,
                "the last process that handed it to the driver died there (it left the marker file .loading); rebuilt from source".into(),
            );
            salted_options = driver_cache_salted(device, source.options);
        }
        // A miss takes the artifact's prepared binary, if it has one for
        // this key, into the cache; it is then loaded like any entry (with
        // the `.loading` marker), so a driver crash on it is caught, and a
        // key whose entry was evicted does not take it again.
        let mut from_prepared = false;
        if salted_options.is_none()
            && lock.is_some()
            && let Some(prepared) = prepared
            && !paths.bypass.exists()
            && !paths.evicted.exists()
            && fs::symlink_metadata(&paths.entry).is_err()
        {
            match prepared.read(key, self.max_entry_bytes) {
                Ok(Some(bytes)) => match write_entry_bytes(&bytes, &paths.entry) {
                    Ok(()) => from_prepared = true,
                    Err(why) => self.disk_problem(false, why),
                },
                Ok(None) => {}
                Err(why) => self.prepared_refused(why),
            }
        }
        if salted_options.is_none()
            && !paths.bypass.exists()
            && let Some(program) =
                self.load_entry(context, device, source, key, &paths, lock.is_some())
        {
            if paths.evicted.exists() {
                let _ = fs::remove_file(&paths.evicted);
            }
            if from_prepared {
                self.stats.prepared_loads += 1;
                return Ok((program, ProgramOrigin::Prepared));
            }
            self.stats.disk_hits += 1;
            return Ok((program, ProgramOrigin::DiskHit));
        }
        if from_prepared {
            // `load_entry` evicted it (the driver refused it) and said why.
            self.stats.prepared_rejects += 1;
        }
        let build_source = ProgramSource {
            options: salted_options.as_deref().unwrap_or(source.options),
            ..*source
        };
        let program = build_from_source(context, device, &build_source)?;
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
                lock,
                artifact: prepared.map(|p| p.artifact.clone()),
                options: build_source.options.to_string(),
            });
            return Ok((program, ProgramOrigin::SourceBuild));
        } else {
            self.store_entry(device, &program, key, &paths.entry);
        }
        drop(lock);
        Ok((program, ProgramOrigin::SourceBuild))
    }

    /// Without a disk cache: the program from the artifact's prepared
    /// binary for `key`, or `None` (none, refused, or not taken by the
    /// driver: the caller builds from source).
    fn load_prepared_directly(
        &mut self,
        context: &Context,
        device: &DeviceInfo,
        source: &ProgramSource,
        key: &Key,
        prepared: Option<&PreparedDir>,
    ) -> Option<Program> {
        let bytes = match prepared?.read(key, self.max_entry_bytes) {
            Ok(bytes) => bytes?,
            Err(why) => {
                self.prepared_refused(why);
                return None;
            }
        };
        let payload = decode_entry(&bytes, key).ok()?;
        match program_from_binary(context, device, payload, source.options) {
            Ok(program) => {
                self.stats.prepared_loads += 1;
                Some(program)
            }
            Err(e) => {
                self.prepared_refused(format!("the driver refused it: {e}"));
                None
            }
        }
    }

    /// Counts and reports a prepared binary that is not loaded.
    fn prepared_refused(&mut self, why: String) {
        eprintln!("warning: not using the prepared program: {why}; building from source");
        self.stats.prepared_rejects += 1;
        self.stats.last_disk_problem = Some(format!("prepared program refused: {why}"));
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
        if let Err(e) = private::write_small_file(marker, &format!("{why}\n")) {
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
                if locked
                    && let Err(e) =
                        private::write_small_file(&paths.loading, &std::process::id().to_string())
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

    /// The deferred entries another process can write (those of artifacts
    /// loaded from a file, whose key lock this process holds), taken out of
    /// this cache with their locks; the others stay deferred. On PoCL the
    /// entry's binary costs a compile of every kernel once more (as long as
    /// the first call's compiles), which the process need not wait for.
    pub fn hand_over_writes(&mut self) -> Vec<HandOver> {
        let mut handed = Vec::new();
        for entry in std::mem::take(&mut self.deferred) {
            let DeferredEntry {
                device,
                key,
                path,
                lock,
                artifact,
                options,
            } = entry;
            match (artifact, lock) {
                (Some(artifact), Some(lock)) => match lock.into_parts() {
                    Ok((file, lock_path)) => handed.push(HandOver {
                        artifact,
                        device_index: device.index,
                        key_hex: entry::hex(&key),
                        lock: file,
                        lock_path,
                        build_options: options,
                        key,
                        device,
                        entry: path,
                    }),
                    Err(e) => {
                        self.disk_problem(false, format!("cannot pass on the entry's lock: {e}"));
                    }
                },
                (artifact, lock) => self.deferred.push(DeferredEntry {
                    device,
                    key,
                    path,
                    lock,
                    artifact,
                    options,
                }),
            }
        }
        handed
    }

    /// Takes back an entry whose hand-over failed (no process could be
    /// started): it is deferred again, to be written by this process.
    pub fn take_back(&mut self, handed: HandOver) {
        self.deferred.push(DeferredEntry {
            device: handed.device,
            key: handed.key,
            path: handed.entry,
            lock: Some(KeyLock::from_parts(handed.lock, handed.lock_path)),
            artifact: Some(handed.artifact),
            options: handed.build_options,
        });
    }
}

/// In the process a [`HandOver`] went to: builds `source` on `device`
/// with `build_options` (the handed-over ones: the source's own, or those
/// salted after a driver crash; the driver's cache makes this quick),
/// checks that it is the program of `key_hex` (the artifact may have been
/// rebuilt since), writes its entry next to `lock_path` and releases the
/// inherited lock `lock`.
pub fn write_handed_over(
    context: &Context,
    device: &DeviceInfo,
    source: &ProgramSource,
    build_options: &str,
    key_hex: &str,
    lock: std::fs::File,
    lock_path: &Path,
) -> std::result::Result<(), String> {
    let lock = KeyLock::from_parts(lock, lock_path.to_path_buf());
    let key = cache_key(device, source);
    let salted = build_options
        .strip_prefix(source.options)
        .is_some_and(|rest| rest.starts_with(" -DTCC_REBUILD_AFTER_DRIVER_CRASH="));
    if entry::hex(&key) != key_hex || (build_options != source.options && !salted) {
        return Err(format!(
            "the artifact's program on {} is not the one whose entry was handed over (rebuilt since?); nothing written",
            device.name
        ));
    }
    let build = ProgramSource {
        options: build_options,
        ..*source
    };
    let program = build_from_source(context, device, &build).map_err(|e| e.to_string())?;
    let entry = lock_path.with_extension("bin");
    let written = write_entry(device, &program, &key, &entry);
    drop(lock);
    written
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

/// Build options that steer the driver past its own kernel cache, for the
/// rebuild after a process died loading this entry's binary: PoCL unpacks
/// a binary into its kernel cache (`POCL_CACHE_DIR`) before it checks it,
/// so a binary it aborted on leaves a half-written directory there under
/// the same hash as the program's source build, and every later build from
/// source crashed on it too. PoCL's hash covers the build options, so a
/// define unique to this rebuild gives it a directory of its own (the
/// binary written back names that directory, so later loads use it too).
/// `None` for drivers whose cache is not known to do this.
fn driver_cache_salted(device: &DeviceInfo, options: &str) -> Option<String> {
    if !binaries_compile_every_kernel(device) {
        return None;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    Some(format!(
        "{options} -DTCC_REBUILD_AFTER_DRIVER_CRASH={}_{nanos}",
        std::process::id()
    ))
}

/// Whether asking the driver for a program's binary
/// (`CL_PROGRAM_BINARIES`) compiles every kernel of it. PoCL does (a
/// work-group function of dynamic size per kernel, so that the binary runs
/// without a compiler), which made it half of ResNet-50's cold start when
/// done before the first call; tcc defers the entry until after it.
pub fn binaries_compile_every_kernel(device: &DeviceInfo) -> bool {
    device.platform_name.contains("Portable Computing Language")
}
