//! The C API's device tensors (`tcc_device_tensor`; ONNX Runtime's
//! IOBinding and OrtValue on a device): a host tensor uploaded into a
//! session's device memory (`tcc_device_tensor_upload`), a call on such
//! tensors whose outputs stay there (`tcc_session_run_device`), to be the
//! next call's inputs without a host round trip, and a tensor read back
//! into the caller's buffer (`tcc_device_tensor_download`).
//!
//! A device tensor belongs to the session that made it: only that
//! session's calls take it (another session's, even on the same device,
//! is refused). It keeps its device memory and that device's runtime
//! alive, not the session, so freeing the session first is allowed; the
//! tensor is then still described, downloaded and freed.
//!
//! Drivers: an OpenCL session runs `Session::run_device`; a CUDA session
//! (the core's lanes) runs `CudaSession::run_device` on one lane's thread
//! (`Lanes::with_session`); a Vulkan session's calls copy through
//! host-visible buffers and keep nothing on the device, so it refuses, as
//! a placed session (its functions on several devices) does.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Weak};

use super::calls::{check_counts, describe_tensor, function_of};
use super::registry::{
    CSession, DeviceTensorObject, Object, SessionObject, TensorInfo, device_tensor_of, register,
    session_of,
};
use super::{
    CResult, Failure, TCC_ERROR_INTERNAL, TCC_ERROR_NULL_ARGUMENT, TccStatus, TccTensor,
    TccTensorInfo, c_string, guard, handle_out, in_ptr, invalid, non_null, out_ptr,
};
use crate::cuda::{CudaInput, CudaTensor};
use crate::hal::{AnyDevice, AnySession, Device, Value};
use crate::{DType, DeviceTensor, HostTensor};

/// Why `session` keeps no tensors on its device (`None`: it does).
fn refusal(session: &CSession) -> Option<Failure> {
    match session {
        CSession::OpenCl(_) => None,
        CSession::Core(lanes) => match lanes.device() {
            AnyDevice::Cuda(_) => None,
            device => Some(invalid(format!(
                "device tensors are OpenCL's and CUDA's: a {} session's calls copy through host-visible buffers and keep nothing in device memory (use tcc_session_run)",
                device.driver().title()
            ))),
        },
        CSession::Placed(_) => Some(invalid(
            "device tensors belong to a session on one device; a placed session's functions are on several (use tcc_session_run_pipeline)",
        )),
    }
}

fn internal(message: &str) -> Failure {
    Failure(TCC_ERROR_INTERNAL, message.into())
}

/// Registers `value` as a device tensor of `owner`.
fn register_tensor(
    value: Value,
    dtype: DType,
    shape: &[usize],
    name: &str,
    owner: &Arc<SessionObject>,
) -> *mut c_void {
    let bytes = value.byte_size() as u64;
    register(Object::DeviceTensor(Arc::new(DeviceTensorObject {
        value: Arc::new(value),
        owner: Arc::downgrade(owner),
        info: TensorInfo {
            name: c_string(name),
            dtype: dtype.to_abi(),
            shape: shape.iter().map(|&d| d as i64).collect(),
            bytes,
        },
    })))
}

/// The host tensor a C tensor describes, checked (dtype, shape, a size
/// that matches, data for a non-empty tensor) and copied.
fn host_tensor(t: &TccTensor) -> CResult<HostTensor> {
    let (dtype, shape) = describe_tensor(t, "the tensor")?;
    let expected = crate::tensor::byte_size(&shape, dtype).ok_or_else(|| {
        invalid(format!(
            "the tensor {} is too large",
            crate::tensor::type_string(&shape, dtype)
        ))
    })? as u64;
    if t.bytes != expected {
        return Err(invalid(format!(
            "the tensor {} is {expected} bytes, but the buffer is {} bytes",
            crate::tensor::type_string(&shape, dtype),
            t.bytes
        )));
    }
    let bytes = if expected == 0 {
        Vec::new()
    } else {
        non_null(t.data, "the tensor's data")?;
        // SAFETY: checked non-null; the caller promises `bytes` bytes.
        unsafe { std::slice::from_raw_parts(t.data as *const u8, t.bytes as usize) }.to_vec()
    };
    Ok(HostTensor::new(dtype, shape, bytes)?)
}

/// Copies a host tensor into `session`'s device memory.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_device_tensor_upload(
    session: *mut c_void,
    tensor: *const TccTensor,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        let session = session_of(session, false)?;
        let host = host_tensor(in_ptr(tensor, "tensor")?)?;
        let value = {
            let mut locked = session.lock();
            if let Some(failure) = refusal(&locked) {
                return Err(failure);
            }
            match &mut *locked {
                CSession::OpenCl(s) => Value::OpenCl(s.upload(&host)?),
                CSession::Core(lanes) => match lanes.device() {
                    AnyDevice::Cuda(rt) => Value::Cuda(CudaTensor::upload(rt, &host)?),
                    _ => return Err(internal("a driver without device tensors")),
                },
                CSession::Placed(_) => return Err(internal("a placed session")),
            }
        };
        *out = register_tensor(value, host.dtype, &host.shape, "", &session);
        Ok(())
    })
}

/// The device tensors of a call's inputs, each checked to be a live
/// handle of `session`.
fn inputs_of(
    session: &Arc<SessionObject>,
    function: &str,
    handles: &[*mut c_void],
) -> CResult<Vec<Arc<DeviceTensorObject>>> {
    handles
        .iter()
        .enumerate()
        .map(|(i, &h)| {
            let what = format!("input {i} of @{function}");
            let t = device_tensor_of(h, false)
                .map_err(|Failure(status, message)| Failure(status, format!("{what}: {message}")))?;
            if !Weak::ptr_eq(&t.owner, &Arc::downgrade(session)) {
                return Err(invalid(format!(
                    "{what}: the device tensor belongs to another session (a device tensor is its own session's: download it, or run it there)"
                )));
            }
            Ok(t)
        })
        .collect()
}

/// The `n` input handles at `p` (non-null unless `n` is 0).
fn input_handles<'a>(p: *const *mut c_void, n: usize) -> CResult<&'a [*mut c_void]> {
    if n == 0 {
        return Ok(&[]);
    }
    non_null(p, "inputs")?;
    // SAFETY: non-null, `n` entries per the API.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The `n` output slots at `p` (non-null unless `n` is 0).
fn output_slots<'a>(p: *mut *mut c_void, n: usize) -> CResult<&'a mut [*mut c_void]> {
    if n == 0 {
        return Ok(&mut []);
    }
    non_null(p, "outputs")?;
    // SAFETY: non-null, `n` writable entries per the API.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Runs `function` (NULL when the model has only one) on device tensors
/// of `session`; each output is a new device tensor of the session, of
/// the call's shape.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_run_device(
    session: *mut c_void,
    function: *const c_char,
    inputs: *const *mut c_void,
    num_inputs: usize,
    outputs: *mut *mut c_void,
    num_outputs: usize,
) -> TccStatus {
    guard(|| {
        let outs = output_slots(outputs, num_outputs)?;
        // NULL in every slot until the call has succeeded.
        outs.fill(std::ptr::null_mut());
        let session = session_of(session, false)?;
        if let Some(failure) = refusal(&session.lock()) {
            return Err(failure);
        }
        let info = function_of(&session.model.model, function)?;
        let name = info.name.clone();
        let ins = input_handles(inputs, num_inputs)?;
        check_counts(info, ins.len(), outs.len())?;
        let tensors = inputs_of(&session, &name, ins)?;
        let values: Vec<Arc<Value>> = tensors.iter().map(|t| t.value.clone()).collect();
        let results: Vec<Value> = {
            let mut locked = session.lock();
            match &mut *locked {
                CSession::OpenCl(s) => {
                    let refs = values
                        .iter()
                        .map(|v| match &**v {
                            Value::OpenCl(t) => Ok(t),
                            _ => Err(internal("an OpenCL session's tensor not in OpenCL memory")),
                        })
                        .collect::<CResult<Vec<&DeviceTensor>>>()?;
                    s.run_device(&name, &refs)?
                        .into_iter()
                        .map(Value::OpenCl)
                        .collect()
                }
                CSession::Core(lanes) => {
                    let function = name.clone();
                    // On a lane's thread, which owns its session; `values`
                    // keeps the inputs alive until the call has returned.
                    lanes
                        .with_session(move |s| run_cuda(s, &function, &values))??
                        .into_iter()
                        .map(Value::Cuda)
                        .collect()
                }
                CSession::Placed(_) => return Err(internal("a placed session")),
            }
        };
        for ((slot, value), desc) in outs.iter_mut().zip(results).zip(&info.outputs) {
            let (dtype, shape) = match &value {
                Value::OpenCl(t) => (t.dtype(), t.shape().to_vec()),
                Value::Cuda(t) => (t.dtype(), t.shape().to_vec()),
                Value::Host(t) => (t.dtype, t.shape.clone()),
            };
            *slot = register_tensor(value, dtype, &shape, &desc.name, &session);
        }
        Ok(())
    })
}

/// A CUDA session's call on its device tensors (on its lane's thread).
fn run_cuda(
    session: &mut AnySession,
    function: &str,
    values: &[Arc<Value>],
) -> CResult<Vec<CudaTensor>> {
    let AnySession::Cuda(session) = session else {
        return Err(internal(
            "a CUDA session's lane holds another driver's session",
        ));
    };
    let io = values
        .iter()
        .map(|v| match &**v {
            Value::Cuda(t) => Ok(t.as_input()),
            _ => Err(internal("a CUDA session's tensor not in CUDA memory")),
        })
        .collect::<CResult<Vec<CudaInput>>>()?;
    // SAFETY: every input is a live allocation of this session's device
    // (uploaded by it, or an output of its calls), held by `values` until
    // this returns; the work that wrote it was waited for (`upload` is a
    // synchronous copy, `run_device` waits for its stream).
    Ok(unsafe { session.run_device(function, &io) }?)
}

/// Copies a device tensor into the caller's `bytes`-byte buffer, after
/// the work that wrote it.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_device_tensor_download(
    tensor: *const c_void,
    data: *mut c_void,
    bytes: u64,
) -> TccStatus {
    guard(|| {
        let t = device_tensor_of(tensor, false)?;
        if bytes != t.info.bytes {
            return Err(invalid(format!(
                "the device tensor ({}) is {} bytes, but the buffer is {bytes} bytes",
                type_string(&t),
                t.info.bytes
            )));
        }
        if bytes > 0 && data.is_null() {
            return Err(Failure(TCC_ERROR_NULL_ARGUMENT, "data is NULL".into()));
        }
        let host = match &*t.value {
            Value::OpenCl(d) => d.to_host()?,
            Value::Cuda(d) => d.to_host()?,
            Value::Host(h) => h.clone(),
        };
        if host.bytes.len() as u64 != bytes {
            return Err(internal("a device tensor read back at another size"));
        }
        if bytes > 0 {
            // SAFETY: checked non-null; the caller promises `bytes`
            // writable bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    host.bytes.as_ptr(),
                    data.cast::<u8>(),
                    host.bytes.len(),
                )
            };
        }
        Ok(())
    })
}

/// `2x3xf32`.
fn type_string(t: &DeviceTensorObject) -> String {
    let shape: Vec<usize> = t.info.shape.iter().map(|&d| d as usize).collect();
    match DType::from_abi(t.info.dtype) {
        Some(dtype) => crate::tensor::type_string(&shape, dtype),
        None => format!("dtype {}", t.info.dtype),
    }
}

/// A device tensor's name (its function output's; "" for an upload),
/// dtype, shape and size; the pointers stay valid until it is freed.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_device_tensor_info(
    tensor: *const c_void,
    info: *mut TccTensorInfo,
) -> TccStatus {
    guard(|| {
        let t = device_tensor_of(tensor, false)?;
        *out_ptr(info, "info")? = t.info.to_c();
        Ok(())
    })
}

/// Frees a device tensor; its device memory goes when no call in
/// progress reads it any more.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_device_tensor_free(tensor: *mut c_void) -> TccStatus {
    guard(|| device_tensor_of(tensor, true).map(drop))
}
