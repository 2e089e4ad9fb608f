//! The CUDA execution backend: runs an artifact's PTX kernels through
//! NVIDIA's CUDA driver API instead of OpenCL.
//!
//! Why: NVIDIA's OpenCL caps a kernel's local (shared) memory at 48 KiB,
//! and tcc's TF32 wgmma GEMM kernels need up to ~193 KiB of CUDA *dynamic*
//! shared memory, which only the driver API grants
//! (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`).
//! Mixing the two APIs costs a context switch per hand-over, so an
//! artifact runs entirely through one or the other: a [`CudaSession`] runs
//! every kernel of the artifact, in one CUDA context, from the PTX that
//! `tcc compile --target=nvidia` puts in the artifact.
//!
//! The artifact's host code is the same as on OpenCL: it calls the
//! `tcc_runtime_api` callbacks, which here work on `CUdeviceptr`s behind
//! opaque handles (`handles`), with work on one stream per session.
//!
//! - `driver`: the driver API, opened at run time (`libcuda.so.1`);
//! - `ptx`: the dynamic-local markers and the kernels' parameter lists;
//! - `launch`: OpenCL NDRanges as CUDA grids and blocks;
//! - `memory`: the session's pool of device memory;
//! - `handles`: the handles of one entry call;
//! - `session`: [`CudaSession`] (module, kernels, constants, arena, calls,
//!   kernel profile) and `call`: the callbacks;
//! - `tensor`: calls on device memory ([`CudaSession::run_device`] on
//!   [`CudaInput`]s, outputs as [`CudaTensor`]s), no host copies.
//!
//! Without profiling, each function's launches are recorded once per
//! session as a CUDA graph and replayed on later calls (`graph`), so a
//! call costs one `cuGraphLaunch` instead of one `cuLaunchKernel` per
//! kernel; `TCC_CUDA_GRAPHS=0` (or [`CudaOptions::graphs`]) turns that off.
//!
//! The driver-neutral core (`hal`) gives this driver what it gives every
//! driver: asynchronous calls ([`crate::hal::Lanes`]: several sessions,
//! each with its own stream, on worker threads) and several devices
//! ([`crate::hal::Group`]: round robin and the data-parallel split). The
//! driver's compiled modules are cached per runtime ([`CudaContext`]'s
//! module cache, [`CudaRuntime::module_cache_stats`]), so that a second
//! session of a model costs no `cuModuleLoadDataEx`; across processes
//! the CUDA driver's own JIT cache keeps the compiled PTX. Not supported
//! here: device fission, host tensors used in place. Device tensors (the
//! caller's, by address) are, through `run_device`.

mod call;
pub mod driver;
mod graph;
mod handles;
mod launch;
mod memory;
pub mod ptx;
mod session;
mod tensor;

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use serde::Serialize;

use crate::Model;
use crate::error::{Error, Result};
use crate::host_bytes::HostBytes;
use driver::{CuContext, CuDevice, Driver};
pub use session::CudaSession;
pub use tensor::{CudaInput, CudaTensor};

/// One CUDA device, as the driver describes it.
#[derive(Clone, Debug, Serialize)]
pub struct CudaDeviceInfo {
    /// The CUDA device ordinal (`cuDeviceGet`).
    pub ordinal: usize,
    pub name: String,
    /// Compute capability, e.g. (9, 0) for the H100.
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub global_mem_bytes: u64,
    /// Shared memory a kernel may have without opting in (48 KiB).
    pub shared_mem_per_block: u64,
    /// Shared memory a kernel may have after opting in (227 KiB on the H100).
    pub shared_mem_per_block_optin: u64,
    /// The driver's CUDA version, e.g. "12.8".
    pub driver_version: String,
}

impl CudaDeviceInfo {
    /// `CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90, driver CUDA 12.8)`.
    pub fn summary(&self) -> String {
        format!(
            "CUDA device {}: {} (sm_{}{}, driver CUDA {})",
            self.ordinal,
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.driver_version
        )
    }

    fn query(driver: &Driver, ordinal: usize) -> Result<(CuDevice, Self)> {
        let mut device: CuDevice = 0;
        let index = c_int::try_from(ordinal)
            .map_err(|_| Error::InvalidInput(format!("CUDA device {ordinal} does not exist")))?;
        // SAFETY: the driver writes the device handle.
        let status = unsafe { (driver.api.device_get)(&mut device, index) };
        driver.check(status, || format!("cuDeviceGet({ordinal})"))?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the driver writes a NUL-terminated name of at most 256 bytes.
        let status = unsafe { (driver.api.device_get_name)(name.as_mut_ptr(), 256, device) };
        driver.check(status, || "cuDeviceGetName".into())?;
        name[255] = 0;
        // SAFETY: NUL-terminated within the buffer (set just above).
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let attribute = |which: c_int, what: &str| -> Result<i64> {
            let mut value: c_int = 0;
            // SAFETY: the driver writes one int.
            let status = unsafe { (driver.api.device_get_attribute)(&mut value, which, device) };
            driver.check(status, || format!("cuDeviceGetAttribute({what})"))?;
            Ok(value as i64)
        };
        let mut total: usize = 0;
        // SAFETY: the driver writes one size_t.
        let status = unsafe { (driver.api.device_total_mem)(&mut total, device) };
        driver.check(status, || "cuDeviceTotalMem".into())?;
        let mut version: c_int = 0;
        // SAFETY: the driver writes one int.
        let status = unsafe { (driver.api.driver_get_version)(&mut version) };
        driver.check(status, || "cuDriverGetVersion".into())?;
        let info = CudaDeviceInfo {
            ordinal,
            name,
            compute_capability: (
                attribute(
                    driver::ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    "compute capability",
                )? as i32,
                attribute(
                    driver::ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    "compute capability",
                )? as i32,
            ),
            multiprocessors: attribute(driver::ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors")?
                as u32,
            global_mem_bytes: total as u64,
            shared_mem_per_block: attribute(
                driver::ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                "shared memory per block",
            )? as u64,
            shared_mem_per_block_optin: attribute(
                driver::ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                "opt-in shared memory per block",
            )? as u64,
            driver_version: format!("{}.{}", version / 1000, version % 1000 / 10),
        };
        Ok((device, info))
    }
}

/// The CUDA devices of this machine (an error without NVIDIA's driver or
/// without a device).
pub fn list_cuda_devices() -> Result<Vec<CudaDeviceInfo>> {
    let driver = Driver::get()?;
    (0..device_count(driver)?)
        .map(|ordinal| CudaDeviceInfo::query(driver, ordinal).map(|(_, info)| info))
        .collect()
}

/// `cuDeviceGetCount`; no device at all is [`Error::CudaUnavailable`].
fn device_count(driver: &Driver) -> Result<usize> {
    let mut count: c_int = 0;
    // SAFETY: the driver writes one int.
    let status = unsafe { (driver.api.device_get_count)(&mut count) };
    driver.check(status, || "cuDeviceGetCount".into())?;
    if count <= 0 {
        return Err(Error::CudaUnavailable(
            "the driver found no CUDA device (cuDeviceGetCount is 0)".into(),
        ));
    }
    Ok(count as usize)
}

/// One kernel's CUDA dynamic shared memory, from its launch record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicLocal {
    pub kernel: String,
    pub bytes: u32,
}

/// The kernels whose launch records ask for CUDA dynamic shared memory,
/// in table order.
pub fn dynamic_local_of(kernels: &[tcc_abi::LaunchRecord]) -> Vec<DynamicLocal> {
    kernels
        .iter()
        .filter(|k| k.dynamic_local_bytes > 0)
        .map(|k| DynamicLocal {
            kernel: k.name.clone(),
            bytes: k.dynamic_local_bytes,
        })
        .collect()
}

/// The kernels of `model` that need CUDA dynamic shared memory (their
/// launch records say so; none without PTX, which alone uses it).
pub fn dynamic_local(model: &Model) -> Result<Vec<DynamicLocal>> {
    let art = model.artifact();
    Ok(match art.ptx {
        None => Vec::new(),
        Some(_) => dynamic_local_of(&art.kernels),
    })
}

/// Checks that `model` can run on the CUDA backend without a device: it
/// carries PTX (`tcc compile --target=nvidia`).
pub fn check_runnable(model: &Model) -> Result<()> {
    let art = model.artifact();
    if art.ptx.is_none() && !art.kernel_names.is_empty() {
        return Err(Error::Unsupported(format!(
            "the CUDA backend runs an artifact's PTX, and {} carries none; compile it with --target=nvidia",
            art.path.display()
        )));
    }
    dynamic_local(model).map(drop)
}

/// One CUDA device's primary context. Cheap to clone (shared); sessions
/// of several models can share it.
#[derive(Clone)]
pub struct CudaRuntime {
    pub(crate) inner: Arc<CudaContext>,
}

/// The device, its retained primary context and the runtime's options.
pub(crate) struct CudaContext {
    pub(crate) driver: &'static Driver,
    device: CuDevice,
    context: CuContext,
    pub(crate) info: CudaDeviceInfo,
    pub(crate) profiling: bool,
    pub(crate) graphs: bool,
    /// The modules loaded in this context, by the SHA-256 of their PTX
    /// (see [`CudaContext::module`]).
    modules: std::sync::Mutex<ModuleCache>,
    /// The memory of the [`CudaTensor`]s made here.
    pub(crate) tensor_memory: std::sync::Mutex<memory::TensorPool>,
    /// The page-locked block [`CudaTensor::to_host`] copies through (see
    /// [`CudaRuntime::download`]), grown to the largest download: its
    /// address and length, freed with the context (a [`HostBytes`] of
    /// [`CudaRuntime::pinned`] would hold the context alive from inside
    /// it).
    download_staging: std::sync::Mutex<Option<(usize, usize)>>,
}

/// The context's compiled modules, and how often one was loaded or found.
#[derive(Default)]
struct ModuleCache {
    modules: Vec<([u8; 32], driver::CuModule)>,
    stats: ModuleCacheStats,
}

/// How the CUDA driver's compiled modules were found: loaded
/// (`cuModuleLoadDataEx`, the driver's JIT or its own disk cache) or taken
/// from the runtime's module cache (no driver call).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ModuleCacheStats {
    pub loads: u64,
    pub hits: u64,
}

/// The smallest and largest downloads of [`CudaRuntime::download`] that go
/// through its page-locked block.
const DOWNLOAD_STAGING_MIN: usize = 64 << 10;
const DOWNLOAD_STAGING_MAX: usize = 256 << 20;

/// Environment variable: `0` or `off` keeps the CUDA backend from
/// recording calls as CUDA graphs (the default records them).
pub const CUDA_GRAPHS_ENV: &str = "TCC_CUDA_GRAPHS";

/// How a [`CudaRuntime`] runs calls.
#[derive(Clone, Copy, Debug)]
pub struct CudaOptions {
    /// Records each kernel launch's device time with a pair of CUDA events.
    pub profiling: bool,
    /// Records each function's launches as a CUDA graph on its second call
    /// and replays the graph from then on (ignored while profiling: the
    /// events of a replayed graph give no per-kernel times).
    pub graphs: bool,
}

impl CudaOptions {
    /// `profiling` as given; graphs on unless `TCC_CUDA_GRAPHS` is `0` or
    /// `off`.
    pub fn from_env(profiling: bool) -> Self {
        let graphs = !matches!(
            std::env::var(CUDA_GRAPHS_ENV).as_deref().map(str::trim),
            Ok("0") | Ok("off") | Ok("false")
        );
        CudaOptions { profiling, graphs }
    }
}

// SAFETY: a CUDA context may be made current on any thread
// (`cuCtxSetCurrent`, which every operation does first); the handle
// itself is an immutable pointer the driver owns, and so are the cached
// modules' (behind a mutex; a module's functions may be launched from
// any thread where its context is current).
unsafe impl Send for CudaContext {}
unsafe impl Sync for CudaContext {}

impl CudaContext {
    /// Makes the context current on the calling thread.
    pub(crate) fn make_current(&self) -> Result<()> {
        // SAFETY: the context is retained for as long as `self` lives.
        let status = unsafe { (self.driver.api.ctx_set_current)(self.context) };
        self.driver.check(status, || "cuCtxSetCurrent".into())
    }
}

impl CudaContext {
    /// The module of `ptx` in this context: the one loaded before for the
    /// same PTX (any session of any model with that PTX; sessions share a
    /// module's functions, whose dynamic shared memory limit is the
    /// kernel's own), else `load(ptx)`'s, kept until the runtime is
    /// dropped. A session (or a lane of [`crate::hal::Lanes`]) opened
    /// after the first thus costs no driver compile.
    pub(crate) fn module(
        &self,
        ptx: &[u8],
        load: impl FnOnce(&[u8]) -> Result<driver::CuModule>,
    ) -> Result<driver::CuModule> {
        use sha2::Digest;
        let digest: [u8; 32] = sha2::Sha256::digest(ptx).into();
        let mut cache = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, m)) = cache.modules.iter().find(|(d, _)| *d == digest) {
            let m = *m;
            cache.stats.hits += 1;
            return Ok(m);
        }
        let m = load(ptx)?;
        cache.stats.loads += 1;
        cache.modules.push((digest, m));
        Ok(m)
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        if self.make_current().is_ok() {
            let driver = self.driver;
            if let Some((block, _)) = self
                .download_staging
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                // SAFETY: the staging block's cuMemHostAlloc, not in use.
                unsafe { (driver.api.mem_free_host)(block as *mut std::ffi::c_void) };
            }
            // Every tensor is gone (each holds the context alive); an
            // error here leaves the blocks to the context's release.
            let _ = self
                .tensor_memory
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .free_all(driver);
        }
        let modules = std::mem::take(
            &mut self
                .modules
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .modules,
        );
        if !modules.is_empty() && self.make_current().is_ok() {
            for (_, m) in modules {
                // SAFETY: every session of this context is gone (each holds
                // the context alive), so no work of the module is left.
                unsafe { (self.driver.api.module_unload)(m) };
            }
        }
        // SAFETY: releases the retain of `CudaRuntime::new`; sessions hold
        // this context alive until they are gone.
        unsafe { (self.driver.api.primary_ctx_release)(self.device) };
    }
}

impl CudaRuntime {
    /// A runtime on CUDA device `ordinal`; `profiling` records each
    /// kernel launch's device time with a pair of CUDA events; CUDA graphs
    /// as `TCC_CUDA_GRAPHS` says ([`CudaOptions::from_env`]).
    pub fn new(ordinal: usize, profiling: bool) -> Result<Self> {
        Self::with_options(ordinal, CudaOptions::from_env(profiling))
    }

    /// A runtime on CUDA device `ordinal` with the given options.
    pub fn with_options(ordinal: usize, options: CudaOptions) -> Result<Self> {
        let driver = Driver::get()?;
        let count = device_count(driver)?;
        if ordinal >= count {
            let devices = (0..count)
                .map(|i| {
                    CudaDeviceInfo::query(driver, i).map_or_else(
                        |e| format!("  {i}: ({e})"),
                        |(_, d)| format!("  {}", d.summary()),
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            return Err(Error::InvalidInput(format!(
                "there is no CUDA device {ordinal}; CUDA devices:\n{devices}"
            )));
        }
        let (device, info) = CudaDeviceInfo::query(driver, ordinal)?;
        let mut context: CuContext = std::ptr::null_mut();
        // SAFETY: the driver writes the primary context's handle.
        let status = unsafe { (driver.api.primary_ctx_retain)(&mut context, device) };
        driver.check(status, || {
            format!("cuDevicePrimaryCtxRetain(device {ordinal})")
        })?;
        let inner = CudaContext {
            driver,
            device,
            context,
            info,
            profiling: options.profiling,
            graphs: options.graphs,
            modules: Default::default(),
            tensor_memory: Default::default(),
            download_staging: Default::default(),
        };
        inner.make_current()?;
        Ok(CudaRuntime {
            inner: Arc::new(inner),
        })
    }

    pub fn device(&self) -> &CudaDeviceInfo {
        &self.inner.info
    }

    pub fn profiling(&self) -> bool {
        self.inner.profiling
    }

    /// Whether calls are recorded and replayed as CUDA graphs (never while
    /// profiling).
    pub fn graphs(&self) -> bool {
        self.inner.graphs && !self.inner.profiling
    }

    /// Prepares `model` to run here: the driver compiles its PTX
    /// (`cuModuleLoadDataEx`) and the kernels with dynamic local memory
    /// get their limit raised.
    pub fn session(&self, model: &Model) -> Result<CudaSession> {
        CudaSession::new(self, model)
    }

    /// How often a session's module was loaded by the driver or taken
    /// from this runtime's module cache.
    pub fn module_cache_stats(&self) -> ModuleCacheStats {
        self.inner
            .modules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stats
    }

    /// The device memory of this runtime's [`CudaTensor`]s: blocks
    /// allocated, requests served by blocks of dropped tensors, bytes held
    /// and in use (see [`CudaRuntime::release_cached_memory`]).
    pub fn tensor_memory_stats(&self) -> crate::buffer_pool::PoolStats {
        self.inner
            .tensor_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stats()
    }

    /// Frees the device memory that dropped [`CudaTensor`]s left for
    /// later tensors of their sizes (as `torch.cuda.empty_cache()`; the
    /// runtime frees it when it is dropped, and when an allocation would
    /// otherwise run out of memory).
    pub fn release_cached_memory(&self) -> Result<()> {
        self.inner.make_current()?;
        self.inner
            .tensor_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .free_all(self.inner.driver)
    }

    /// The `len` bytes at device address `ptr` (of this context) in a new
    /// host vector (`cuMemcpyDtoH`, which waits for the work queued before
    /// it on the legacy default stream). From 64 KiB to 256 MiB the copy
    /// goes through a page-locked block the runtime keeps (DMA at the
    /// link's speed, then a host copy) rather than into pageable memory,
    /// which the driver stages itself a piece at a time: a decode step's
    /// logits at batch 8 (800 KB of f16) took 0.25-0.3 ms that way on the
    /// H200 machine.
    pub(crate) fn download(&self, ptr: u64, len: usize) -> Result<Vec<u8>> {
        let mut bytes = vec![0u8; len];
        if len == 0 {
            return Ok(bytes);
        }
        self.inner.make_current()?;
        let driver = self.inner.driver;
        let staged = (DOWNLOAD_STAGING_MIN..=DOWNLOAD_STAGING_MAX).contains(&len);
        if staged {
            let mut block = self
                .inner
                .download_staging
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if block.is_none_or(|(_, capacity)| capacity < len) {
                if let Some((old, _)) = block.take() {
                    // SAFETY: the block of an earlier cuMemHostAlloc, not
                    // in use (the lock is held).
                    unsafe { (driver.api.mem_free_host)(old as *mut std::ffi::c_void) };
                }
                let capacity = len.next_power_of_two();
                let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
                // SAFETY: the driver writes the block's address.
                let status = unsafe {
                    (driver.api.mem_host_alloc)(&mut p, capacity, driver::MEMHOSTALLOC_PORTABLE)
                };
                if status == 0 && !p.is_null() {
                    *block = Some((p as usize, capacity));
                }
            }
            if let Some((address, _)) = *block {
                // SAFETY: the block holds at least `len` bytes.
                let status =
                    unsafe { (driver.api.memcpy_dtoh)(address as *mut std::ffi::c_void, ptr, len) };
                driver.check(status, || format!("cuMemcpyDtoH({len} bytes)"))?;
                // SAFETY: `len` bytes the copy above wrote, in a block no
                // one else uses while the lock is held.
                bytes.copy_from_slice(unsafe {
                    std::slice::from_raw_parts(address as *const u8, len)
                });
                return Ok(bytes);
            }
        }
        // SAFETY: `bytes` has `len` bytes.
        let status = unsafe {
            (driver.api.memcpy_dtoh)(bytes.as_mut_ptr() as *mut std::ffi::c_void, ptr, len)
        };
        driver.check(status, || format!("cuMemcpyDtoH({len} bytes)"))?;
        Ok(bytes)
    }

    /// `len` bytes of page-locked host memory (`cuMemHostAlloc`,
    /// portable to every context), zeroed: copies between it and any
    /// device are DMA that `cuMemcpy*Async` queues without waiting, where
    /// from pageable memory the driver stages the bytes itself and the
    /// call returns only once they are copied. Freed (`cuMemFreeHost`)
    /// when the bytes are dropped; the runtime's context lives as long.
    pub fn pinned(&self, len: usize) -> Result<HostBytes> {
        if len == 0 {
            return Ok(HostBytes::zeroed(0));
        }
        self.inner.make_current()?;
        let driver = self.inner.driver;
        let mut ptr: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the driver writes the block's address.
        let status =
            unsafe { (driver.api.mem_host_alloc)(&mut ptr, len, driver::MEMHOSTALLOC_PORTABLE) };
        driver.check(status, || format!("cuMemHostAlloc({len} bytes)"))?;
        let Some(block) = std::ptr::NonNull::new(ptr as *mut u8) else {
            return Err(Error::Unsupported(format!(
                "cuMemHostAlloc({len} bytes) returned no memory"
            )));
        };
        if !(block.as_ptr() as usize).is_multiple_of(crate::host_bytes::HOST_ALIGN) {
            // SAFETY: the block just allocated, not used.
            unsafe { (driver.api.mem_free_host)(ptr) };
            return Err(Error::Unsupported(format!(
                "cuMemHostAlloc({len} bytes) returned memory not aligned to a page"
            )));
        }
        // SAFETY: `len` writable bytes the driver owns until freed.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, len) };
        let context = self.inner.clone();
        let free = Box::new(move |p: *mut u8| {
            // Portable memory is freed in any of the process's contexts;
            // this runtime's is kept alive by the closure.
            if context.make_current().is_ok() {
                // SAFETY: the block of this `cuMemHostAlloc`, freed once.
                unsafe { (context.driver.api.mem_free_host)(p as *mut std::ffi::c_void) };
            }
        });
        // SAFETY: `len` zeroed bytes, page-aligned, owned by the result
        // until `free`.
        Ok(unsafe { HostBytes::from_driver(block, len, free) })
    }

    /// Waits until everything queued in the context has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.make_current()?;
        // SAFETY: no arguments; the context is current.
        let status = unsafe { (self.inner.driver.api.ctx_synchronize)() };
        self.inner
            .driver
            .check(status, || "cuCtxSynchronize".into())
    }
}

// Sessions move between threads like OpenCL ones; runtimes are shared.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<CudaRuntime>();
    movable::<CudaSession>();
};
