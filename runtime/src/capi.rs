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

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use crate::artifact::LinkedSymbols;
use crate::{DType, DeviceSelector, Error, HostTensor, Model, Runtime, Session};

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
    pub kernel_flops: Option<unsafe extern "C" fn() -> *const u64>,
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
            | Error::OutOfDeviceMemory(_) => TCC_ERROR_DEVICE,
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
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("internal error in tcc (please report): {what}"));
            TCC_ERROR_INTERNAL
        }
    }
}

// ---------------------------------------------------------------------------
// The handle registry.

struct RuntimeObject {
    runtime: Runtime,
    device: CString,
}

struct TensorInfo {
    name: CString,
    dtype: u32,
    shape: Vec<i64>,
    bytes: u64,
}

struct FunctionObject {
    name: CString,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
}

struct ModelObject {
    model: Model,
    producer: CString,
    functions: Vec<FunctionObject>,
}

struct SessionObject {
    session: Mutex<Session>,
    model: Arc<ModelObject>,
}

struct CallObject {
    worker: Mutex<Option<JoinHandle<CResult<()>>>>,
    done: Arc<AtomicBool>,
}

#[derive(Clone)]
enum Object {
    Runtime(Arc<RuntimeObject>),
    Model(Arc<ModelObject>),
    Session(Arc<SessionObject>),
    Call(Arc<CallObject>),
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Object::Runtime(_) => "runtime",
            Object::Model(_) => "model",
            Object::Session(_) => "session",
            Object::Call(_) => "call",
        }
    }
}

fn registry() -> &'static Mutex<HashMap<u64, Object>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Object>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Ids are spaced by 16 and start far from 0, so that they look like (but
/// are never used as) aligned pointers and small integers are never valid.
static NEXT_ID: AtomicU64 = AtomicU64::new(0x7cc0_0000_1000);

fn register(object: Object) -> *mut c_void {
    let id = NEXT_ID.fetch_add(16, Ordering::Relaxed);
    registry()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, object);
    id as usize as *mut c_void
}

fn lookup(handle: *const c_void, kind: &'static str, remove: bool) -> CResult<Object> {
    if handle.is_null() {
        return Err(Failure(
            TCC_ERROR_NULL_ARGUMENT,
            format!("the {kind} handle is NULL"),
        ));
    }
    let id = handle as usize as u64;
    let mut map = registry().lock().unwrap_or_else(PoisonError::into_inner);
    match map.get(&id) {
        Some(object) if object.kind() == kind => {
            let object = object.clone();
            if remove {
                map.remove(&id);
            }
            Ok(object)
        }
        Some(other) => Err(Failure(
            TCC_ERROR_INVALID_HANDLE,
            format!("expected a {kind} handle, got a {} handle", other.kind()),
        )),
        None => Err(Failure(
            TCC_ERROR_INVALID_HANDLE,
            format!("invalid {kind} handle {handle:p}: already freed, or never created"),
        )),
    }
}

macro_rules! getter {
    ($name:ident, $variant:ident, $t:ty, $kind:literal) => {
        fn $name(handle: *const c_void, remove: bool) -> CResult<Arc<$t>> {
            match lookup(handle, $kind, remove)? {
                Object::$variant(x) => Ok(x),
                _ => unreachable!("lookup checks the kind"),
            }
        }
    };
}
getter!(runtime_of, Runtime, RuntimeObject, "runtime");
getter!(model_of, Model, ModelObject, "model");
getter!(session_of, Session, SessionObject, "session");
getter!(call_of, Call, CallObject, "call");

// ---------------------------------------------------------------------------
// Argument helpers.

fn out_ptr<T>(p: *mut T, what: &str) -> CResult<&'static mut T> {
    if p.is_null() {
        return Err(Failure(TCC_ERROR_NULL_ARGUMENT, format!("{what} is NULL")));
    }
    // SAFETY: non-null; the caller promises a valid, writable pointer.
    Ok(unsafe { &mut *p })
}

fn c_str(p: *const c_char, what: &str) -> CResult<String> {
    if p.is_null() {
        return Err(Failure(TCC_ERROR_NULL_ARGUMENT, format!("{what} is NULL")));
    }
    // SAFETY: non-null; the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(str::to_owned)
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
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
    if !min.is_null() {
        // SAFETY: non-null, caller-provided.
        unsafe { *min = crate::abi::TCC_ABI_VERSION_MIN };
    }
    if !max.is_null() {
        // SAFETY: as above.
        unsafe { *max = crate::abi::TCC_ABI_VERSION };
    }
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
        if !needed.is_null() {
            // SAFETY: non-null, caller-provided.
            unsafe { *needed = bytes.len() + 1 };
        }
        if size > 0 {
            if buffer.is_null() {
                return Err(Failure(TCC_ERROR_NULL_ARGUMENT, "buffer is NULL".into()));
            }
            let n = bytes.len().min(size - 1);
            // SAFETY: the caller promises `size` writable bytes at `buffer`.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer as *mut u8, n);
                *buffer.add(n) = 0;
            }
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
    let out = out_ptr(out, "out")?;
    *out = std::ptr::null_mut();
    let runtime = shared_runtime(selector)?;
    let device = c_string(&runtime.device().summary());
    *out = register(Object::Runtime(Arc::new(RuntimeObject { runtime, device })));
    Ok(())
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

// ---------------------------------------------------------------------------
// Models.

fn tensor_infos(descs: &[crate::TensorDesc]) -> Vec<TensorInfo> {
    descs
        .iter()
        .map(|d| TensorInfo {
            name: c_string(&d.name),
            dtype: d.dtype.to_abi(),
            shape: d.shape.iter().map(|&x| x as i64).collect(),
            bytes: d.byte_size() as u64,
        })
        .collect()
}

fn register_model(model: Model, out: &mut *mut c_void) {
    let functions = model
        .functions()
        .iter()
        .map(|f| FunctionObject {
            name: c_string(&f.name),
            inputs: tensor_infos(&f.inputs),
            outputs: tensor_infos(&f.outputs),
        })
        .collect();
    let producer = c_string(model.producer());
    *out = register(Object::Model(Arc::new(ModelObject {
        model,
        producer,
        functions,
    })));
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_load_file(path: *const c_char, out: *mut *mut c_void) -> TccStatus {
    guard(|| {
        let out = out_ptr(out, "out")?;
        *out = std::ptr::null_mut();
        let path = c_str(path, "path")?;
        register_model(Model::load(&path)?, out);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_load_memory(
    data: *const c_void,
    bytes: usize,
    label: *const c_char,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = out_ptr(out, "out")?;
        *out = std::ptr::null_mut();
        if data.is_null() {
            return Err(Failure(TCC_ERROR_NULL_ARGUMENT, "data is NULL".into()));
        }
        let label = if label.is_null() {
            "<model in memory>".to_string()
        } else {
            c_str(label, "label")?
        };
        // SAFETY: the caller promises `bytes` readable bytes at `data`.
        let slice = unsafe { std::slice::from_raw_parts(data as *const u8, bytes) };
        register_model(Model::load_bytes(slice, &label)?, out);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_load_linked(
    linked: *const TccLinkedModel,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = out_ptr(out, "out")?;
        *out = std::ptr::null_mut();
        if linked.is_null() {
            return Err(Failure(TCC_ERROR_NULL_ARGUMENT, "model is NULL".into()));
        }
        // SAFETY: non-null, caller-provided.
        let linked = unsafe { &*linked };
        let name = if linked.name.is_null() {
            "model".to_string()
        } else {
            c_str(linked.name, "name")?
        };
        let describe = linked.artifact.ok_or_else(|| {
            Failure(
                TCC_ERROR_NULL_ARGUMENT,
                "the model's artifact function is NULL".into(),
            )
        })?;
        let symbols = LinkedSymbols {
            // SAFETY: the same signature, with the table type made opaque in
            // the C API header.
            describe: unsafe {
                std::mem::transmute::<
                    unsafe extern "C" fn() -> *const c_void,
                    crate::abi::TccArtifactV1Fn,
                >(describe)
            },
            flops: linked.kernel_flops,
            ptx: linked.kernel_ptx,
            metadata: linked.metadata,
        };
        // SAFETY: the functions are a linked-in artifact's (the caller's
        // promise, by way of TCC_LINKED_MODEL).
        register_model(unsafe { Model::from_linked(&name, symbols) }?, out);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_free(model: *mut c_void) -> TccStatus {
    guard(|| model_of(model, true).map(drop))
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_producer(
    model: *const c_void,
    producer: *mut *const c_char,
) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        *out_ptr(producer, "producer")? = model.producer.as_ptr();
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_function_count(model: *const c_void, count: *mut usize) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        *out_ptr(count, "count")? = model.functions.len();
        Ok(())
    })
}

fn function_at(model: &ModelObject, index: usize) -> CResult<&FunctionObject> {
    model.functions.get(index).ok_or_else(|| {
        Failure(
            TCC_ERROR_NOT_FOUND,
            format!(
                "no function {index}: the model has {} functions",
                model.functions.len()
            ),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_function(
    model: *const c_void,
    index: usize,
    name: *mut *const c_char,
    num_inputs: *mut usize,
    num_outputs: *mut usize,
) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        let f = function_at(&model, index)?;
        // SAFETY (the three writes): each pointer is checked non-null and
        // is the caller's.
        unsafe {
            if !name.is_null() {
                *name = f.name.as_ptr();
            }
            if !num_inputs.is_null() {
                *num_inputs = f.inputs.len();
            }
            if !num_outputs.is_null() {
                *num_outputs = f.outputs.len();
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_find_function(
    model: *const c_void,
    name: *const c_char,
    index: *mut usize,
) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        let name = c_str(name, "name")?;
        let index = out_ptr(index, "index")?;
        let wanted = model.model.function(&name)?.name.clone();
        *index = model
            .model
            .functions()
            .iter()
            .position(|f| f.name == wanted)
            .expect("found above");
        Ok(())
    })
}

fn tensor_info(
    model: *const c_void,
    function: usize,
    index: usize,
    info: *mut TccTensorInfo,
    output: bool,
) -> CResult<()> {
    let model = model_of(model, false)?;
    let f = function_at(&model, function)?;
    let list = if output { &f.outputs } else { &f.inputs };
    let kind = if output { "output" } else { "input" };
    let t = list.get(index).ok_or_else(|| {
        Failure(
            TCC_ERROR_NOT_FOUND,
            format!(
                "no {kind} {index} of @{}: it has {}",
                f.name.to_string_lossy(),
                list.len()
            ),
        )
    })?;
    *out_ptr(info, "info")? = TccTensorInfo {
        name: t.name.as_ptr(),
        dtype: t.dtype,
        rank: t.shape.len() as u32,
        shape: t.shape.as_ptr(),
        bytes: t.bytes,
    };
    Ok(())
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_input(
    model: *const c_void,
    function: usize,
    index: usize,
    info: *mut TccTensorInfo,
) -> TccStatus {
    guard(|| tensor_info(model, function, index, info, false))
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_output(
    model: *const c_void,
    function: usize,
    index: usize,
    info: *mut TccTensorInfo,
) -> TccStatus {
    guard(|| tensor_info(model, function, index, info, true))
}

// ---------------------------------------------------------------------------
// Sessions and calls.

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_create(
    runtime: *mut c_void,
    model: *mut c_void,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = out_ptr(out, "out")?;
        *out = std::ptr::null_mut();
        let runtime = runtime_of(runtime, false)?;
        let model = model_of(model, false)?;
        let session = runtime.runtime.session(&model.model)?;
        *out = register(Object::Session(Arc::new(SessionObject {
            session: Mutex::new(session),
            model,
        })));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_free(session: *mut c_void) -> TccStatus {
    guard(|| session_of(session, true).map(drop))
}

/// Where an output goes: the caller's buffer, checked against the
/// signature.
#[derive(Clone, Copy)]
struct OutputSlot {
    data: *mut u8,
    bytes: usize,
}

// SAFETY: the caller of tcc_session_run_async promises the output buffers
// stay valid and untouched until tcc_call_wait returns.
unsafe impl Send for OutputSlot {}

/// A checked call: the function's name, copied inputs, output slots.
struct PreparedCall {
    session: Arc<SessionObject>,
    function: String,
    inputs: Vec<HostTensor>,
    outputs: Vec<OutputSlot>,
}

fn describe_tensor(t: &TccTensor, what: &str) -> CResult<(DType, Vec<usize>)> {
    let dtype = DType::from_abi(t.dtype)
        .ok_or_else(|| invalid(format!("{what}: unknown dtype code {}", t.dtype)))?;
    if t.rank > 64 {
        return Err(invalid(format!("{what}: implausible rank {}", t.rank)));
    }
    if t.rank > 0 && t.shape.is_null() {
        return Err(Failure(
            TCC_ERROR_NULL_ARGUMENT,
            format!("{what}: rank {} but shape is NULL", t.rank),
        ));
    }
    let dims: &[i64] = if t.rank == 0 {
        &[]
    } else {
        // SAFETY: non-null, `rank` entries per the API.
        unsafe { std::slice::from_raw_parts(t.shape, t.rank as usize) }
    };
    let shape = dims
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| invalid(format!("{what}: negative dimension {d}")))
        })
        .collect::<CResult<Vec<_>>>()?;
    Ok((dtype, shape))
}

fn tensors<'a>(p: *const TccTensor, n: usize, what: &str) -> CResult<&'a [TccTensor]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Failure(
            TCC_ERROR_NULL_ARGUMENT,
            format!("{n} {what}s but the {what} array is NULL"),
        ));
    }
    // SAFETY: non-null, `n` entries per the API.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn prepare(
    session: *mut c_void,
    function: *const c_char,
    inputs: *const TccTensor,
    num_inputs: usize,
    outputs: *const TccTensor,
    num_outputs: usize,
) -> CResult<PreparedCall> {
    let session = session_of(session, false)?;
    let model = &session.model.model;
    let function = if function.is_null() {
        match model.functions() {
            [only] => only.name.clone(),
            all => {
                return Err(invalid(format!(
                    "the model has {} functions: name one ({})",
                    all.len(),
                    all.iter()
                        .map(|f| format!("@{}", f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
    } else {
        c_str(function, "function")?
    };
    let info = model.function(&function)?;
    let name = &info.name;
    let ins = tensors(inputs, num_inputs, "input")?;
    let outs = tensors(outputs, num_outputs, "output")?;
    let count = |kind: &str, expected: usize, got: usize| {
        invalid(format!(
            "@{name} has {expected} {kind}{}, got {got}",
            if expected == 1 { "" } else { "s" }
        ))
    };
    if ins.len() != info.inputs.len() {
        return Err(count("input", info.inputs.len(), ins.len()));
    }
    if outs.len() != info.outputs.len() {
        return Err(count("output", info.outputs.len(), outs.len()));
    }
    let check = |t: &TccTensor, desc: &crate::TensorDesc, what: String| -> CResult<()> {
        let (dtype, shape) = describe_tensor(t, &what)?;
        if dtype != desc.dtype || shape != desc.shape {
            return Err(invalid(format!(
                "{what} expects {}, got {}",
                desc.type_string(),
                crate::tensor::type_string(&shape, dtype)
            )));
        }
        let expected = desc.byte_size() as u64;
        if t.bytes != expected {
            return Err(invalid(format!(
                "{what} ({}) is {expected} bytes, but the buffer is {} bytes",
                desc.type_string(),
                t.bytes
            )));
        }
        if t.data.is_null() && expected > 0 {
            return Err(Failure(
                TCC_ERROR_NULL_ARGUMENT,
                format!("{what}: data is NULL"),
            ));
        }
        Ok(())
    };
    let mut host_inputs = Vec::with_capacity(ins.len());
    for (i, (t, desc)) in ins.iter().zip(&info.inputs).enumerate() {
        check(t, desc, format!("input {i} of @{name}"))?;
        let bytes = if t.bytes == 0 {
            Vec::new()
        } else {
            // SAFETY: checked non-null; the caller promises `bytes` bytes.
            unsafe { std::slice::from_raw_parts(t.data as *const u8, t.bytes as usize) }.to_vec()
        };
        host_inputs.push(HostTensor::new(desc.dtype, desc.shape.clone(), bytes)?);
    }
    let mut slots = Vec::with_capacity(outs.len());
    for (i, (t, desc)) in outs.iter().zip(&info.outputs).enumerate() {
        check(t, desc, format!("output {i} of @{name}"))?;
        slots.push(OutputSlot {
            data: t.data as *mut u8,
            bytes: t.bytes as usize,
        });
    }
    Ok(PreparedCall {
        function: name.clone(),
        session,
        inputs: host_inputs,
        outputs: slots,
    })
}

impl PreparedCall {
    fn execute(self) -> CResult<()> {
        let results = {
            let mut session = self
                .session
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            session.run(&self.function, &self.inputs)?
        };
        for (slot, result) in self.outputs.iter().zip(&results) {
            let bytes: &[u8] = &result.bytes;
            if bytes.len() != slot.bytes {
                return Err(Failure(
                    TCC_ERROR_INTERNAL,
                    format!(
                        "@{} returned {} bytes for a {}-byte output",
                        self.function,
                        bytes.len(),
                        slot.bytes
                    ),
                ));
            }
            if slot.bytes > 0 {
                // SAFETY: checked non-null with `bytes` writable bytes.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), slot.data, slot.bytes) };
            }
        }
        Ok(())
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_run(
    session: *mut c_void,
    function: *const c_char,
    inputs: *const TccTensor,
    num_inputs: usize,
    outputs: *const TccTensor,
    num_outputs: usize,
) -> TccStatus {
    guard(|| prepare(session, function, inputs, num_inputs, outputs, num_outputs)?.execute())
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_run_async(
    session: *mut c_void,
    function: *const c_char,
    inputs: *const TccTensor,
    num_inputs: usize,
    outputs: *const TccTensor,
    num_outputs: usize,
    call: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let call = out_ptr(call, "call")?;
        *call = std::ptr::null_mut();
        let prepared = prepare(session, function, inputs, num_inputs, outputs, num_outputs)?;
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let worker = std::thread::Builder::new()
            .name("tcc-call".into())
            .spawn(move || {
                let result =
                    catch_unwind(AssertUnwindSafe(|| prepared.execute())).unwrap_or_else(|_| {
                        Err(Failure(
                            TCC_ERROR_INTERNAL,
                            "internal error in tcc: the call panicked".into(),
                        ))
                    });
                flag.store(true, Ordering::Release);
                result
            })
            .map_err(|e| {
                Failure(
                    TCC_ERROR_INTERNAL,
                    format!("cannot start a worker thread: {e}"),
                )
            })?;
        *call = register(Object::Call(Arc::new(CallObject {
            worker: Mutex::new(Some(worker)),
            done,
        })));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_call_done(call: *const c_void, done: *mut c_int) -> TccStatus {
    guard(|| {
        let call = call_of(call, false)?;
        *out_ptr(done, "done")? = c_int::from(call.done.load(Ordering::Acquire));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_call_wait(call: *mut c_void) -> TccStatus {
    guard(|| {
        let call = call_of(call, true)?;
        let worker = call
            .worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match worker {
            Some(worker) => worker.join().unwrap_or_else(|_| {
                Err(Failure(
                    TCC_ERROR_INTERNAL,
                    "the call's thread panicked".into(),
                ))
            }),
            None => Err(Failure(
                TCC_ERROR_INVALID_HANDLE,
                "the call was already waited for".into(),
            )),
        }
    })
}
