//! The C API (`runtime/include/tcc_runtime.h`), exported by
//! `libtcc_runtime.so` and `libtcc_runtime.a`.
//!
//! Design:
//! - **Handles are registry keys, not pointers.** Every object lives in a
//!   process-wide registry keyed by a never-reused 64-bit id, which C sees
//!   as an opaque pointer. A handle used after it was freed, freed twice,
//!   passed as the wrong kind, or made up is looked up, not dereferenced,
//!   and gives `TCC_ERROR_INVALID_HANDLE`. Objects are reference-counted,
//!   so freeing a handle that another thread is using (or that a session
//!   depends on) only drops the registry's reference.
//! - **No unwinding into C.** Every entry point runs inside
//!   `catch_unwind`; a panic becomes `TCC_ERROR_INTERNAL` with its message.
//! - **Errors** are a status code plus a thread-local message
//!   (`tcc_last_error`).
//! - **Threads.** A session's calls are serialized by a mutex; the
//!   asynchronous call (`tcc_session_run_async`) runs on a worker thread
//!   and is joined by `tcc_call_wait` (this runtime has no asynchronous
//!   queue API; the handle API stays the same when it gets one).
//!
//! This module holds the statuses, the C types, the argument helpers and
//! the version, device and runtime entry points; `registry` the handles,
//! `models` the model entry points, `calls` the session and call ones,
//! `device` the device tensors (calls whose values stay on the device).

mod calls;
mod device;
mod models;
mod registry;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::hal::AnyDevice;
pub use calls::*;
pub use device::*;
pub use models::*;
use registry::{Object, RuntimeObject, register, runtime_of};

use crate::{DeviceSelector, Error, Runtime};

/// `enum tcc_status`.
pub type TccStatus = c_int;
pub const TCC_OK: TccStatus = 0;
pub const TCC_ERROR_INVALID_ARGUMENT: TccStatus = 1;
pub const TCC_ERROR_NULL_ARGUMENT: TccStatus = 2;
pub const TCC_ERROR_INVALID_HANDLE: TccStatus = 3;
pub const TCC_ERROR_LOAD: TccStatus = 4;
pub const TCC_ERROR_DEVICE: TccStatus = 5;
pub const TCC_ERROR_RUN: TccStatus = 6;
pub const TCC_ERROR_NOT_FOUND: TccStatus = 7;
pub const TCC_ERROR_INTERNAL: TccStatus = 8;

/// `TCC_RUNTIME_API_VERSION`.
pub const API_VERSION: u32 = 100;

/// `tcc_tensor`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TccTensor {
    pub data: *mut c_void,
    pub bytes: u64,
    pub dtype: u32,
    pub rank: u32,
    pub shape: *const i64,
}

/// `tcc_tensor_info`.
#[repr(C)]
pub struct TccTensorInfo {
    pub name: *const c_char,
    pub dtype: u32,
    pub rank: u32,
    pub shape: *const i64,
    pub bytes: u64,
}

/// `tcc_linked_model`.
#[repr(C)]
pub struct TccLinkedModel {
    pub name: *const c_char,
    pub artifact: Option<unsafe extern "C" fn() -> *const c_void>,
    pub kernel_ptx: Option<unsafe extern "C" fn() -> *const c_char>,
    pub metadata: Option<unsafe extern "C" fn() -> *const c_char>,
}

/// A failure: a status and its message.
struct Failure(TccStatus, String);

type CResult<T> = std::result::Result<T, Failure>;

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::InvalidInput(_) => TCC_ERROR_INVALID_ARGUMENT,
            Error::NoSuchFunction { .. } => TCC_ERROR_NOT_FOUND,
            Error::ArtifactLoad { .. }
            | Error::AbiVersion { .. }
            | Error::MalformedArtifact { .. } => TCC_ERROR_LOAD,
            Error::NoPlatform(_)
            | Error::NoSuchDevice { .. }
            | Error::OpenCl { .. }
            | Error::OutOfDeviceMemory(_)
            | Error::CudaUnavailable(_)
            | Error::VulkanUnavailable(_) => TCC_ERROR_DEVICE,
            _ => TCC_ERROR_RUN,
        };
        Failure(status, e.to_string())
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure(TCC_ERROR_INVALID_ARGUMENT, message.into())
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Runs an entry point's body: panics and failures become a status and a
/// message for `tcc_last_error`.
fn guard(body: impl FnOnce() -> CResult<()>) -> TccStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => TCC_OK,
        Ok(Err(Failure(status, message))) => {
            set_last_error(&message);
            status
        }
        Err(panic) => {
            let what = crate::error::panic_message(panic.as_ref());
            set_last_error(&format!("internal error in tcc (please report): {what}"));
            TCC_ERROR_INTERNAL
        }
    }
}

// ---------------------------------------------------------------------------
// Argument helpers.

/// `TCC_ERROR_NULL_ARGUMENT` when `p` is NULL ("`what` is NULL").
fn non_null<T>(p: *const T, what: &str) -> CResult<()> {
    if p.is_null() {
        return Err(Failure(TCC_ERROR_NULL_ARGUMENT, format!("{what} is NULL")));
    }
    Ok(())
}

fn out_ptr<T>(p: *mut T, what: &str) -> CResult<&'static mut T> {
    non_null(p, what)?;
    // SAFETY: non-null; the caller promises a valid, writable pointer.
    Ok(unsafe { &mut *p })
}

fn in_ptr<T>(p: *const T, what: &str) -> CResult<&'static T> {
    non_null(p, what)?;
    // SAFETY: non-null; the caller promises a valid pointer.
    Ok(unsafe { &*p })
}

/// The slot a new handle is written to, set to NULL first so that C sees
/// NULL when the call fails.
fn handle_out(p: *mut *mut c_void, what: &str) -> CResult<&'static mut *mut c_void> {
    let out = out_ptr(p, what)?;
    *out = std::ptr::null_mut();
    Ok(out)
}

/// Writes `value` through an optional out-pointer (NULL: not wanted).
fn set_if_given<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-null; the caller promises a valid, writable pointer.
        unsafe { *p = value };
    }
}

fn c_str(p: *const c_char, what: &str) -> CResult<String> {
    non_null(p, what)?;
    // SAFETY: non-null; the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(str::to_owned)
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// [`c_str`], or `default` when `p` is NULL.
fn c_str_or(p: *const c_char, what: &str, default: &str) -> CResult<String> {
    if p.is_null() {
        Ok(default.to_string())
    } else {
        c_str(p, what)
    }
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Version, errors, devices.

#[unsafe(no_mangle)]
pub extern "C" fn tcc_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_status_name(status: TccStatus) -> *const c_char {
    let name: &'static CStr = match status {
        TCC_OK => c"TCC_OK",
        TCC_ERROR_INVALID_ARGUMENT => c"TCC_ERROR_INVALID_ARGUMENT",
        TCC_ERROR_NULL_ARGUMENT => c"TCC_ERROR_NULL_ARGUMENT",
        TCC_ERROR_INVALID_HANDLE => c"TCC_ERROR_INVALID_HANDLE",
        TCC_ERROR_LOAD => c"TCC_ERROR_LOAD",
        TCC_ERROR_DEVICE => c"TCC_ERROR_DEVICE",
        TCC_ERROR_RUN => c"TCC_ERROR_RUN",
        TCC_ERROR_NOT_FOUND => c"TCC_ERROR_NOT_FOUND",
        TCC_ERROR_INTERNAL => c"TCC_ERROR_INTERNAL",
        _ => c"(unknown tcc_status)",
    };
    name.as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_api_version() -> u32 {
    API_VERSION
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_version() -> *const c_char {
    static VERSION: OnceLock<CString> = OnceLock::new();
    VERSION
        .get_or_init(|| c_string(&crate::version_string()))
        .as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_artifact_abi_range(min: *mut u32, max: *mut u32) {
    set_if_given(min, crate::abi::TCC_ABI_VERSION_MIN);
    set_if_given(max, crate::abi::TCC_ABI_VERSION);
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_device_count(count: *mut usize) -> TccStatus {
    guard(|| {
        let count = out_ptr(count, "count")?;
        *count = crate::list_devices()?.len();
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_device_name(
    index: usize,
    buffer: *mut c_char,
    size: usize,
    needed: *mut usize,
) -> TccStatus {
    guard(|| {
        let devices = crate::list_devices()?;
        let device = devices.get(index).ok_or_else(|| {
            Failure(
                TCC_ERROR_NOT_FOUND,
                format!("no device {index}: there are {} devices", devices.len()),
            )
        })?;
        let name = format!("{} ({})", device.name, device.platform_name);
        let bytes = name.as_bytes();
        set_if_given(needed, bytes.len() + 1);
        if size > 0 {
            non_null(buffer, "buffer")?;
            let n = bytes.len().min(size - 1);
            // SAFETY: the caller promises `size` writable bytes at `buffer`.
            let dst = unsafe { std::slice::from_raw_parts_mut(buffer.cast::<u8>(), size) };
            dst[..n].copy_from_slice(&bytes[..n]);
            dst[n] = 0;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Runtimes.

/// The runtime of the selected device, shared by every C handle on that
/// device while one is alive. Two runtimes of one device in one process
/// would each keep their own program cache, and on PoCL the first holds a
/// program's cache lock until it is dropped (the deferred entry write), so
/// a second runtime's session of the same model would wait for it.
fn shared_runtime(selector: DeviceSelector) -> CResult<Runtime> {
    static SHARED: OnceLock<Mutex<HashMap<usize, std::sync::Weak<crate::RuntimeInner>>>> =
        OnceLock::new();
    let device = selector.select(&crate::list_devices()?)?;
    let mut shared = SHARED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(inner) = shared.get(&device.index).and_then(std::sync::Weak::upgrade) {
        return Ok(Runtime { inner });
    }
    let runtime = Runtime::new(DeviceSelector::Index(device.index))?;
    shared.insert(device.index, Arc::downgrade(&runtime.inner));
    Ok(runtime)
}

fn create_runtime(selector: DeviceSelector, out: *mut *mut c_void) -> CResult<()> {
    let out = handle_out(out, "out")?;
    let runtime = shared_runtime(selector)?;
    let device = c_string(&runtime.device().summary());
    *out = register(Object::Runtime(Arc::new(RuntimeObject {
        runtime: AnyDevice::OpenCl(runtime),
        device,
    })));
    Ok(())
}

/// A runtime on CUDA device `ordinal` through NVIDIA's driver (the
/// artifact's PTX): its sessions run through the driver-neutral core
/// (`hal::Lanes`), with `tcc_session_set_max_in_flight` sessions on
/// streams of their own.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_runtime_create_cuda(ordinal: usize, out: *mut *mut c_void) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        let runtime = crate::CudaRuntime::new(ordinal, false)?;
        let device = c_string(&format!("{} (CUDA)", runtime.device().summary()));
        *out = register(Object::Runtime(Arc::new(RuntimeObject {
            runtime: AnyDevice::Cuda(runtime),
            device,
        })));
        Ok(())
    })
}

/// A runtime on Vulkan device `index` (the Shader SPIR-V of `tcc compile
/// --target=vulkan`), its sessions through the core's lanes as CUDA's.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_runtime_create_vulkan(index: usize, out: *mut *mut c_void) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        let runtime = crate::VulkanRuntime::with_device(index)?;
        let device = c_string(&runtime.info().summary());
        *out = register(Object::Runtime(Arc::new(RuntimeObject {
            runtime: AnyDevice::Vulkan(runtime),
            device,
        })));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_runtime_create(device: *const c_char, out: *mut *mut c_void) -> TccStatus {
    guard(|| {
        let selector = if device.is_null() {
            DeviceSelector::from_flag_or_env(None)
        } else {
            let text = c_str(device, "device")?;
            if text.trim().is_empty() {
                DeviceSelector::from_flag_or_env(None)
            } else {
                DeviceSelector::parse(&text)
            }
        };
        create_runtime(selector, out)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_runtime_create_by_index(index: usize, out: *mut *mut c_void) -> TccStatus {
    guard(|| create_runtime(DeviceSelector::Index(index), out))
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_runtime_device(
    runtime: *const c_void,
    name: *mut *const c_char,
) -> TccStatus {
    guard(|| {
        let runtime = runtime_of(runtime, false)?;
        let name = out_ptr(name, "name")?;
        // Valid while the registry (or a session) holds the runtime object.
        *name = runtime.device.as_ptr();
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_runtime_free(runtime: *mut c_void) -> TccStatus {
    guard(|| runtime_of(runtime, true).map(drop))
}
