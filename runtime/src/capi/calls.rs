//! The C API's session and call entry points: creating a session, and
//! running a function synchronously (`tcc_session_run`) or asynchronously
//! (`tcc_session_run_async`: `Session::submit`, so that a session's calls
//! are in flight together up to its depth, on its compute queues; finished
//! by `tcc_call_wait`), with every tensor argument checked against the
//! function's signature first; and a session's in-flight depth and compute
//! queues (`tcc_session_set_max_in_flight`, `tcc_session_set_compute_queues`,
//! as `tcc-benchmark --in-flight` and `--compute-queues`).

use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex, PoisonError};

use super::registry::CSession;
use super::registry::{
    CallObject, Object, SessionObject, call_of, model_of, register, runtime_of, session_of,
};
use super::{
    CResult, Failure, TCC_ERROR_INTERNAL, TCC_ERROR_INVALID_HANDLE, TCC_ERROR_NULL_ARGUMENT,
    TccStatus, TccTensor, c_str, guard, handle_out, invalid, out_ptr,
};
use crate::hal::{AnyDevice, Device, Lanes};
use crate::{CallHandle, DType, HostTensor};

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_create(
    runtime: *mut c_void,
    model: *mut c_void,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        let runtime = runtime_of(runtime, false)?;
        let model = model_of(model, false)?;
        let session = match &runtime.runtime {
            AnyDevice::OpenCl(rt) => CSession::OpenCl(Box::new(rt.session(&model.model)?)),
            device => CSession::Core(Lanes::new(device, &model.model, 1)?),
        };
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

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_set_max_in_flight(session: *mut c_void, depth: usize) -> TccStatus {
    guard(|| {
        if depth == 0 {
            return Err(invalid("the in-flight depth must be at least 1"));
        }
        let session = session_of(session, false)?;
        let mut session = session.lock();
        match &mut *session {
            CSession::OpenCl(s) => s.set_max_in_flight(depth),
            CSession::Placed(_) => {
                return Err(invalid(
                    "a placed session runs one call at a time (its functions are on several devices)",
                ));
            }
            CSession::Core(lanes) => {
                if lanes.len() != depth {
                    // As many sessions as calls in flight, each on a stream
                    // (CUDA) or command buffer (Vulkan) of its own; CUDA's
                    // module comes from the runtime's cache.
                    *lanes = Lanes::new(&lanes.device().clone(), &lanes.model().clone(), depth)?;
                }
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_set_compute_queues(
    session: *mut c_void,
    setting: *const c_char,
) -> TccStatus {
    guard(|| {
        let setting = c_str(setting, "setting")?;
        let queues = crate::ComputeQueues::parse(&setting)?;
        let session = session_of(session, false)?;
        match &mut *session.lock() {
            CSession::OpenCl(s) => s.set_compute_queues(queues)?,
            CSession::Placed(_) => {
                return Err(invalid(
                    "compute queues are OpenCL's, for a session on one device",
                ));
            }
            CSession::Core(lanes) => {
                return Err(invalid(format!(
                    "compute queues are OpenCL's; a {} session's calls in flight each have a session of their own (tcc_session_set_max_in_flight)",
                    lanes.device().driver().title()
                )));
            }
        }
        Ok(())
    })
}

/// Where an output goes: the caller's buffer, checked against the
/// signature.
#[derive(Clone, Copy)]
pub(super) struct OutputSlot {
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

pub(super) fn describe_tensor(t: &TccTensor, what: &str) -> CResult<(DType, Vec<usize>)> {
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
    let info = function_of(model, function)?;
    let name = &info.name;
    let ins = tensors(inputs, num_inputs, "input")?;
    let outs = tensors(outputs, num_outputs, "output")?;
    check_counts(info, ins.len(), outs.len())?;
    let inputs = host_inputs(info, ins)?;
    // A function on a symbolic dimension: the outputs' shapes follow
    // from the inputs' (each dimension checked against its range).
    let output_shapes = if info.is_dynamic() {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
        info.call_shapes(&shapes)?.outputs
    } else {
        info.outputs.iter().map(|d| d.shape.clone()).collect()
    };
    Ok(PreparedCall {
        inputs,
        outputs: output_slots(info, outs, &output_shapes)?,
        function: name.clone(),
        session,
    })
}

/// That a call gives `info`'s function as many inputs and outputs as it
/// has.
pub(super) fn check_counts(
    info: &crate::FunctionInfo,
    inputs: usize,
    outputs: usize,
) -> CResult<()> {
    let count = |kind: &str, expected: usize, got: usize| {
        invalid(format!(
            "@{} has {expected} {kind}{}, got {got}",
            info.name,
            if expected == 1 { "" } else { "s" }
        ))
    };
    if inputs != info.inputs.len() {
        return Err(count("input", info.inputs.len(), inputs));
    }
    if outputs != info.outputs.len() {
        return Err(count("output", info.outputs.len(), outputs));
    }
    Ok(())
}

/// The function a call names (`NULL`: the model's only one).
pub(super) fn function_of(
    model: &crate::Model,
    function: *const c_char,
) -> CResult<&crate::FunctionInfo> {
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
    Ok(model.function(&function)?)
}

/// Checks a C tensor against the signature's `desc`, whose shape is
/// `expected` in this call (`None`: an input of a function on a symbolic
/// dimension, whose shape the call binds: only its type is checked here).
fn check_tensor(
    t: &TccTensor,
    desc: &crate::TensorDesc,
    expected: Option<&[usize]>,
    what: String,
) -> CResult<Vec<usize>> {
    let (dtype, shape) = describe_tensor(t, &what)?;
    let shape_differs = expected.is_some_and(|e| shape != e);
    if dtype != desc.dtype
        || shape_differs
        || (expected.is_none() && shape.len() != desc.shape.len())
    {
        let wanted = match expected {
            Some(e) if desc.dims.is_empty() => crate::tensor::type_string(e, desc.dtype),
            Some(e) => format!(
                "{} (here {})",
                desc.type_string(),
                crate::tensor::type_string(e, desc.dtype)
            ),
            None => desc.type_string(),
        };
        return Err(invalid(format!(
            "{what} expects {wanted}, got {}",
            crate::tensor::type_string(&shape, dtype)
        )));
    }
    let expected = crate::tensor::byte_size(&shape, dtype).unwrap_or(usize::MAX) as u64;
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
    Ok(shape)
}

/// The inputs of `info`'s function, checked and copied.
fn host_inputs(info: &crate::FunctionInfo, ins: &[TccTensor]) -> CResult<Vec<HostTensor>> {
    let name = &info.name;
    let mut host_inputs = Vec::with_capacity(ins.len());
    for (i, (t, desc)) in ins.iter().zip(&info.inputs).enumerate() {
        let expected = (!info.is_dynamic()).then_some(desc.shape.as_slice());
        let shape = check_tensor(t, desc, expected, format!("input {i} of @{name}"))?;
        let bytes = if t.bytes == 0 {
            Vec::new()
        } else {
            // SAFETY: checked non-null; the caller promises `bytes` bytes.
            unsafe { std::slice::from_raw_parts(t.data as *const u8, t.bytes as usize) }.to_vec()
        };
        host_inputs.push(HostTensor::new(desc.dtype, shape, bytes)?);
    }
    if info.is_dynamic() {
        info.check_inputs(&host_inputs, &[])?;
    }
    Ok(host_inputs)
}

/// The output buffers of `info`'s function, checked against this call's
/// output shapes.
fn output_slots(
    info: &crate::FunctionInfo,
    outs: &[TccTensor],
    shapes: &[Vec<usize>],
) -> CResult<Vec<OutputSlot>> {
    let mut slots = Vec::with_capacity(outs.len());
    for (i, ((t, desc), shape)) in outs.iter().zip(&info.outputs).zip(shapes).enumerate() {
        check_tensor(
            t,
            desc,
            Some(shape),
            format!("output {i} of @{}", info.name),
        )?;
        slots.push(OutputSlot {
            data: t.data as *mut u8,
            bytes: t.bytes as usize,
        });
    }
    Ok(slots)
}

/// A session whose functions are placed on several runtimes' devices
/// (`hal::Placement`): `runtimes[i]` is device `i` of `placement`
/// (`FUNCTION=I[,FUNCTION=I...]`; functions not named run on device 0).
#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_create_placed(
    runtimes: *const *mut c_void,
    num_runtimes: usize,
    model: *mut c_void,
    placement: *const c_char,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        if num_runtimes == 0 {
            return Err(invalid("a placed session needs at least one runtime"));
        }
        let devices = runtime_handles(runtimes, num_runtimes)?
            .iter()
            .map(|&h| Ok(runtime_of(h, false)?.runtime.clone()))
            .collect::<CResult<Vec<AnyDevice>>>()?;
        let model = model_of(model, false)?;
        let places = crate::hal::parse_placement(&c_str(placement, "placement")?)?;
        let placed = crate::hal::Placement::new(&devices, &model.model, &places)?;
        *out = register(Object::Session(Arc::new(SessionObject {
            session: Mutex::new(CSession::Placed(Box::new(placed))),
            model,
        })));
        Ok(())
    })
}

/// The `n` runtime handles at `p` (non-null).
fn runtime_handles<'a>(p: *const *mut c_void, n: usize) -> CResult<&'a [*mut c_void]> {
    super::non_null(p, "runtimes")?;
    // SAFETY: non-null, `n` entries per the API.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Runs `functions` (comma-separated) in order on a placed session: the
/// inputs are the first function's, the outputs the last one's; the
/// values between them stay in device memory, copied between devices
/// where two functions run on different ones.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_session_run_pipeline(
    session: *mut c_void,
    functions: *const c_char,
    inputs: *const TccTensor,
    num_inputs: usize,
    outputs: *const TccTensor,
    num_outputs: usize,
) -> TccStatus {
    guard(|| {
        let session = session_of(session, false)?;
        let list = c_str(functions, "functions")?;
        let model = &session.model.model;
        let names = list
            .split(',')
            .map(|f| Ok(model.function(f.trim())?.name.clone()))
            .collect::<CResult<Vec<String>>>()?;
        let (first, last) = (
            model.function(&names[0])?,
            model.function(names.last().expect("split gives one"))?,
        );
        let ins = tensors(inputs, num_inputs, "input")?;
        let outs = tensors(outputs, num_outputs, "output")?;
        if ins.len() != first.inputs.len() || outs.len() != last.outputs.len() {
            return Err(invalid(format!(
                "the pipeline takes @{}'s {} input(s) and gives @{}'s {} output(s); got {} and {}",
                first.name,
                first.inputs.len(),
                last.name,
                last.outputs.len(),
                ins.len(),
                outs.len()
            )));
        }
        let inputs = host_inputs(first, ins)?;
        // A pipeline's stages are static (placement, issue 33 step 2).
        let shapes: Vec<Vec<usize>> = last.outputs.iter().map(|d| d.shape.clone()).collect();
        if first.is_dynamic() || last.is_dynamic() {
            return Err(invalid(
                "tcc_session_run_pipeline runs functions of static shapes only; run a function on a symbolic dimension with tcc_session_run",
            ));
        }
        let slots = output_slots(last, outs, &shapes)?;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let results = match &mut *session.lock() {
            CSession::Placed(p) => p.run_pipeline(&refs, &inputs)?,
            _ => {
                return Err(invalid(
                    "tcc_session_run_pipeline needs a placed session (tcc_session_create_placed)",
                ));
            }
        };
        write_outputs(&last.name, &slots, &results)
    })
}
impl PreparedCall {
    fn session(&self) -> std::sync::MutexGuard<'_, CSession> {
        self.session.lock()
    }

    fn execute(self) -> CResult<()> {
        let results = match &mut *self.session() {
            CSession::OpenCl(s) => s.run(&self.function, &self.inputs)?,
            CSession::Core(lanes) => lanes.run(&self.function, &self.inputs)?,
            CSession::Placed(p) => p.run(&self.function, &self.inputs)?,
        };
        write_outputs(&self.function, &self.outputs, &results)
    }

    /// Submits the call (`Session::submit`); the session is locked only
    /// while it is enqueued. A failure is kept for `tcc_call_wait`.
    fn submit(mut self) -> PendingCall {
        let inputs = std::mem::take(&mut self.inputs);
        let submitted = match &mut *self.session() {
            CSession::OpenCl(s) => s
                .submit(&self.function, inputs)
                .map(|h| InFlight::OpenCl(Box::new(h))),
            CSession::Core(lanes) => lanes
                .submit(&self.function, inputs)
                .map(|p| InFlight::Core(Box::new(p))),
            // Runs now, on the functions' devices; waiting returns it.
            CSession::Placed(p) => Ok(InFlight::Done(p.run(&self.function, &inputs))),
        };
        match submitted {
            Ok(handle) => PendingCall::InFlight {
                handle,
                function: self.function,
                outputs: self.outputs,
            },
            Err(e) => PendingCall::Failed(e.into()),
        }
    }
}

/// Copies a call's results into the caller's output buffers.
fn write_outputs(function: &str, slots: &[OutputSlot], results: &[HostTensor]) -> CResult<()> {
    for (slot, result) in slots.iter().zip(results) {
        let bytes: &[u8] = &result.bytes;
        if bytes.len() != slot.bytes {
            return Err(Failure(
                TCC_ERROR_INTERNAL,
                format!(
                    "@{function} returned {} bytes for a {}-byte output",
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

/// A call of `tcc_session_run_async` until `tcc_call_wait`.
/// A call in flight on either driver.
pub(super) enum InFlight {
    OpenCl(Box<CallHandle>),
    Core(Box<crate::hal::Pending>),
    /// A placed session's call, run at submission.
    Done(crate::Result<Vec<HostTensor>>),
}

impl InFlight {
    fn is_ready(&mut self) -> bool {
        match self {
            InFlight::OpenCl(h) => h.is_ready(),
            InFlight::Core(p) => p.is_done(),
            InFlight::Done(_) => true,
        }
    }

    fn wait(self) -> crate::Result<Vec<HostTensor>> {
        match self {
            InFlight::OpenCl(mut h) => h.wait(),
            InFlight::Core(p) => p.wait(),
            InFlight::Done(r) => r,
        }
    }
}

pub(super) enum PendingCall {
    InFlight {
        handle: InFlight,
        function: String,
        outputs: Vec<OutputSlot>,
    },
    /// `Session::submit` refused it (the status `tcc_call_wait` returns).
    Failed(Failure),
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
        let call = handle_out(call, "call")?;
        let prepared = prepare(session, function, inputs, num_inputs, outputs, num_outputs)?;
        *call = register(Object::Call(Arc::new(CallObject {
            call: Mutex::new(Some(prepared.submit())),
        })));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_call_done(call: *const c_void, done: *mut c_int) -> TccStatus {
    guard(|| {
        let call = call_of(call, false)?;
        let ready = match call
            .call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            Some(PendingCall::InFlight { handle, .. }) => handle.is_ready(),
            Some(PendingCall::Failed(_)) | None => true,
        };
        *out_ptr(done, "done")? = c_int::from(ready);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_call_wait(call: *mut c_void) -> TccStatus {
    guard(|| {
        let call = call_of(call, true)?;
        let pending = call
            .call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match pending {
            Some(PendingCall::InFlight {
                handle,
                function,
                outputs,
            }) => write_outputs(&function, &outputs, &handle.wait()?),
            Some(PendingCall::Failed(failure)) => Err(failure),
            None => Err(Failure(
                TCC_ERROR_INVALID_HANDLE,
                "the call was already waited for".into(),
            )),
        }
    })
}
