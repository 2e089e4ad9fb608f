//! A session runs one model's functions on one runtime: it owns the model's
//! kernels, its uploaded constants and the arena of its static memory
//! plan, and calls the artifact's entries.
//!
//! A call works like this: inputs are uploaded (non-blocking), output
//! buffers are taken from the pool, the artifact's entry enqueues its
//! kernels through the `tcc_runtime_api` callbacks, the outputs are read
//! back (non-blocking), and only then does the host wait for the queue.
//!
//! The parts, by concern:
//! - this module: the [`Session`] and [`DeviceTensor`] API, creating and
//!   dropping a session, device tensors and the kernel profile;
//! - `transfers`: host-tensor calls (`run`), what is used in place on a
//!   host-memory device, and the queue's writes, reads and maps (shared
//!   with `async_call`);
//! - `callbacks`: the C callbacks the artifact calls during a call, and
//!   [`Session::execute_on`], which makes that call;
//! - `arena`: the static memory plan's arena and its views;
//! - `lane_memory`: the arena and scratch constants of each extra compute
//!   queue of asynchronous calls;
//! - `program`: building the kernel program and its kernels;
//! - `specialize`: the programs specialized per call shape for a
//!   function on a symbolic dimension.

mod arena;
mod callbacks;
mod lane_memory;
mod numerics;
mod program;
mod specialize;
mod transfers;

use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use opencl3::event::Event;
use opencl3::program::Program;
use opencl3::types::cl_mem;
use serde::Serialize;

pub use arena::ArenaStats;
pub(crate) use callbacks::{CallState, check_view, guarded};
pub use specialize::{MAX_BUCKETS, SPECIALIZE_ENV, Specialization, SpecializationStats};
pub(crate) use transfers::{
    enqueue_read, enqueue_write, input_in_place, map_for_reading, output_in_place, unmap_output,
};

use crate::artifact::FunctionInfo;
use crate::buffer_pool::PoolBuffer;
use crate::error::{ClResultExt, Error, Result};
use crate::host_bytes::HostBytes;
use crate::program_cache::{ProgramOrigin, SourceKind};
use crate::tensor::{DType, HostTensor, type_string};
use crate::timeline::{CommandKind, Recorder, Timeline};
use crate::{Model, Runtime, RuntimeInner, TransferCounters};
use arena::Arena;
use lane_memory::LaneMemory;
use program::{KernelSlot, build_program, kernel_slots};
use transfers::{read_buffer, write_buffer};

/// A command on the queue whose profiling event is read once the queue
/// has run it.
pub(crate) struct PendingCommand {
    pub(crate) kind: CommandKind,
    /// Bytes moved (transfers).
    pub(crate) bytes: Option<u64>,
    pub(crate) event: Event,
    /// When the host had enqueued it (calls whose timeline is recorded).
    pub(crate) enqueued: Option<Instant>,
}

crate::hal::shared::profile_calls!(Session);

impl PendingCommand {
    /// A command of a recorded call, enqueued just now.
    pub(crate) fn traced(kind: CommandKind, bytes: Option<u64>, event: Event) -> Self {
        PendingCommand {
            kind,
            bytes,
            event,
            enqueued: Some(Instant::now()),
        }
    }
}

/// Device time spent in one kernel, summed over its launches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelProfile {
    pub name: String,
    pub calls: u64,
    pub total_ns: u64,
}

impl KernelProfile {
    pub fn mean_ns(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.calls as f64
        }
    }
}

/// A tensor in device memory, from the runtime's buffer pool; its buffer
/// goes back to the pool when it is dropped.
pub struct DeviceTensor {
    dtype: DType,
    shape: Vec<usize>,
    buffer: Option<PoolBuffer>,
    rt: Arc<RuntimeInner>,
}

impl DeviceTensor {
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// `2x3xf32`.
    pub fn type_string(&self) -> String {
        type_string(&self.shape, self.dtype)
    }

    pub fn byte_size(&self) -> usize {
        crate::tensor::byte_size(&self.shape, self.dtype).unwrap_or(0)
    }

    /// Copies the tensor to the host through its own runtime's queue,
    /// after everything queued there before (OpenCL has no copy between
    /// two devices' contexts: a value bound for another device goes
    /// through here and that device's upload).
    pub fn to_host(&self) -> Result<HostTensor> {
        let mut bytes = HostBytes::zeroed(self.byte_size());
        // SAFETY: `bytes` outlives the wait.
        unsafe { read_buffer(&self.rt.queue, self.mem(), &mut bytes) }?;
        self.rt.queue.finish().cl("clFinish")?;
        TransferCounters::add(&self.rt.transfers.bytes_to_host, bytes.len() as u64);
        HostTensor::from_bytes(self.dtype, self.shape.clone(), bytes)
    }

    fn mem(&self) -> cl_mem {
        self.buffer
            .as_ref()
            .map_or(ptr::null_mut(), PoolBuffer::mem)
    }
}

impl Drop for DeviceTensor {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.rt.pool().release(b);
        }
    }
}

impl std::fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceTensor({})", self.type_string())
    }
}

/// One model loaded on one runtime. Create with `Runtime::session`.
pub struct Session {
    pub(crate) rt: Runtime,
    pub(crate) model: Model,
    origin: Option<ProgramOrigin>,
    /// Which of the artifact's kernel forms was built.
    format: Option<SourceKind>,
    /// Why the PTX was not used, when the artifact had it.
    program_note: Option<String>,
    /// Wall time spent getting the program (driver build or cache load).
    program_seconds: f64,
    kernels: Vec<KernelSlot>,
    constants: Vec<Option<PoolBuffer>>,
    arena: Arena,
    /// The buffers of the session's compute queues past the first
    /// (`lane_memory`), by lane - 1.
    lane_memory: Vec<LaneMemory>,
    /// Per constant, whether its bytes are all zero (known once asked).
    zero_constants: Vec<Option<bool>>,
    /// Commands whose events are not yet read: kernel launches when
    /// profiling, and every command of a call whose timeline is recorded.
    pending: Vec<PendingCommand>,
    profile: Vec<KernelProfile>,
    /// The timeline being recorded ([`Session::record_timeline`]).
    timeline: Option<crate::timeline::Recorder>,
    /// The NaN/infinity check of every launch (`Session::check_numerics`).
    numerics: Option<numerics::NumericsCheck>,
    /// Output blocks the caller handed back ([`Session::recycle`]), reused
    /// by later calls instead of fresh memory.
    pub(crate) spare_outputs: crate::host_bytes::SpareOutputs,
    /// Asynchronous calls in flight and their reusable device buffers
    /// (`Session::submit`, in `async_call`).
    pub(crate) calls: crate::async_call::SessionCalls,
    /// Programs specialized per call shape (`specialize`).
    specializer: specialize::Specializer,
    // Kept alive while kernels exist (kernels also retain it).
    _program: Option<Arc<Program>>,
}

impl Session {
    pub(crate) fn new(rt: &Runtime, model: &Model) -> Result<Self> {
        let art = model.artifact();
        let started = std::time::Instant::now();
        let built = if art.kernel_names.is_empty() {
            None
        } else {
            Some(build_program(rt, art)?)
        };
        let program_seconds = started.elapsed().as_secs_f64();
        let (program, origin) = match &built {
            Some(b) => (Some(b.program.clone()), Some(b.origin)),
            None => (None, None),
        };
        let kernels = match &program {
            Some(program) => kernel_slots(program, art)?,
            None => Vec::new(),
        };
        let arena = Arena::new(&rt.inner, art)?;
        let profile = crate::hal::shared::profile_table(&art.kernel_names);
        Ok(Session {
            rt: rt.clone(),
            model: model.clone(),
            origin,
            format: built.as_ref().map(|b| b.format),
            program_seconds,
            program_note: built.and_then(|b| b.note),
            kernels,
            constants: art.constants.iter().map(|_| None).collect(),
            arena,
            lane_memory: Vec::new(),
            zero_constants: art.constants.iter().map(|_| None).collect(),
            pending: Vec::new(),
            profile,
            timeline: None,
            numerics: None,
            spare_outputs: Default::default(),
            calls: crate::async_call::SessionCalls::default(),
            specializer: specialize::Specializer::new(),
            _program: program,
        })
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The arena of the model's static memory plan.
    pub fn arena_stats(&self) -> ArenaStats {
        self.arena.stats()
    }

    /// Where the kernel program came from (`None`: the model has no kernels).
    pub fn program_origin(&self) -> Option<ProgramOrigin> {
        self.origin
    }

    /// Which form of the kernels runs: PTX or OpenCL C (`None`: the model
    /// has no kernels).
    pub fn program_format(&self) -> Option<SourceKind> {
        self.format
    }

    /// Seconds spent getting the kernel program when the session was
    /// created: the driver's build on a cold cache, a load otherwise.
    pub fn program_seconds(&self) -> f64 {
        self.program_seconds
    }

    /// One line saying why the artifact's PTX was not used (another
    /// vendor's device, or a driver that refused it), if it was not.
    pub fn program_note(&self) -> Option<&str> {
        self.program_note.as_deref()
    }

    /// Whether calls of a function on a symbolic dimension launch kernels
    /// specialized for their exact shape (see `specialize`: built at the
    /// first call at each shape, through the program cache). Default:
    /// `TCC_SPECIALIZE`, else [`Specialization::Exact`].
    pub fn set_specialization(&mut self, policy: Specialization) {
        self.specializer.policy = policy;
    }

    /// The session's [`Specialization`] policy.
    pub fn specialization(&self) -> Specialization {
        self.specializer.policy
    }

    /// What run-time specialization has done in this session (builds
    /// still running on their threads are not counted yet).
    pub fn specialization_stats(&self) -> SpecializationStats {
        self.specializer.stats.clone()
    }

    /// Waits for the specialized programs being built (each on a thread
    /// of its own, started by the second call at a shape), so that the
    /// next call at their shapes launches them.
    pub fn wait_for_specializations(&mut self) {
        self.specializer.collect(true);
    }

    /// Calls `function` once on zero inputs and returns how long the call
    /// took, in seconds. On a cold driver cache this is where the driver
    /// compiles each kernel for its launch sizes (PoCL does that at a
    /// kernel's first launch and caches the result on disk), so that a
    /// later process's first real call finds everything built. Used by
    /// `tcc-run --prepare`.
    pub fn warm_up(&mut self, function: &str) -> Result<f64> {
        let model = self.model.clone();
        let f = model.function(function)?;
        let zeros = f.zero_inputs()?;
        let started = std::time::Instant::now();
        self.run(&f.name, &zeros)?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// Runs `function` on device tensors without any host transfer or wait;
    /// the outputs are new device tensors.
    pub fn run_device(
        &mut self,
        function: &str,
        inputs: &[&DeviceTensor],
    ) -> Result<Vec<DeviceTensor>> {
        let model = self.model.clone();
        let f = model.function(function)?;
        if let Some(t) = inputs.iter().find(|t| !Arc::ptr_eq(&t.rt, &self.rt.inner)) {
            return Err(Error::InvalidInput(format!(
                "device tensor {} belongs to another runtime",
                t.type_string()
            )));
        }
        f.check_input_types(inputs.iter().map(|t| (t.dtype, t.shape.as_slice())), &[])?;
        self.calls.join(&self.rt.inner)?;
        // A function on a symbolic dimension: outputs of the call's shapes.
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
        let call = f.shapes_of_call(&shapes)?;
        let outputs = f
            .outputs
            .iter()
            .zip(&call.outputs)
            .map(|(d, shape)| self.alloc(d.dtype, shape.clone()))
            .collect::<Result<Vec<_>>>()?;
        let in_io: Vec<(cl_mem, u64)> = inputs
            .iter()
            .map(|t| (t.mem(), t.byte_size() as u64))
            .collect();
        let out_io: Vec<(cl_mem, u64)> = outputs
            .iter()
            .map(|t| (t.mem(), t.byte_size() as u64))
            .collect();
        self.execute(
            f,
            crate::hal::shared::CallIo::new(&in_io, &out_io).with_shapes(&call.flat),
        )?;
        Ok(outputs)
    }

    /// Whether `tensor` lives in this session's runtime (its context and
    /// queue), so that [`Session::run_device`] takes it as it is.
    pub fn holds(&self, tensor: &DeviceTensor) -> bool {
        Arc::ptr_eq(&tensor.rt, &self.rt.inner)
    }

    /// An uninitialised device tensor from the pool.
    pub fn alloc(&self, dtype: DType, shape: Vec<usize>) -> Result<DeviceTensor> {
        let bytes = crate::tensor::byte_size(&shape, dtype).ok_or_else(|| {
            Error::InvalidInput(format!(
                "tensor {} is too large",
                type_string(&shape, dtype)
            ))
        })?;
        let buffer = self
            .rt
            .inner
            .pool()
            .acquire(&self.rt.inner.context, bytes as u64)?;
        Ok(DeviceTensor {
            dtype,
            shape,
            buffer: Some(buffer),
            rt: self.rt.inner.clone(),
        })
    }

    /// Copies a host tensor to the device (waits for the copy).
    pub fn upload(&self, tensor: &HostTensor) -> Result<DeviceTensor> {
        let t = self.alloc(tensor.dtype, tensor.shape.clone())?;
        // SAFETY: the write is blocking.
        unsafe { write_buffer(&self.rt.inner.queue, t.mem(), &tensor.bytes, true) }?;
        TransferCounters::add(
            &self.rt.inner.transfers.bytes_to_device,
            tensor.bytes.len() as u64,
        );
        Ok(t)
    }

    /// Copies a device tensor to the host, after everything queued before.
    pub fn download(&self, tensor: &DeviceTensor) -> Result<HostTensor> {
        let mut bytes = HostBytes::zeroed(tensor.byte_size());
        // SAFETY: `bytes` outlives the wait.
        unsafe { read_buffer(&self.rt.inner.queue, tensor.mem(), &mut bytes) }?;
        self.rt.inner.queue.finish().cl("clFinish")?;
        TransferCounters::add(&self.rt.inner.transfers.bytes_to_host, bytes.len() as u64);
        HostTensor::from_bytes(tensor.dtype, tensor.shape.clone(), bytes)
    }

    /// Waits for the session's calls on its own queues and its queue.
    fn finish_work(&mut self) -> Result<()> {
        self.calls.join(&self.rt.inner)?;
        self.rt.inner.queue.finish().cl("clFinish")
    }

    /// Folds finished launch events into `profile`, and ends the recorded
    /// call in progress with its commands' times; the queue must be idle.
    fn collect_profile(&mut self) -> Result<()> {
        let tracing = self.timeline.as_ref().is_some_and(Recorder::recording);
        // (command, queued, start, end) on the device's clock.
        let mut timed = Vec::new();
        for p in self.pending.drain(..) {
            let start = p
                .event
                .profiling_command_start()
                .cl("clGetEventProfilingInfo")?;
            let end = p
                .event
                .profiling_command_end()
                .cl("clGetEventProfilingInfo")?;
            if let CommandKind::Kernel(k) = p.kind {
                let profile = &mut self.profile[k];
                profile.calls += 1;
                profile.total_ns += end.saturating_sub(start);
            }
            if tracing && let Some(enqueued) = p.enqueued {
                let queued = p
                    .event
                    .profiling_command_queued()
                    .cl("clGetEventProfilingInfo")?;
                timed.push((p.kind, p.bytes, enqueued, queued, start, end));
            }
        }
        if let Some(recorder) = self.timeline.as_mut().filter(|r| r.recording()) {
            // The clocks' offset: the host noted each command's time after
            // its QUEUED stamp, so host - queued bounds it from above.
            let offset = timed
                .iter()
                .map(|&(_, _, enqueued, queued, _, _)| {
                    recorder.ns(enqueued) as i128 - queued as i128
                })
                .min()
                .unwrap_or(0);
            let host = |device: u64| (device as i128 + offset).max(0) as u64;
            let commands = timed
                .into_iter()
                .map(|(kind, bytes, _, _, start, end)| crate::timeline::Command {
                    kind,
                    bytes,
                    start_ns: host(start),
                    end_ns: host(end.max(start)),
                })
                .collect();
            recorder.end(commands);
        }
        Ok(())
    }

    /// Records a timeline of this session's next `max_calls` calls of
    /// [`Session::run`] (host-tensor calls): each call's host span and its
    /// kernels, uploads, downloads and copies with their device times
    /// (see `timeline`). Needs a runtime with profiling on. Starts afresh
    /// when already recording.
    pub fn record_timeline(&mut self, max_calls: usize) -> Result<()> {
        if !self.rt.inner.profiling {
            return Err(Error::InvalidInput(
                "a timeline needs profiling events: create the runtime with RuntimeOptions { profiling: true, .. }".into(),
            ));
        }
        self.timeline = Some(Recorder::new(max_calls));
        Ok(())
    }

    /// The timeline recorded since [`Session::record_timeline`], which
    /// stops recording (`None` when none was being recorded).
    pub fn take_timeline(&mut self) -> Option<Timeline> {
        let recorder = self.timeline.take()?;
        Some(recorder.finish("OpenCL queue", &self.rt.device().name, &self.model))
    }

    /// Starts recording the call of `function` that begins now, when a
    /// timeline is recorded and has room; whether it is recorded.
    fn begin_traced_call(&mut self, function: &str) -> bool {
        self.timeline
            .as_mut()
            .is_some_and(|recorder| recorder.begin(function))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Pending constant uploads read the artifact's memory: wait for them
        // (and for the session's own queues).
        self.calls.finish_own_queue();
        let _ = self.rt.inner.queue.finish();
        // Builds of specialized programs still running end first.
        self.specializer.collect(true);
        // Device buffers kept for asynchronous calls go back to the pool
        // (calls still in flight return theirs when their handles finish).
        self.calls.close(&self.rt.inner);
        // Kernels go first: NVIDIA's OpenCL touches the memory objects last
        // set as a kernel's arguments when the kernel is released, so a
        // sub-buffer of the arena released before the kernels that used it
        // crashed the process at exit (seen on the H100, driver 580).
        self.kernels.clear();
        let mut pool = self.rt.inner.pool();
        for c in self.constants.drain(..).flatten() {
            pool.release(c);
        }
        self.arena.release(&mut pool);
        for m in &mut self.lane_memory {
            m.release(&mut pool);
        }
    }
}

impl Session {
    /// Makes sure compute lane `lane` has its buffers (lane 0 uses the
    /// session's own).
    pub(crate) fn prepare_lane(&mut self, lane: usize) -> Result<()> {
        while self.lane_memory.len() < lane {
            let m = LaneMemory::new(
                &self.rt.inner,
                self.model.artifact(),
                self._program.as_deref(),
            )?;
            self.lane_memory.push(m);
        }
        Ok(())
    }
}

pub(crate) fn exec_error(f: &FunctionInfo, e: Error) -> Error {
    Error::Execution {
        function: f.name.clone(),
        message: e.to_string(),
    }
}
