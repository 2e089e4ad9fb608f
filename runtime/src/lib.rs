//! tcc-runtime: runs models compiled by tcc on OpenCL devices.
//!
//! A compiled model (`model.so`) holds host code, kernel source and
//! constants, and describes itself through the C ABI in
//! `runtime/include/tcc_abi.h`. This crate loads it, builds its kernels
//! (with an in-memory and an on-disk program cache), and runs its
//! functions: the artifact's host code enqueues work through callbacks
//! into a `Session`, which serves buffers from a pool on an in-order
//! queue. Calls can also be asynchronous (`Session::submit`, module
//! `async_call`: several in flight, uploads and downloads on queues of
//! their own) and run on several devices (module `devices`: round robin,
//! a batch split across devices, CPU fission).
//!
//! ```no_run
//! use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime};
//! let rt = Runtime::new(DeviceSelector::Default)?;
//! let model = Model::load("model.so")?;
//! let mut session = rt.session(&model)?;
//! let x = HostTensor::from_f32(vec![2, 3], &[1., 2., 3., 4., 5., 6.])?;
//! let outputs = session.run("main", &[x])?;
//! println!("{}", outputs[0].format(1024));
//! # Ok::<(), tcc_runtime::Error>(())
//! ```

pub mod abi;
pub mod artifact;
pub mod async_call;
pub mod backend;
pub mod buffer_pool;
pub mod capi;
pub mod cli;
pub mod cpu_features;
pub mod decode;
pub mod device;
pub mod devices;
pub mod drivers;
pub mod element;
pub mod elf;
mod embed;
pub mod error;
pub mod hal;
pub mod host_bytes;
pub mod in_turns;
pub mod iree_flags;
pub mod npy;
pub mod output_file;
pub mod program_cache;
pub mod tensor;
pub mod throughput;
pub mod timeline;

// The drivers' modules under their former paths (`tcc_runtime::cuda`,
// `tcc_runtime::session`): the public API did not move with the files.
pub use drivers::cuda;
pub use drivers::opencl::session;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use serde::Serialize;

pub use artifact::{CallShapes, FunctionInfo, LinkedSymbols, TensorDesc};
pub use async_call::{CallHandle, ComputeQueues, StagingStats};
pub use backend::{BACKEND_ENV, Backend, Calls};
pub use buffer_pool::PoolStats;
pub use cuda::{CudaDeviceInfo, CudaInput, CudaRuntime, CudaSession, CudaTensor};
pub use device::{DeviceInfo, DeviceKind, DeviceSelector, HostIo, host_io_for, list_devices};
pub use devices::{DeviceGroup, DeviceList, GroupSession, SplitPlan, partition_device};
pub use drivers::vulkan::{VulkanDeviceInfo, VulkanRuntime, VulkanSession};
pub use element::Element;
pub use error::{Error, Result};
/// `half::f16`, the element type of f16 tensors.
pub use half;
pub use host_bytes::HostBytes;
pub use program_cache::{CacheStats, ProgramOrigin, SourceKind};
pub use session::{
    ArenaStats, DeviceTensor, KernelProfile, SPECIALIZE_ENV, Session, Specialization,
    SpecializationStats,
};
pub use tensor::{DType, HostTensor};

use artifact::Artifact;
use buffer_pool::BufferPool;
use error::ClResultExt;
use program_cache::ProgramCache;

/// The git commit tcc was built from (12 hex digits, or "unknown").
pub const GIT_HASH: &str = env!("TCC_GIT_HASH");

/// tcc's version and the git commit it was built from:
/// `tcc 0.1.0 (git 0123456789ab)`, shown by every tool's `--version` and
/// the C API's `tcc_version()`.
/// A bucket of `tcc compile --specialize` as `batch=8` (`batch=8,seq=128`).
pub fn describe_bucket(bucket: &[(String, i64)]) -> String {
    bucket
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub fn version_string() -> String {
    format!(
        "tcc {} (git {})",
        env!("CARGO_PKG_VERSION"),
        env!("TCC_GIT_HASH")
    )
}

/// How to set up a `Runtime`.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Create the queue with `CL_QUEUE_PROFILING_ENABLE` and record every
    /// kernel launch's device time (see `Session::kernel_profile`).
    pub profiling: bool,
    /// Cache directory; `None` means `TCC_CACHE_DIR`, else the user's cache
    /// directory + `/tcc`.
    pub cache_dir: Option<PathBuf>,
    /// Whether to use the on-disk program cache at all.
    pub disk_cache: bool,
    /// Which of an artifact's kernel forms to build (default:
    /// `TCC_KERNEL_FORMAT`, else automatic).
    pub kernel_format: KernelFormat,
    /// How host tensors reach the device: `None` (default) lets the device
    /// decide ([`DeviceInfo::host_io`]: in place on host-memory devices,
    /// copies elsewhere); `TCC_ZERO_COPY=0` in the environment makes the
    /// default `Some(HostIo::Copy)`, to measure what in-place use saves.
    pub host_io: Option<HostIo>,
    /// Asynchronous calls ([`Session::submit`]) on a device that copies
    /// host tensors stage them through pinned host memory
    /// (`CL_MEM_ALLOC_HOST_PTR`, mapped once). `None` (default): on, unless
    /// `TCC_PINNED_STAGING=0`.
    pub pinned_staging: Option<bool>,
    /// The largest tensor (bytes) an asynchronous call stages through
    /// pinned memory. Larger inputs that the call owns
    /// ([`Session::submit`]) are uploaded straight from the tensor, larger
    /// borrowed ones ([`Session::submit_ref`]) written from the caller's
    /// tensor before `submit_ref` returns, and larger outputs read straight
    /// into the result, as the synchronous path does (through the driver's
    /// own bounce buffers). `None` (default): `TCC_STAGING_LIMIT` in
    /// bytes, else [`DEFAULT_STAGING_LIMIT`].
    pub staging_limit: Option<usize>,
    /// OpenCL build options appended to every artifact's own (part of the
    /// program cache key). `None` (default): `TCC_OPENCL_BUILD_OPTIONS`.
    pub extra_build_options: Option<String>,
}

/// Environment variable: the largest tensor in bytes an asynchronous call
/// stages (see [`RuntimeOptions::staging_limit`]).
pub const STAGING_LIMIT_ENV: &str = "TCC_STAGING_LIMIT";

/// Tensors up to 1 GiB (the staging pool's free-list cap) are staged by
/// default: on the H100, sgemm 4096³ (64 MiB tensors) ran at 1.9x the
/// synchronous rate staged against 0.99x written straight from pageable
/// memory, once the benchmark's output blocks were recycled
/// (docs/benchmarks.md, "Issue 14 on the H100: large transfers").
pub const DEFAULT_STAGING_LIMIT: usize = 1 << 30;

/// Environment variable: OpenCL build options appended to every
/// artifact's own when this runtime builds its kernel program (part of
/// the program cache's key, so builds with and without them are kept
/// apart). `-cl-opt-disable` skips the driver's optimizer: PoCL then
/// builds a program of small kernels 1.4-2.4x faster (this 2-core CPU), at
/// the kernels' speed; the ONNX node suite sets it (docs/testing.md).
pub const OPENCL_BUILD_OPTIONS_ENV: &str = "TCC_OPENCL_BUILD_OPTIONS";

/// Environment variable: `0` turns pinned staging off (see
/// [`RuntimeOptions::pinned_staging`]).
pub const PINNED_STAGING_ENV: &str = "TCC_PINNED_STAGING";

/// Environment variable: `0` makes every device copy host tensors (see
/// [`RuntimeOptions::host_io`]).
pub const ZERO_COPY_ENV: &str = "TCC_ZERO_COPY";

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            profiling: false,
            cache_dir: None,
            disk_cache: true,
            kernel_format: KernelFormat::from_env().ok().flatten().unwrap_or_default(),
            host_io: match std::env::var(ZERO_COPY_ENV).as_deref() {
                Ok("0") => Some(HostIo::Copy),
                _ => None,
            },
            pinned_staging: None,
            staging_limit: None,
            extra_build_options: None,
        }
    }
}

/// Environment variable choosing the kernel form (`auto`, `ptx`, `opencl-c`).
pub const KERNEL_FORMAT_ENV: &str = "TCC_KERNEL_FORMAT";

/// Which form of an artifact's kernels a session builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum KernelFormat {
    /// PTX on NVIDIA's OpenCL when the artifact carries it, falling back to
    /// the OpenCL C (with a note) when the driver refuses it; the OpenCL C
    /// everywhere else.
    #[default]
    Auto,
    /// The PTX or an error (no fallback).
    Ptx,
    /// The OpenCL C even where PTX would do.
    OpenClC,
}

impl std::str::FromStr for KernelFormat {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "auto" => Ok(KernelFormat::Auto),
            "ptx" => Ok(KernelFormat::Ptx),
            "opencl-c" => Ok(KernelFormat::OpenClC),
            other => Err(Error::InvalidInput(format!(
                "kernel format `{other}`: expected auto, ptx or opencl-c"
            ))),
        }
    }
}

impl KernelFormat {
    /// `TCC_KERNEL_FORMAT`, when set and non-empty (an unknown value is an
    /// error here; `RuntimeOptions::default` then ignores it).
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(KERNEL_FORMAT_ENV) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map(Some)
                .map_err(|e| Error::InvalidInput(format!("{KERNEL_FORMAT_ENV}: {e}"))),
            _ => Ok(None),
        }
    }
}

/// Operations a test can make fail, to check error paths (see
/// [`Runtime::inject_fault`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The `alloc` callback the artifact's host code calls.
    Alloc,
    /// Building a session's kernel program (as a driver build failure).
    KernelBuild,
    /// The `launch` callback (enqueuing a kernel).
    Launch,
}

/// Pending injected faults, counted down as operations fail.
#[derive(Default)]
pub(crate) struct Faults {
    alloc: std::sync::atomic::AtomicU32,
    build: std::sync::atomic::AtomicU32,
    launch: std::sync::atomic::AtomicU32,
}

impl Faults {
    fn counter(&self, fault: Fault) -> &std::sync::atomic::AtomicU32 {
        match fault {
            Fault::Alloc => &self.alloc,
            Fault::KernelBuild => &self.build,
            Fault::Launch => &self.launch,
        }
    }

    /// Whether this `fault` operation must fail (consumes one).
    pub(crate) fn take(&self, fault: Fault) -> bool {
        use std::sync::atomic::Ordering;
        self.counter(fault)
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// Bytes moved between host and device, and host tensors used in place,
/// since the runtime was created (see [`Runtime::transfer_stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TransferStats {
    /// Bytes copied from host memory into device buffers: inputs, uploads
    /// and constants that were not used in place.
    pub bytes_to_device: u64,
    /// Bytes copied from device buffers into host memory: outputs and
    /// downloads that were not used in place.
    pub bytes_to_host: u64,
    /// Call inputs the device read from the caller's memory.
    pub inputs_in_place: u64,
    /// Call outputs the device wrote straight into the returned tensor.
    pub outputs_in_place: u64,
}

#[derive(Default)]
pub(crate) struct TransferCounters {
    pub(crate) bytes_to_device: std::sync::atomic::AtomicU64,
    pub(crate) bytes_to_host: std::sync::atomic::AtomicU64,
    pub(crate) inputs_in_place: std::sync::atomic::AtomicU64,
    pub(crate) outputs_in_place: std::sync::atomic::AtomicU64,
}

impl TransferCounters {
    pub(crate) fn add(counter: &std::sync::atomic::AtomicU64, n: u64) {
        counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    fn snapshot(&self) -> TransferStats {
        use std::sync::atomic::Ordering::Relaxed;
        TransferStats {
            bytes_to_device: self.bytes_to_device.load(Relaxed),
            bytes_to_host: self.bytes_to_host.load(Relaxed),
            inputs_in_place: self.inputs_in_place.load(Relaxed),
            outputs_in_place: self.outputs_in_place.load(Relaxed),
        }
    }
}

/// One OpenCL device with its context, in-order queue, buffer pool and
/// program cache. Cheap to clone (shared); sessions of several models can
/// share one runtime, and then share its pool and queue.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    pub(crate) device: DeviceInfo,
    pub(crate) queue: CommandQueue,
    pool: Mutex<BufferPool>,
    programs: Mutex<ProgramCache>,
    pub(crate) context: Context,
    pub(crate) profiling: bool,
    pub(crate) kernel_format: KernelFormat,
    pub(crate) faults: Faults,
    /// How host tensors reach the device.
    pub(crate) host_io: HostIo,
    pub(crate) transfers: TransferCounters,
    /// The upload and download queues of asynchronous calls, created on
    /// the first [`Session::submit`].
    pub(crate) side_queues: std::sync::OnceLock<async_call::SideQueues>,
    /// Pinned host staging buffers of asynchronous calls.
    pub(crate) staging: Mutex<async_call::StagingPool>,
    pub(crate) pinned_staging: bool,
    /// See [`RuntimeOptions::staging_limit`].
    pub(crate) staging_limit: usize,
    /// Call handles not yet dropped.
    pub(crate) live_handles: std::sync::atomic::AtomicU64,
    /// See [`RuntimeOptions::extra_build_options`], trimmed.
    extra_build_options: String,
    /// The sub-device this runtime was created on ([`partition_device`],
    /// which also keeps it for the life of the process).
    pub(crate) _sub_device: Option<Arc<opencl3::device::SubDevice>>,
}

impl RuntimeInner {
    /// The build options of `art`'s OpenCL program on this runtime: its
    /// own, then [`OPENCL_BUILD_OPTIONS_ENV`]'s.
    pub(crate) fn build_options<'a>(&self, own: &'a str) -> std::borrow::Cow<'a, str> {
        match (own.is_empty(), self.extra_build_options.is_empty()) {
            (_, true) => std::borrow::Cow::Borrowed(own),
            (true, false) => std::borrow::Cow::Owned(self.extra_build_options.clone()),
            (false, false) => {
                std::borrow::Cow::Owned(format!("{own} {}", self.extra_build_options))
            }
        }
    }

    pub(crate) fn pool(&self) -> MutexGuard<'_, BufferPool> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn staging(&self) -> MutexGuard<'_, async_call::StagingPool> {
        self.staging.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn programs(&self) -> MutexGuard<'_, ProgramCache> {
        self.programs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        let _ = self.queue.finish();
        async_call::release_side_resources(self);
        // Cache entries deferred until the process is done with its calls.
        self.programs().finish_writes();
    }
}

impl Runtime {
    /// A runtime on the selected device with default options.
    pub fn new(selector: DeviceSelector) -> Result<Self> {
        Self::with_options(selector, RuntimeOptions::default())
    }

    pub fn with_options(selector: DeviceSelector, options: RuntimeOptions) -> Result<Self> {
        let device = selector.select(&list_devices()?)?;
        Self::on_device(device, options)
    }

    /// A runtime on `device` (from [`list_devices`] or
    /// [`partition_device`]).
    pub fn on_device(device: DeviceInfo, options: RuntimeOptions) -> Result<Self> {
        let context = Context::from_device(&device.device).cl("clCreateContext")?;
        let sub_device = device.sub_device.clone();
        let queue = create_queue(&context, options.profiling)?;
        let cache_dir = if options.disk_cache {
            options.cache_dir.or_else(program_cache::default_cache_dir)
        } else {
            None
        };
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                pool: Mutex::new(BufferPool::new(device.max_alloc_bytes)),
                host_io: options.host_io.unwrap_or_else(|| device.host_io()),
                transfers: TransferCounters::default(),
                programs: Mutex::new(ProgramCache::new(cache_dir)),
                device,
                queue,
                context,
                profiling: options.profiling,
                kernel_format: options.kernel_format,
                faults: Faults::default(),
                side_queues: std::sync::OnceLock::new(),
                staging: Mutex::new(async_call::StagingPool::default()),
                pinned_staging: options.pinned_staging.unwrap_or_else(|| {
                    std::env::var(PINNED_STAGING_ENV).map_or(true, |v| v != "0")
                }),
                staging_limit: options.staging_limit.unwrap_or_else(|| {
                    std::env::var(STAGING_LIMIT_ENV)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(DEFAULT_STAGING_LIMIT)
                }),
                live_handles: std::sync::atomic::AtomicU64::new(0),
                extra_build_options: options
                    .extra_build_options
                    .or_else(|| std::env::var(OPENCL_BUILD_OPTIONS_ENV).ok())
                    .map(|v| v.trim().to_string())
                    .unwrap_or_default(),
                _sub_device: sub_device,
            }),
        })
    }

    /// Call handles ([`CallHandle`]) of this runtime not yet dropped.
    pub fn live_call_handles(&self) -> u64 {
        self.inner
            .live_handles
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Pinned host staging buffers held for asynchronous calls.
    pub fn staging_stats(&self) -> StagingStats {
        self.inner.staging().stats()
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.inner.device
    }

    /// Prepares `model` to run here: builds (or fetches from the cache) its
    /// kernel program and creates its kernels.
    pub fn session(&self, model: &Model) -> Result<Session> {
        Session::new(self, model)
    }

    pub fn profiling(&self) -> bool {
        self.inner.profiling
    }

    pub fn pool_stats(&self) -> PoolStats {
        self.inner.pool().stats()
    }

    /// How this runtime moves host tensors: in place (a host-memory device)
    /// or by copies.
    pub fn host_io(&self) -> HostIo {
        self.inner.host_io
    }

    /// Bytes copied between host and device and tensors used in place so
    /// far. On a CPU device a call of tensors the runtime allocated
    /// (outputs, `.npy` inputs) copies nothing.
    pub fn transfer_stats(&self) -> TransferStats {
        self.inner.transfers.snapshot()
    }

    /// Program cache counters; writes the deferred cache entries first (see
    /// [`program_cache::binaries_compile_every_kernel`]).
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.programs().stats()
    }

    /// Writes the program cache entries deferred so far (on PoCL the entry
    /// of a program built from source waits until the process is done with
    /// its first calls; see [`program_cache::binaries_compile_every_kernel`]).
    /// Dropping the runtime writes them too.
    pub fn wait_for_cache_writes(&self) {
        self.inner.programs().finish_writes();
    }

    /// Program cache entries not yet written (deferred on PoCL until the
    /// process is done with its first calls, or being written).
    pub fn pending_cache_writes(&self) -> usize {
        self.inner.programs().pending_writes()
    }

    /// Takes the deferred cache entries that another process can write
    /// (see [`program_cache::ProgramCache::hand_over_writes`]); `tcc-run`
    /// and `tcc-benchmark` pass them to a background `tcc-run`, so that
    /// nothing but the exit follows their results.
    pub fn hand_over_cache_writes(&self) -> Vec<program_cache::HandOver> {
        self.inner.programs().hand_over_writes()
    }

    /// Defers again an entry whose hand-over failed; this runtime writes it.
    pub fn take_back_cache_write(&self, handed: program_cache::HandOver) {
        self.inner.programs().take_back(handed)
    }

    /// In the process a hand-over went to: builds `model`'s portable
    /// program on this runtime's device with `build_options` (the
    /// hand-over's) and writes it as the entry
    /// `key_hex`, under the inherited, locked `lock` (`lock_path`), which is
    /// released after.
    pub fn write_handed_over_entry(
        &self,
        model: &Model,
        build_options: &str,
        key_hex: &str,
        lock: std::fs::File,
        lock_path: &Path,
    ) -> Result<()> {
        let art = &model.inner;
        let options = self.inner.build_options(&art.build_options);
        let source = program_cache::ProgramSource {
            kind: art.source_kind,
            bytes: &art.source,
            options: &options,
        };
        program_cache::write_handed_over(
            &self.inner.context,
            &self.inner.device,
            &source,
            build_options,
            key_hex,
            lock,
            lock_path,
        )
        .map_err(Error::Unsupported)
    }

    /// Directory of the on-disk program cache entries, if enabled.
    pub fn cache_entries_dir(&self) -> Option<PathBuf> {
        self.inner.programs().entries_dir().map(Path::to_path_buf)
    }

    /// Makes the next `count` operations of kind `fault` fail, each with an
    /// error that says it was injected. For tests of error paths: a failed
    /// call must leave the session usable and the pool without leaks.
    pub fn inject_fault(&self, fault: Fault, count: u32) {
        self.inner
            .faults
            .counter(fault)
            .store(count, std::sync::atomic::Ordering::SeqCst);
    }

    /// Frees the pool's idle buffers.
    pub fn trim_pool(&self) {
        self.inner.pool().trim();
    }

    /// Waits until everything queued has finished.
    pub fn finish(&self) -> Result<()> {
        self.inner.queue.finish().cl("clFinish")
    }
}

/// An in-order command queue, with profiling events when `profiling`.
pub(crate) fn create_queue(context: &Context, profiling: bool) -> Result<CommandQueue> {
    let props = if profiling {
        CL_QUEUE_PROFILING_ENABLE
    } else {
        0
    };
    match CommandQueue::create_default_with_properties(context, props, 0) {
        Ok(q) => Ok(q),
        // OpenCL 1.x platforms lack clCreateCommandQueueWithProperties.
        #[allow(deprecated)]
        Err(_) => CommandQueue::create_default(context, props).cl("clCreateCommandQueue"),
    }
}

/// A loaded model artifact. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Model {
    inner: Arc<Artifact>,
}

impl Model {
    /// Loads `model.so` and validates its description (ABI version, tables).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Model {
            inner: Arc::new(Artifact::load(path.as_ref())?),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The `producer` string, e.g. "tcc 0.1.0".
    pub fn producer(&self) -> &str {
        &self.inner.producer
    }

    pub fn functions(&self) -> &[FunctionInfo] {
        &self.inner.functions
    }

    /// The function called `name`; the error lists the available ones.
    pub fn function(&self, name: &str) -> Result<&FunctionInfo> {
        let name = name.strip_prefix('@').unwrap_or(name);
        self.inner
            .functions
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| {
                let names: Vec<String> = self
                    .inner
                    .functions
                    .iter()
                    .map(|f| format!("@{}", f.name))
                    .collect();
                Error::NoSuchFunction {
                    name: name.to_string(),
                    model: self.inner.path.display().to_string(),
                    available: if names.is_empty() {
                        "(none)".into()
                    } else {
                        names.join(", ")
                    },
                }
            })
    }

    pub fn kernel_names(&self) -> &[String] {
        &self.inner.kernel_names
    }

    /// Each kernel's launch record (name, work-group size, CUDA dynamic
    /// local memory, flops, arguments), in `kernel_names` order.
    pub fn kernels(&self) -> &[tcc_abi::LaunchRecord] {
        &self.inner.kernels
    }

    /// Floating-point operations per launch of each kernel, in
    /// `kernel_names` order (0 where the artifact does not count them).
    pub fn kernel_flops(&self) -> &[u64] {
        &self.inner.kernel_flops
    }

    pub fn source_kind(&self) -> SourceKind {
        self.inner.source_kind
    }

    pub fn num_constants(&self) -> usize {
        self.inner.constants.len()
    }

    pub(crate) fn artifact(&self) -> &Artifact {
        &self.inner
    }

    /// Hashes the constants and compares them with the artifact's
    /// checksummed description (the table was compared at load time): an
    /// error for a damaged artifact or one without a description.
    pub fn verify(&self) -> Result<()> {
        self.inner.verify()
    }

    /// The checksummed description the table was checked against, if the
    /// artifact has one.
    pub fn description(&self) -> Option<&artifact::description::Description> {
        self.inner.description.as_ref()
    }
}

// Runtimes and models can be shared across threads; a session can move to
// another thread (it is used from one at a time).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<Runtime>();
    shared::<Model>();
    movable::<Session>();
    movable::<DeviceTensor>();
    movable::<CallHandle>();
    movable::<GroupSession>();
    shared::<DeviceGroup>();
};
