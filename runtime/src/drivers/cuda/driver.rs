//! NVIDIA's CUDA driver API, opened at run time.
//!
//! The runtime has no build-time CUDA dependency: `libcuda.so.1` (or the
//! file `TCC_LIBCUDA` names) is opened with `libloading` the first time
//! the CUDA backend is used, every entry point it needs is resolved by its
//! versioned name (`cuMemAlloc_v2`, ...), and `cuInit` is called once. A
//! machine without the driver gets [`Error::CudaUnavailable`], not a
//! loader failure. Every `CUresult` other than `CUDA_SUCCESS` becomes an
//! [`Error::Cuda`] naming the call and the driver's error name
//! ([`Driver::check`]); nothing here panics.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use libloading::Library;

use crate::error::{Error, Result};

/// `CUresult`.
pub(crate) type CuResult = c_int;
/// `CUdevice`.
pub(crate) type CuDevice = c_int;
/// `CUdeviceptr` (64-bit).
pub(crate) type CuDevicePtr = u64;
/// `CUcontext`.
pub(crate) type CuContext = *mut c_void;
/// `CUmodule`.
pub(crate) type CuModule = *mut c_void;
/// `CUfunction`.
pub(crate) type CuFunction = *mut c_void;
/// `CUstream`.
pub(crate) type CuStream = *mut c_void;
/// `CUevent`.
pub(crate) type CuEvent = *mut c_void;
/// `CUgraph`.
pub(crate) type CuGraph = *mut c_void;
/// `CUgraphExec`.
pub(crate) type CuGraphExec = *mut c_void;

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const CUDA_ERROR_OUT_OF_MEMORY: CuResult = 2;

/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
pub(crate) const ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub(crate) const ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub(crate) const ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK` (without opt-in).
pub(crate) const ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
pub(crate) const ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;

/// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: a kernel's static shared memory.
pub(crate) const FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: c_int = 1;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
pub(crate) const FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

/// `CU_JIT_ERROR_LOG_BUFFER`.
pub(crate) const JIT_ERROR_LOG_BUFFER: c_int = 5;
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`.
pub(crate) const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

/// `CU_STREAM_DEFAULT`: a stream that synchronizes with the legacy
/// default stream, so the synchronous `cuMemcpyHtoD`/`DtoH` calls are
/// ordered with the work on it.
pub(crate) const STREAM_DEFAULT: c_uint = 0;
/// `CU_MEMHOSTALLOC_PORTABLE`: page-locked host memory that every
/// context treats as pinned (the devices of a group share staging).
pub(crate) const MEMHOSTALLOC_PORTABLE: c_uint = 1;
/// `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED`: `cuCtxEnablePeerAccess` of a
/// pair enabled before (not a failure).
pub(crate) const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CuResult = 704;
/// `CU_EVENT_DEFAULT`: an event that records timing.
pub(crate) const EVENT_DEFAULT: c_uint = 0;
/// `CU_STREAM_CAPTURE_MODE_RELAXED`: a capture that does not forbid
/// other threads' (or this one's) unrelated driver calls, such as the
/// pool's `cuMemAlloc` of a temporary while an entry is being recorded.
pub(crate) const STREAM_CAPTURE_MODE_RELAXED: c_int = 2;

/// Environment variable: the driver library to open instead of
/// `libcuda.so.1` (a path or a file name for the dynamic loader).
pub const LIBCUDA_ENV: &str = "TCC_LIBCUDA";

/// Declares the table of driver entry points: each field is resolved from
/// the library by the symbol named next to it.
macro_rules! driver_api {
    ($($(#[$doc:meta])* $field:ident = $symbol:literal: ($($arg:ty),*);)*) => {
        /// The driver's entry points tcc uses (see `cuda.h` for each).
        pub(crate) struct Api {
            $($(#[$doc])* pub(crate) $field: unsafe extern "C" fn($($arg),*) -> CuResult,)*
        }

        impl Api {
            /// Resolves every entry point from `library`.
            ///
            /// # Safety
            /// `library` must be NVIDIA's CUDA driver, whose symbols have
            /// the signatures declared here (those of `cuda.h`).
            unsafe fn resolve(library: &Library) -> std::result::Result<Api, String> {
                Ok(Api {
                    $($field: {
                        // SAFETY: the caller vouches for the signature.
                        let symbol = unsafe {
                            library.get::<unsafe extern "C" fn($($arg),*) -> CuResult>(
                                concat!($symbol, "\0").as_bytes(),
                            )
                        };
                        *symbol.map_err(|e| format!("the driver has no {}: {e}", $symbol))?
                    },)*
                })
            }
        }
    };
}

driver_api! {
    init = "cuInit": (c_uint);
    driver_get_version = "cuDriverGetVersion": (*mut c_int);
    device_get_count = "cuDeviceGetCount": (*mut c_int);
    device_get = "cuDeviceGet": (*mut CuDevice, c_int);
    device_get_name = "cuDeviceGetName": (*mut c_char, c_int, CuDevice);
    device_get_attribute = "cuDeviceGetAttribute": (*mut c_int, c_int, CuDevice);
    device_total_mem = "cuDeviceTotalMem_v2": (*mut usize, CuDevice);
    primary_ctx_retain = "cuDevicePrimaryCtxRetain": (*mut CuContext, CuDevice);
    primary_ctx_release = "cuDevicePrimaryCtxRelease_v2": (CuDevice);
    ctx_set_current = "cuCtxSetCurrent": (CuContext);
    ctx_synchronize = "cuCtxSynchronize": ();
    mem_alloc = "cuMemAlloc_v2": (*mut CuDevicePtr, usize);
    mem_free = "cuMemFree_v2": (CuDevicePtr);
    mem_host_alloc = "cuMemHostAlloc": (*mut *mut c_void, usize, c_uint);
    mem_free_host = "cuMemFreeHost": (*mut c_void);
    memcpy_htod = "cuMemcpyHtoD_v2": (CuDevicePtr, *const c_void, usize);
    memcpy_dtoh = "cuMemcpyDtoH_v2": (*mut c_void, CuDevicePtr, usize);
    memcpy_htod_async = "cuMemcpyHtoDAsync_v2": (CuDevicePtr, *const c_void, usize, CuStream);
    memcpy_dtoh_async = "cuMemcpyDtoHAsync_v2": (*mut c_void, CuDevicePtr, usize, CuStream);
    memcpy_dtod_async = "cuMemcpyDtoDAsync_v2": (CuDevicePtr, CuDevicePtr, usize, CuStream);
    memset_d8_async = "cuMemsetD8Async": (CuDevicePtr, u8, usize, CuStream);
    device_can_access_peer = "cuDeviceCanAccessPeer": (*mut c_int, CuDevice, CuDevice);
    ctx_enable_peer_access = "cuCtxEnablePeerAccess": (CuContext, c_uint);
    memcpy_peer_async = "cuMemcpyPeerAsync":
        (CuDevicePtr, CuContext, CuDevicePtr, CuContext, usize, CuStream);
    module_load_data_ex = "cuModuleLoadDataEx":
        (*mut CuModule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
    module_unload = "cuModuleUnload": (CuModule);
    module_get_function = "cuModuleGetFunction": (*mut CuFunction, CuModule, *const c_char);
    func_set_attribute = "cuFuncSetAttribute": (CuFunction, c_int, c_int);
    func_get_attribute = "cuFuncGetAttribute": (*mut c_int, c_int, CuFunction);
    launch_kernel = "cuLaunchKernel": (
        CuFunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CuStream,
        *mut *mut c_void, *mut *mut c_void
    );
    stream_create = "cuStreamCreate": (*mut CuStream, c_uint);
    stream_destroy = "cuStreamDestroy_v2": (CuStream);
    stream_synchronize = "cuStreamSynchronize": (CuStream);
    event_create = "cuEventCreate": (*mut CuEvent, c_uint);
    event_record = "cuEventRecord": (CuEvent, CuStream);
    event_synchronize = "cuEventSynchronize": (CuEvent);
    event_elapsed_time = "cuEventElapsedTime": (*mut f32, CuEvent, CuEvent);
    event_destroy = "cuEventDestroy_v2": (CuEvent);
    stream_begin_capture = "cuStreamBeginCapture_v2": (CuStream, c_int);
    stream_end_capture = "cuStreamEndCapture": (CuStream, *mut CuGraph);
    graph_instantiate = "cuGraphInstantiateWithFlags": (*mut CuGraphExec, CuGraph, u64);
    graph_launch = "cuGraphLaunch": (CuGraphExec, CuStream);
    graph_exec_destroy = "cuGraphExecDestroy": (CuGraphExec);
    graph_destroy = "cuGraphDestroy": (CuGraph);
    get_error_name = "cuGetErrorName": (CuResult, *mut *const c_char);
    get_error_string = "cuGetErrorString": (CuResult, *mut *const c_char);
}

/// The loaded driver: the library (kept open for the life of the process)
/// and its entry points.
pub(crate) struct Driver {
    pub(crate) api: Api,
    _library: Library,
}

impl Driver {
    /// The process's driver, opened and initialised (`cuInit`) on first
    /// use; the failure, if any, is remembered and returned on every call.
    pub(crate) fn get() -> Result<&'static Driver> {
        static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();
        DRIVER
            .get_or_init(Driver::open)
            .as_ref()
            .map_err(|reason| Error::CudaUnavailable(reason.clone()))
    }

    fn open() -> std::result::Result<Driver, String> {
        let name = std::env::var(LIBCUDA_ENV)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "libcuda.so.1".into());
        // SAFETY: opening NVIDIA's driver runs its initialisers, which is
        // what using the driver means.
        let library =
            unsafe { Library::new(&name) }.map_err(|e| format!("cannot open {name}: {e}"))?;
        // SAFETY: the library is the CUDA driver; the declared signatures
        // are cuda.h's.
        let api = unsafe { Api::resolve(&library) }.map_err(|e| format!("{name}: {e}"))?;
        let driver = Driver {
            api,
            _library: library,
        };
        // SAFETY: cuInit takes flags 0.
        let status = unsafe { (driver.api.init)(0) };
        if status != 0 {
            return Err(format!(
                "cuInit failed: {} ({status}): {}",
                driver.error_name(status),
                driver.error_string(status)
            ));
        }
        Ok(driver)
    }

    /// `CUDA_SUCCESS` → `Ok`, anything else → an error naming `what`.
    pub(crate) fn check(&self, status: CuResult, what: impl FnOnce() -> String) -> Result<()> {
        if status == 0 {
            return Ok(());
        }
        let (name, description) = (self.error_name(status), self.error_string(status));
        if status == CUDA_ERROR_OUT_OF_MEMORY {
            return Err(Error::OutOfDeviceMemory(format!(
                "{} failed with {name} ({status}): {description}",
                what()
            )));
        }
        Err(Error::Cuda {
            what: what(),
            code: status,
            name,
            description,
        })
    }

    /// `cuGetErrorName` of `status`, or `CUresult N` when the driver does
    /// not know it.
    pub(crate) fn error_name(&self, status: CuResult) -> String {
        self.error_text(self.api.get_error_name, status)
            .unwrap_or_else(|| format!("CUresult {status}"))
    }

    /// `cuGetErrorString` of `status`.
    fn error_string(&self, status: CuResult) -> String {
        self.error_text(self.api.get_error_string, status)
            .unwrap_or_else(|| "unknown error".into())
    }

    fn error_text(
        &self,
        getter: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
        status: CuResult,
    ) -> Option<String> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static string or fails.
        let found = unsafe { getter(status, &mut text) };
        if found != 0 || text.is_null() {
            return None;
        }
        // SAFETY: non-null, NUL-terminated static string of the driver.
        Some(
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        )
    }
}
