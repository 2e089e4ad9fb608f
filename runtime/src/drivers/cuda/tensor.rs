//! Calls on device memory: [`CudaSession::run_device`] runs a function on
//! tensors that already live on the GPU (the caller's, e.g. a torch or
//! CuPy tensor, or an earlier call's output) and returns its outputs as
//! [`CudaTensor`]s, device allocations that tcc owns, without a host copy
//! in either direction. This is what DLPack exchange in the Python module
//! is built on.
//!
//! Stream ordering: the session's stream is a blocking stream
//! (`CU_STREAM_DEFAULT`) of the device's primary context, so its work runs
//! after work queued earlier on the legacy default stream (a DLPack
//! consumer asks the producer to order its work there, `stream=1`). Before
//! `run_device` returns it waits for the session's stream
//! (`cuStreamSynchronize`): the outputs are complete and the inputs are no
//! longer read, so the caller may use or free either at once, on any
//! stream.

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::CudaRuntime;
use super::driver::{
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CuDevicePtr, CuStream, STREAM_DEFAULT,
};
use super::memory::DeviceMemory;
use super::session::CudaSession;
use crate::error::{Error, Result};
use crate::session::exec_error;
use crate::tensor::{DType, HostTensor, byte_size, type_string};

/// A tensor in device memory that the caller owns: its address in the
/// session's CUDA context (the device's primary context), element type and
/// shape, elements dense in row-major order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaInput {
    pub ptr: u64,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// A tensor in device memory owned by tcc, dense and row-major. Its
/// memory comes from the runtime's pool of tensor memory and goes back
/// there when it is dropped, for the next tensor of its size (see
/// `memory::TensorPool`), unless [`CudaTensor::free_on_drop`] was called.
/// It keeps its runtime's context alive, so it may outlive the session
/// that made it.
pub struct CudaTensor {
    rt: CudaRuntime,
    ptr: CuDevicePtr,
    bytes: usize,
    /// The pool's block (`ptr` is its address); `None` only while `Drop`
    /// gives it back.
    memory: Option<DeviceMemory>,
    /// Whether `Drop` frees the block (`cuMemFree`) instead of giving it
    /// back to the pool.
    free_on_drop: AtomicBool,
    dtype: DType,
    shape: Vec<usize>,
}

// SAFETY: the allocation belongs to the runtime's context, which any
// thread may make current; the tensor only reads its fields.
unsafe impl Send for CudaTensor {}
unsafe impl Sync for CudaTensor {}

impl std::fmt::Debug for CudaTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaTensor({} at {:#x} on CUDA device {})",
            self.type_string(),
            self.ptr,
            self.device_ordinal()
        )
    }
}

impl CudaTensor {
    /// A new, uninitialized tensor on `rt`'s device.
    pub fn alloc(rt: &CudaRuntime, dtype: DType, shape: Vec<usize>) -> Result<Self> {
        let bytes = byte_size(&shape, dtype).ok_or_else(|| {
            Error::InvalidInput(format!(
                "tensor {} is too large",
                type_string(&shape, dtype)
            ))
        })?;
        let inner = &rt.inner;
        inner.make_current()?;
        // A zero-byte tensor still gets a distinct, valid address (the
        // pool's smallest class).
        let memory = inner
            .tensor_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .acquire(inner.driver, bytes as u64)?;
        Ok(CudaTensor {
            rt: rt.clone(),
            ptr: memory.ptr(),
            bytes,
            memory: Some(memory),
            free_on_drop: AtomicBool::new(false),
            dtype,
            shape,
        })
    }

    /// A copy of a host tensor on `rt`'s device (`cuMemcpyHtoD`).
    pub fn upload(rt: &CudaRuntime, host: &HostTensor) -> Result<Self> {
        let t = Self::alloc(rt, host.dtype, host.shape.clone())?;
        if t.bytes > 0 {
            let driver = rt.inner.driver;
            // SAFETY: the allocation holds the host tensor's bytes.
            let status = unsafe {
                (driver.api.memcpy_htod)(t.ptr, host.bytes.as_ptr() as *const c_void, t.bytes)
            };
            driver.check(status, || format!("cuMemcpyHtoD({} bytes)", t.bytes))?;
        }
        Ok(t)
    }

    /// Copies the tensor to the host (`cuMemcpyDtoH`, which waits for the
    /// work queued before it on the legacy default stream; through the
    /// runtime's page-locked block, see `CudaRuntime::download`).
    pub fn to_host(&self) -> Result<HostTensor> {
        let bytes = self.rt.download(self.ptr, self.bytes)?;
        HostTensor::new(self.dtype, self.shape.clone(), bytes)
    }

    /// A copy of this tensor in `rt`'s device memory, device to device
    /// (`cuMemcpyPeerAsync` between the two primary contexts, waited
    /// for); the same device's copy is `cuMemcpyDtoDAsync`. Where the
    /// devices can reach each other (`cuDeviceCanAccessPeer`) peer access
    /// is enabled first (`cuCtxEnablePeerAccess`, once per pair), so the
    /// copy goes over NVLink or PCIe peer to peer; else the driver stages
    /// it through host memory itself. Returns the copy and whether peer
    /// access carried it.
    pub fn copy_to(&self, rt: &CudaRuntime) -> Result<(CudaTensor, bool)> {
        let out = Self::alloc(rt, self.dtype, self.shape.clone())?;
        let (src, dst) = (&self.rt.inner, &rt.inner);
        let driver = dst.driver;
        let same = Arc::ptr_eq(src, dst) || src.device == dst.device;
        let mut peer = false;
        if !same {
            let mut can: c_int = 0;
            // SAFETY: the driver writes a flag for two valid devices.
            let status =
                unsafe { (driver.api.device_can_access_peer)(&mut can, dst.device, src.device) };
            driver.check(status, || "cuDeviceCanAccessPeer".into())?;
            if can == 1 {
                dst.make_current()?;
                // SAFETY: the source's primary context is retained by
                // `self.rt`; flags must be 0.
                let status = unsafe { (driver.api.ctx_enable_peer_access)(src.context, 0) };
                if status != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                    driver.check(status, || {
                        format!(
                            "cuCtxEnablePeerAccess(device {} to device {})",
                            rt.device().ordinal,
                            self.device_ordinal()
                        )
                    })?;
                }
                peer = true;
            }
        }
        if self.bytes == 0 {
            return Ok((out, peer));
        }
        dst.make_current()?;
        let mut stream: CuStream = std::ptr::null_mut();
        // SAFETY: the driver writes a new stream of the current context.
        let status = unsafe { (driver.api.stream_create)(&mut stream, STREAM_DEFAULT) };
        driver.check(status, || "cuStreamCreate".into())?;
        let what = || {
            format!(
                "copying {} from CUDA device {} to device {}",
                self.type_string(),
                self.device_ordinal(),
                rt.device().ordinal
            )
        };
        // SAFETY: both allocations hold `bytes`; the source's producing
        // work is finished (`run_device` waits for it) and the stream is
        // waited for before either can be freed.
        let copied = unsafe {
            if same {
                (driver.api.memcpy_dtod_async)(out.ptr, self.ptr, self.bytes, stream)
            } else {
                (driver.api.memcpy_peer_async)(
                    out.ptr,
                    dst.context,
                    self.ptr,
                    src.context,
                    self.bytes,
                    stream,
                )
            }
        };
        // SAFETY: the stream was created above; it is destroyed after its
        // work is waited for.
        let waited = unsafe {
            let waited = (driver.api.stream_synchronize)(stream);
            (driver.api.stream_destroy)(stream);
            waited
        };
        driver.check(copied, what)?;
        driver.check(waited, what)?;
        Ok((out, peer))
    }

    /// The device address (`CUdeviceptr`).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn byte_size(&self) -> usize {
        self.bytes
    }

    /// The CUDA device ordinal of the allocation.
    pub fn device_ordinal(&self) -> usize {
        self.rt.device().ordinal
    }

    /// `1000xf32`.
    pub fn type_string(&self) -> String {
        type_string(&self.shape, self.dtype)
    }

    /// Makes `Drop` free the memory (`cuMemFree`, which waits for the
    /// device) instead of keeping it for a later tensor: for a tensor whose
    /// address was handed to code that tcc does not order its work with
    /// (an exported DLPack tensor, deleted by its consumer).
    pub fn free_on_drop(&self) {
        self.free_on_drop.store(true, Ordering::Relaxed);
    }

    /// The tensor as an input of a later call (borrowed: keep `self`
    /// alive until that call returns).
    pub fn as_input(&self) -> CudaInput {
        CudaInput {
            ptr: self.ptr,
            dtype: self.dtype,
            shape: self.shape.clone(),
        }
    }
}

impl Drop for CudaTensor {
    fn drop(&mut self) {
        let inner = &self.rt.inner;
        let Some(memory) = self.memory.take() else {
            return;
        };
        let mut pool = inner
            .tensor_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !self.free_on_drop.load(Ordering::Relaxed) {
            // No call of a session uses it any more (`run_device` waits
            // for its work); the pool reuses it only after synchronizing
            // the context, for work of others on it.
            pool.release(memory);
        } else if inner.make_current().is_ok() {
            pool.free(inner.driver, memory);
        }
    }
}

impl CudaSession {
    /// Runs `function` on tensors in this device's memory and returns its
    /// outputs in new device allocations: no host copy of an input or an
    /// output. The inputs are checked against the function's types (count,
    /// dtype and shape: [`Error::InvalidInput`] otherwise); a null address
    /// of a non-empty input is refused. Waits for the session's stream
    /// before returning (see the module's notes on stream ordering). With
    /// CUDA graphs on, from the second call at a shape the session's graph
    /// of the function replays: the graph reads and writes the addresses
    /// it was recorded with, so the inputs are copied device to device
    /// into its input memory and its outputs into the new allocations
    /// (a copy in device memory per tensor instead of a launch per
    /// kernel).
    ///
    /// # Safety
    /// Each input's `ptr` must address at least its tensor's bytes of
    /// device memory valid in this device's primary context, unchanged and
    /// alive until this call returns, and its producing work ordered before
    /// the legacy default stream's later work.
    pub unsafe fn run_device(
        &mut self,
        function: &str,
        inputs: &[CudaInput],
    ) -> Result<Vec<CudaTensor>> {
        let model = self.model().clone();
        let f = model.function(function)?;
        f.check_input_types(inputs.iter().map(|t| (t.dtype, t.shape.as_slice())), &[])?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
        let (sized, flat) = f.sized_for(&shapes)?;
        let f = sized.as_ref();
        let mut input_io = Vec::with_capacity(inputs.len());
        for (i, t) in inputs.iter().enumerate() {
            let bytes = byte_size(&t.shape, t.dtype).unwrap_or(0) as u64;
            if t.ptr == 0 && bytes > 0 {
                return Err(Error::InvalidInput(format!(
                    "input {i} of @{}: its device address is NULL",
                    f.name
                )));
            }
            input_io.push((t.ptr, bytes));
        }
        let rt = self.runtime().clone();
        let outputs = f
            .outputs
            .iter()
            .map(|d| CudaTensor::alloc(&rt, d.dtype, d.shape.clone()))
            .collect::<Result<Vec<_>>>()?;
        let output_io: Vec<(u64, u64)> = outputs.iter().map(|t| (t.ptr, t.bytes as u64)).collect();
        rt.inner.make_current()?;
        // From the second call at a shape on: the recorded graph, its
        // inputs and outputs copied device to device.
        let graphs = rt.graphs();
        if graphs && self.run_graph_on_device(f, &flat, &input_io, &output_io)? {
            return Ok(outputs);
        }
        let result = self.execute(
            f,
            crate::hal::shared::CallIo::new(&input_io, &output_io).with_shapes(&flat),
        );
        // Always wait, even after an error: the stream may still use the
        // memory.
        let waited = self.synchronize().map_err(|e| exec_error(f, e));
        result.and(waited)?;
        self.collect_profile()?;
        if graphs {
            self.graph_recordable(f, &flat);
        }
        Ok(outputs)
    }
}
