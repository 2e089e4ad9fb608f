//! The C API's handle registry: every object C holds (runtime, model,
//! session, call, device tensor) lives here under a never-reused 64-bit id, which C sees
//! as an opaque pointer; a handle is looked up, never dereferenced.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::{CResult, Failure, TCC_ERROR_INVALID_HANDLE, TCC_ERROR_NULL_ARGUMENT};
use crate::hal::{AnyDevice, Lanes};
use crate::{Model, Session};

pub(super) struct RuntimeObject {
    /// An OpenCL runtime, or a CUDA one (`tcc_runtime_create_cuda`).
    pub(super) runtime: AnyDevice,
    pub(super) device: CString,
}

pub(super) struct TensorInfo {
    pub(super) name: CString,
    pub(super) dtype: u32,
    pub(super) shape: Vec<i64>,
    pub(super) bytes: u64,
}

impl TensorInfo {
    /// The C description, pointing into `self` (valid while it lives).
    pub(super) fn to_c(&self) -> super::TccTensorInfo {
        super::TccTensorInfo {
            name: self.name.as_ptr(),
            dtype: self.dtype,
            rank: self.shape.len() as u32,
            shape: self.shape.as_ptr(),
            bytes: self.bytes,
        }
    }
}

pub(super) struct FunctionObject {
    pub(super) name: CString,
    pub(super) inputs: Vec<TensorInfo>,
    pub(super) outputs: Vec<TensorInfo>,
}

pub(super) struct ModelObject {
    pub(super) model: Model,
    pub(super) producer: CString,
    pub(super) functions: Vec<FunctionObject>,
}

/// A session of any driver: OpenCL's own (with its native asynchronous
/// calls), or CUDA's and Vulkan's through the core's lanes.
pub(super) enum CSession {
    OpenCl(Box<Session>),
    Core(Lanes<AnyDevice>),
    /// Functions placed on several devices (`tcc_session_create_placed`).
    Placed(Box<crate::hal::Placement<AnyDevice>>),
}

pub(super) struct SessionObject {
    pub(super) session: Mutex<CSession>,
    pub(super) model: Arc<ModelObject>,
}

impl SessionObject {
    /// The session, locked (a panic in another call does not poison it
    /// for the C caller).
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, CSession> {
        self.session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A tensor in a session's device memory (`tcc_device_tensor`): an
/// OpenCL buffer or a CUDA allocation. It keeps its device memory (and
/// the device's runtime) alive, not the session: freeing the session
/// first is allowed, and the tensor can still be read and freed.
pub(super) struct DeviceTensorObject {
    /// Shared with a call that reads it (a CUDA call runs on a lane's
    /// thread).
    pub(super) value: Arc<crate::hal::Value>,
    /// The session that made it; only its calls take it (the `Weak` keeps
    /// the address from being reused by a later session).
    pub(super) owner: std::sync::Weak<SessionObject>,
    /// Its name (the function output's; "" for an upload), dtype, shape
    /// and size.
    pub(super) info: TensorInfo,
}

pub(super) struct CallObject {
    /// `None` once waited.
    pub(super) call: Mutex<Option<super::calls::PendingCall>>,
}

#[derive(Clone)]
pub(super) enum Object {
    Runtime(Arc<RuntimeObject>),
    Model(Arc<ModelObject>),
    Session(Arc<SessionObject>),
    Call(Arc<CallObject>),
    DeviceTensor(Arc<DeviceTensorObject>),
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Object::Runtime(_) => "runtime",
            Object::Model(_) => "model",
            Object::Session(_) => "session",
            Object::Call(_) => "call",
            Object::DeviceTensor(_) => "device tensor",
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

pub(super) fn register(object: Object) -> *mut c_void {
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
        pub(super) fn $name(handle: *const c_void, remove: bool) -> CResult<Arc<$t>> {
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
getter!(
    device_tensor_of,
    DeviceTensor,
    DeviceTensorObject,
    "device tensor"
);
