//! [`CudaSession`]: one model on one CUDA device. It owns the model's
//! CUDA module (its PTX, compiled by the driver when the first session
//! of the model on the runtime is created, then taken from the runtime's
//! module cache), one function per kernel in the artifact's order, the
//! constants (uploaded on first use, once per session), the arena of the
//! static memory plan, a pool of device memory and a stream.
//!
//! A call uploads its inputs (`cuMemcpyHtoDAsync` on the session's
//! stream: never the legacy default stream, whose synchronous copies wait
//! for every stream of the context), calls the artifact's entry (whose
//! callbacks, in `call`, enqueue kernels and copies on the stream), waits
//! for the stream and downloads the outputs (`cuMemcpyDtoHAsync`). With
//! profiling on, each launch is bracketed by a pair of CUDA events whose
//! elapsed time is the kernel's device time. Without profiling, calls
//! from the second on replay a CUDA graph of the function (`graph`).

use std::collections::HashMap;
use std::ffi::{CString, c_int, c_void};
use std::time::Instant;

use super::driver::{self, CuDevicePtr, CuEvent, CuFunction, CuModule, CuStream, Driver};
use super::graph::GraphState;
use super::memory::{DeviceMemory, MemoryPool};
use super::ptx::entry_parameters;
use super::{CudaRuntime, DynamicLocal};
use crate::buffer_pool::PoolStats;
use crate::error::{Error, Result};
use crate::host_bytes::{HostBytes, SpareOutputs};
use crate::session::{KernelProfile, exec_error};
use crate::tensor::HostTensor;
use crate::timeline::{Command, CommandKind, PendingTime, Recorder, Timeline};
use crate::{FunctionInfo, Model};

/// Bytes of ptxas's error log kept when the driver rejects the PTX.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// A command of a recorded call (not a kernel): what it did, its bytes
/// and how it is timed (an event pair on the stream, or the host's clock
/// around a synchronous copy).
pub(super) struct TracedCommand {
    pub(super) kind: CommandKind,
    pub(super) bytes: Option<u64>,
    pub(super) time: PendingTime<(CuEvent, CuEvent)>,
}

/// One of the artifact's kernels, as `launch` finds it by index.
pub(super) struct CudaKernel {
    pub(super) name: String,
    pub(super) function: CuFunction,
    /// Byte size of each parameter, from the PTX `.entry`.
    pub(super) params: Vec<u32>,
    /// Dynamic shared memory of each launch (its marker's bytes, else 0).
    pub(super) shared_bytes: u32,
}

/// One model loaded on one CUDA device. Create with
/// [`CudaRuntime::session`].
pub struct CudaSession {
    pub(super) rt: CudaRuntime,
    model: Model,
    pub(super) stream: CuStream,
    module: CuModule,
    pub(super) kernels: Vec<CudaKernel>,
    dynamic_local: Vec<DynamicLocal>,
    /// Per constant, its device copy once uploaded.
    pub(super) constants: Vec<Option<DeviceMemory>>,
    /// The arena of the largest static memory plan (`None`: no plan).
    pub(super) arena: Option<DeviceMemory>,
    pub(super) pool: MemoryPool,
    /// Events to reuse for profiling.
    pub(super) spare_events: Vec<CuEvent>,
    /// Launches not yet read (profiling only): kernel index, start, end.
    pub(super) pending: Vec<(usize, CuEvent, CuEvent)>,
    profile: Vec<KernelProfile>,
    /// The timeline being recorded ([`CudaSession::record_timeline`]).
    timeline: Option<Recorder>,
    /// The recorded call in progress: the event recorded at its start and
    /// the host's time of recording it.
    trace_start: Option<(CuEvent, Instant)>,
    /// Its commands other than kernels (whose events are in `pending`),
    /// kept by `call`'s callbacks and the session's copies.
    pub(super) traced: Vec<TracedCommand>,
    /// Its kernels once their events are read.
    traced_kernels: Vec<Command>,
    /// The session's handle counter (see `handles`).
    pub(super) next_handle: u64,
    spare_outputs: SpareOutputs,
    load_seconds: f64,
    /// Each called function's CUDA graph state (graphs on only).
    pub(super) graphs: HashMap<String, GraphState>,
}

// SAFETY: the stream, module, functions and events are driver handles of
// the runtime's context, usable from any thread on which that context is
// current; every method makes it current first, and the session is used
// from one thread at a time (`&mut self`).
unsafe impl Send for CudaSession {}

crate::hal::shared::host_calls!(CudaSession);
crate::hal::shared::profile_calls!(CudaSession);

impl CudaSession {
    pub(super) fn new(rt: &CudaRuntime, model: &Model) -> Result<Self> {
        let art = model.artifact();
        super::check_runnable(model)?;
        // An artifact without kernels has no PTX to load.
        let ptx = art.ptx.as_deref().unwrap_or_default();
        let text = String::from_utf8_lossy(ptx);
        let malformed = |reason: String| Error::MalformedArtifact {
            path: art.path.clone(),
            reason,
        };
        let dynamic_local = super::dynamic_local(model)?;
        let params = entry_parameters(&text).map_err(malformed)?;
        let inner = &rt.inner;
        inner.make_current()?;
        let driver = inner.driver;
        let mut stream: CuStream = std::ptr::null_mut();
        // SAFETY: the driver writes the new stream's handle.
        let status = unsafe { (driver.api.stream_create)(&mut stream, driver::STREAM_DEFAULT) };
        driver.check(status, || "cuStreamCreate".into())?;
        // From here on, `Drop` frees whatever has been created.
        let mut session = CudaSession {
            rt: rt.clone(),
            model: model.clone(),
            stream,
            module: std::ptr::null_mut(),
            kernels: Vec::new(),
            dynamic_local,
            constants: art.constants.iter().map(|_| None).collect(),
            arena: None,
            pool: MemoryPool::default(),
            spare_events: Vec::new(),
            pending: Vec::new(),
            profile: crate::hal::shared::profile_table(&art.kernel_names),
            timeline: None,
            trace_start: None,
            traced: Vec::new(),
            traced_kernels: Vec::new(),
            next_handle: 0,
            spare_outputs: SpareOutputs::default(),
            load_seconds: 0.0,
            graphs: HashMap::new(),
        };
        if !art.kernel_names.is_empty() {
            let started = Instant::now();
            session.module = inner.module(ptx, |ptx| load_module(driver, ptx, &inner.info.name))?;
            session.load_seconds = started.elapsed().as_secs_f64();
        }
        for name in &art.kernel_names {
            let kernel = session.kernel(name, &params)?;
            session.kernels.push(kernel);
        }
        let plan_bytes = art.arena_bytes();
        if plan_bytes > 0 {
            session.arena = Some(session.pool.acquire(driver, plan_bytes)?);
        }
        Ok(session)
    }

    /// The function of kernel `name`, its parameters and its dynamic
    /// shared memory (the limit raised when it has a marker).
    fn kernel(
        &self,
        name: &str,
        params: &std::collections::HashMap<String, Vec<u32>>,
    ) -> Result<CudaKernel> {
        let art = self.model.artifact();
        let driver = self.rt.inner.driver;
        let malformed = |reason: String| Error::MalformedArtifact {
            path: art.path.clone(),
            reason,
        };
        let c_name = CString::new(name)
            .map_err(|_| malformed(format!("kernel name `{name}` contains NUL")))?;
        let mut function: CuFunction = std::ptr::null_mut();
        // SAFETY: the module is loaded; the driver writes the handle.
        let status = unsafe {
            (driver.api.module_get_function)(&mut function, self.module, c_name.as_ptr())
        };
        if status != 0 {
            return Err(malformed(format!(
                "kernel `{name}` is not in the artifact's PTX (cuModuleGetFunction: {})",
                driver.error_name(status)
            )));
        }
        let params = params
            .get(name)
            .cloned()
            .ok_or_else(|| malformed(format!("no `.entry {name}(...)` in the artifact's PTX")))?;
        let shared_bytes = self
            .dynamic_local
            .iter()
            .find(|d| d.kernel == name)
            .map_or(0, |d| d.bytes);
        if shared_bytes > 0 {
            let info = &self.rt.inner.info;
            let mut static_bytes: c_int = 0;
            // SAFETY: the driver writes one int.
            let status = unsafe {
                (driver.api.func_get_attribute)(
                    &mut static_bytes,
                    driver::FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                    function,
                )
            };
            driver.check(status, || {
                format!("cuFuncGetAttribute(kernel `{name}`, static shared memory)")
            })?;
            let total = shared_bytes as u64 + static_bytes.max(0) as u64;
            if total > info.shared_mem_per_block_optin {
                return Err(Error::Unsupported(format!(
                    "kernel `{name}` needs {shared_bytes} bytes of dynamic shared memory (+{static_bytes} static), more than the {} bytes per block {} allows",
                    info.shared_mem_per_block_optin, info.name
                )));
            }
            let value = c_int::try_from(shared_bytes).map_err(|_| {
                malformed(format!(
                    "kernel `{name}`: {shared_bytes} bytes of dynamic shared memory"
                ))
            })?;
            // SAFETY: a valid function and attribute.
            let status = unsafe {
                (driver.api.func_set_attribute)(
                    function,
                    driver::FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    value,
                )
            };
            driver.check(status, || {
                format!("cuFuncSetAttribute(kernel `{name}`, MAX_DYNAMIC_SHARED_SIZE_BYTES, {shared_bytes})")
            })?;
        }
        Ok(CudaKernel {
            name: name.to_string(),
            function,
            params,
            shared_bytes,
        })
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn runtime(&self) -> &CudaRuntime {
        &self.rt
    }

    /// Seconds the driver took to load the PTX (`cuModuleLoadDataEx`:
    /// ptxas on a cold driver cache, `~/.nv/ComputeCache`, a load otherwise).
    pub fn load_seconds(&self) -> f64 {
        self.load_seconds
    }

    /// The kernels launched with dynamic shared memory, and how much.
    pub fn dynamic_local(&self) -> &[DynamicLocal] {
        &self.dynamic_local
    }

    /// The session's device memory: arena, constants, temporaries and the
    /// calls' inputs and outputs.
    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// The call of `f` (its inputs checked by `run_with_sources`, see
    /// [`crate::hal::shared::host_calls`]).
    fn run_checked(&mut self, f: &FunctionInfo, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        // A function on a symbolic dimension: this call's shapes.
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
        let (sized, flat) = f.sized_for(&shapes)?;
        let f = sized.as_ref();
        self.rt.inner.make_current()?;
        let graphs = self.rt.graphs();
        if graphs && let Some(outputs) = self.run_graph(f, &flat, inputs)? {
            return Ok(outputs);
        }
        let driver = self.rt.inner.driver;
        self.begin_traced_call(&f.name)?;
        let mut io: Vec<DeviceMemory> = Vec::with_capacity(inputs.len() + f.outputs.len());
        let result = self.call(driver, f, &flat, inputs, &mut io);
        // Always wait, even after an error: the stream may still use `io`.
        let waited = self.synchronize().map_err(|e| exec_error(f, e));
        let output_ptrs: Vec<CuDevicePtr> = io[inputs.len().min(io.len())..]
            .iter()
            .map(DeviceMemory::ptr)
            .collect();
        let outputs = result
            .and(waited)
            .and_then(|()| self.download(f, &output_ptrs));
        for memory in io {
            self.pool.release(memory);
        }
        let outputs = outputs?;
        self.collect_profile()?;
        self.end_traced_call()?;
        if graphs {
            self.graph_recordable(f, &flat);
        }
        Ok(outputs)
    }

    /// After a call of `f` without a graph: the constants are uploaded
    /// now, so the next call (at this shape, for a function on a symbolic
    /// dimension) can be recorded, within the shapes a function keeps
    /// graphs for.
    pub(super) fn graph_recordable(&mut self, f: &FunctionInfo, flat: &[i64]) {
        let key = super::graph::graph_key(&f.name, flat);
        let shapes_recorded = self
            .graphs
            .keys()
            .filter(|k| super::graph::graph_key_is_of(k, &f.name))
            .count();
        if self.graphs.contains_key(&key) || shapes_recorded < super::graph::MAX_GRAPHS_PER_FUNCTION
        {
            self.graphs.entry(key).or_insert(GraphState::Recordable);
        }
    }

    /// Copies `f`'s outputs from device memory (one pointer per output;
    /// the stream must be idle).
    pub(super) fn download(
        &mut self,
        f: &FunctionInfo,
        outputs: &[CuDevicePtr],
    ) -> Result<Vec<HostTensor>> {
        let driver = self.rt.inner.driver;
        f.outputs
            .iter()
            .zip(outputs)
            .map(|(d, &ptr)| {
                let mut bytes = self.output_block(d.byte_size());
                if !bytes.is_empty() {
                    let started = Instant::now();
                    // SAFETY: `bytes` has the output's size; the stream is
                    // idle. On the session's stream, not the legacy default
                    // one (which waits for every stream in the context);
                    // into pageable memory the call returns when the bytes
                    // are there.
                    let status = unsafe {
                        (driver.api.memcpy_dtoh_async)(
                            bytes.as_mut_ptr() as *mut c_void,
                            ptr,
                            bytes.len(),
                            self.stream,
                        )
                    };
                    driver.check(status, || {
                        format!("cuMemcpyDtoHAsync({} bytes)", bytes.len())
                    })?;
                    if self.trace_start.is_some() {
                        self.traced.push(TracedCommand {
                            kind: CommandKind::Download,
                            bytes: Some(bytes.len() as u64),
                            time: PendingTime::Host(started, Instant::now()),
                        });
                    }
                }
                HostTensor::from_bytes(d.dtype, d.shape.clone(), bytes)
            })
            .collect()
    }

    /// Uploads the inputs into `io`, adds the outputs' memory, and calls
    /// the entry.
    fn call(
        &mut self,
        driver: &Driver,
        f: &FunctionInfo,
        shapes: &[i64],
        inputs: &[HostTensor],
        io: &mut Vec<DeviceMemory>,
    ) -> Result<()> {
        for t in inputs {
            let memory = self.pool.acquire(driver, t.bytes.len() as u64)?;
            let ptr = memory.ptr();
            io.push(memory);
            if !t.bytes.is_empty() {
                let started = Instant::now();
                // SAFETY: the block holds at least the tensor's bytes. On
                // the session's stream (ordered before its kernels; from
                // pageable memory staged by the driver when the call
                // returns, from page-locked memory DMA that the wait at the
                // end of the call covers), not the legacy default stream,
                // which would serialize calls in flight.
                let status = unsafe {
                    (driver.api.memcpy_htod_async)(
                        ptr,
                        t.bytes.as_ptr() as *const c_void,
                        t.bytes.len(),
                        self.stream,
                    )
                };
                driver.check(status, || {
                    format!("cuMemcpyHtoDAsync({} bytes)", t.bytes.len())
                })?;
                if self.trace_start.is_some() {
                    self.traced.push(TracedCommand {
                        kind: CommandKind::Upload,
                        bytes: Some(t.bytes.len() as u64),
                        time: PendingTime::Host(started, Instant::now()),
                    });
                }
            }
        }
        for d in &f.outputs {
            io.push(self.pool.acquire(driver, d.byte_size() as u64)?);
        }
        let inputs_io: Vec<(u64, u64)> = io[..inputs.len()]
            .iter()
            .zip(inputs)
            .map(|(m, t)| (m.ptr(), t.bytes.len() as u64))
            .collect();
        let outputs_io: Vec<(u64, u64)> = io[inputs.len()..]
            .iter()
            .zip(&f.outputs)
            .map(|(m, d)| (m.ptr(), d.byte_size() as u64))
            .collect();
        self.execute(
            f,
            crate::hal::shared::CallIo::new(&inputs_io, &outputs_io).with_shapes(shapes),
        )
    }

    /// Waits for the session's stream.
    pub(super) fn synchronize(&self) -> Result<()> {
        let driver = self.rt.inner.driver;
        // SAFETY: the stream lives as long as the session.
        let status = unsafe { (driver.api.stream_synchronize)(self.stream) };
        driver.check(status, || {
            "waiting for the stream (cuStreamSynchronize)".into()
        })
    }

    /// A block for an output of `size` bytes (a recycled one when there is).
    fn output_block(&mut self, size: usize) -> HostBytes {
        self.spare_outputs.take(size)
    }

    /// Hands outputs of an earlier call back for later calls to write into
    /// (see `Session::recycle`).
    pub fn recycle(&mut self, outputs: Vec<HostTensor>) {
        self.spare_outputs.recycle(outputs)
    }

    /// Calls `function` once on zero inputs; returns the call's seconds.
    pub fn warm_up(&mut self, function: &str) -> Result<f64> {
        let model = self.model.clone();
        let f = model.function(function)?;
        let zeros = f.zero_inputs()?;
        let started = Instant::now();
        self.run(&f.name, &zeros)?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// Waits for the session's stream (for the kernel profile).
    fn finish_work(&mut self) -> Result<()> {
        self.rt.inner.make_current()?;
        self.synchronize()
    }

    /// Folds finished launches' event pairs into `profile`; the stream
    /// must be idle.
    pub(super) fn collect_profile(&mut self) -> Result<()> {
        let driver = self.rt.inner.driver;
        let mut first_error = None;
        for (k, start, end) in std::mem::take(&mut self.pending) {
            let mut ms: f32 = 0.0;
            // SAFETY: both events were recorded on the stream.
            let status = unsafe { (driver.api.event_synchronize)(end) };
            let elapsed = driver
                .check(status, || "cuEventSynchronize".into())
                .and_then(|()| {
                    // SAFETY: both events have completed.
                    let status = unsafe { (driver.api.event_elapsed_time)(&mut ms, start, end) };
                    driver.check(status, || "cuEventElapsedTime".into())
                });
            let placed = elapsed.and_then(|()| match self.trace_start {
                Some((reference, at)) => {
                    let start_ns = self.host_ns(reference, at, start)?;
                    let end_ns = self.host_ns(reference, at, end)?;
                    self.traced_kernels.push(Command {
                        kind: CommandKind::Kernel(k),
                        bytes: None,
                        start_ns,
                        end_ns,
                    });
                    Ok(())
                }
                None => Ok(()),
            });
            match placed {
                Ok(()) => {
                    let p = &mut self.profile[k];
                    p.calls += 1;
                    p.total_ns += (ms.max(0.0) as f64 * 1e6).round() as u64;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
            self.spare_events.extend([start, end]);
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl CudaSession {
    /// Records a timeline of this session's next `max_calls` calls of
    /// [`CudaSession::run`]: each call's host span, its kernels (CUDA
    /// events), its memsets and device copies (an event pair each) and
    /// its synchronous uploads and downloads (timed on the host); see
    /// `timeline`. Needs a runtime with profiling on (which also turns
    /// CUDA graphs off). Starts afresh when already recording.
    pub fn record_timeline(&mut self, max_calls: usize) -> Result<()> {
        if !self.rt.inner.profiling {
            return Err(Error::InvalidInput(
                "a timeline needs profiling events: create the CUDA runtime with profiling on"
                    .into(),
            ));
        }
        self.timeline = Some(Recorder::new(max_calls));
        Ok(())
    }

    /// The timeline recorded since [`CudaSession::record_timeline`], which
    /// stops recording (`None` when none was being recorded).
    pub fn take_timeline(&mut self) -> Option<Timeline> {
        let recorder = self.timeline.take()?;
        Some(recorder.finish("CUDA stream", &self.rt.device().name, &self.model))
    }

    /// When a timeline is recorded and has room, starts recording the
    /// call beginning now: an event on the (idle) stream marks its start.
    /// Whether the call in progress is recorded.
    pub(super) fn tracing(&self) -> bool {
        self.trace_start.is_some()
    }

    fn begin_traced_call(&mut self, function: &str) -> Result<()> {
        self.traced.clear();
        self.traced_kernels.clear();
        if let Some((event, _)) = self.trace_start.take() {
            self.spare_events.push(event);
        }
        let Some(recorder) = self.timeline.as_mut() else {
            return Ok(());
        };
        if !recorder.begin(function) {
            return Ok(());
        }
        let driver = self.rt.inner.driver;
        let event = super::call::take_event(driver, &mut self.spare_events)?;
        let at = Instant::now();
        // SAFETY: an event of this session, on its stream.
        let status = unsafe { (driver.api.event_record)(event, self.stream) };
        if let Err(e) = driver.check(status, || "cuEventRecord".into()) {
            self.spare_events.push(event);
            return Err(e);
        }
        self.trace_start = Some((event, at));
        Ok(())
    }

    /// Where `event` falls on the host's clock (nanoseconds of the
    /// recorder), from `reference` recorded at host time `at`.
    fn host_ns(&self, reference: CuEvent, at: Instant, event: CuEvent) -> Result<u64> {
        let driver = self.rt.inner.driver;
        let mut ms: f32 = 0.0;
        // SAFETY: both events were recorded on the stream and have
        // completed (the stream is idle).
        let status = unsafe { (driver.api.event_elapsed_time)(&mut ms, reference, event) };
        driver.check(status, || "cuEventElapsedTime".into())?;
        let base = self.timeline.as_ref().map_or(0, |r| r.ns(at));
        Ok((base as f64 + ms.max(0.0) as f64 * 1e6).round() as u64)
    }

    /// Ends the recorded call in progress (the stream is idle and the
    /// kernels' events are read): its commands go to the recorder.
    fn end_traced_call(&mut self) -> Result<()> {
        let Some((reference, at)) = self.trace_start.take() else {
            return Ok(());
        };
        let mut commands = std::mem::take(&mut self.traced_kernels);
        let mut placed = Ok(());
        for c in std::mem::take(&mut self.traced) {
            let times = match c.time {
                PendingTime::Host(start, end) => {
                    let r = self.timeline.as_ref();
                    Ok((r.map_or(0, |r| r.ns(start)), r.map_or(0, |r| r.ns(end))))
                }
                PendingTime::Device((start, end)) => {
                    let t = self
                        .host_ns(reference, at, start)
                        .and_then(|s| Ok((s, self.host_ns(reference, at, end)?)));
                    self.spare_events.extend([start, end]);
                    t
                }
            };
            match times {
                Ok((start_ns, end_ns)) => commands.push(Command {
                    kind: c.kind,
                    bytes: c.bytes,
                    start_ns,
                    end_ns,
                }),
                Err(e) => placed = placed.and(Err(e)),
            }
        }
        self.spare_events.push(reference);
        if let Some(recorder) = self.timeline.as_mut() {
            recorder.end(commands);
        }
        placed
    }
}

impl Drop for CudaSession {
    fn drop(&mut self) {
        let inner = self.rt.inner.clone();
        let driver = inner.driver;
        if inner.make_current().is_err() {
            return; // Nothing can be freed without the context.
        }
        let _ = self.synchronize();
        for (_, state) in self.graphs.drain() {
            if let GraphState::Ready(graph) = state {
                graph.free(driver, &mut self.pool);
            }
        }
        for memory in self.constants.drain(..).flatten() {
            self.pool.release(memory);
        }
        if let Some(arena) = self.arena.take() {
            self.pool.release(arena);
        }
        self.pool.free_all(driver);
        for (_, start, end) in self.pending.drain(..) {
            self.spare_events.extend([start, end]);
        }
        for c in self.traced.drain(..) {
            if let PendingTime::Device((start, end)) = c.time {
                self.spare_events.extend([start, end]);
            }
        }
        if let Some((event, _)) = self.trace_start.take() {
            self.spare_events.push(event);
        }
        for event in self.spare_events.drain(..) {
            // SAFETY: an event of this session, no longer used.
            unsafe { (driver.api.event_destroy)(event) };
        }
        // The module stays in the runtime's module cache (`CudaContext`).
        self.kernels.clear();
        // SAFETY: the stream is idle and not used again.
        unsafe { (driver.api.stream_destroy)(self.stream) };
    }
}

/// `cuModuleLoadDataEx` of `ptx`, with ptxas's error log in the error
/// when the driver rejects it.
fn load_module(driver: &Driver, ptx: &[u8], device: &str) -> Result<CuModule> {
    let mut image = Vec::with_capacity(ptx.len() + 1);
    image.extend_from_slice(ptx);
    image.push(0);
    let mut log = vec![0u8; JIT_LOG_BYTES];
    let mut options: [c_int; 2] = [
        driver::JIT_ERROR_LOG_BUFFER,
        driver::JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The size travels as the pointer's value (cuda.h's convention), and
    // comes back as the log's length.
    let mut values: [*mut c_void; 2] = [
        log.as_mut_ptr() as *mut c_void,
        JIT_LOG_BYTES as *mut c_void,
    ];
    let mut module: CuModule = std::ptr::null_mut();
    // SAFETY: `image` is NUL-terminated PTX; the options and their values
    // are two matching entries; `log` has the size announced.
    let status = unsafe {
        (driver.api.module_load_data_ex)(
            &mut module,
            image.as_ptr() as *const c_void,
            2,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if status == 0 {
        return Ok(module);
    }
    let len = (values[1] as usize).min(JIT_LOG_BYTES);
    let text = String::from_utf8_lossy(&log[..len]);
    let text = text.trim_end_matches('\0').trim();
    Err(Error::Build {
        device: device.to_string(),
        code: format!("cuModuleLoadDataEx: {}", driver.error_name(status)),
        kernels: Vec::new(),
        log: if text.is_empty() {
            "(the driver gave no log)".into()
        } else {
            text.to_string()
        },
    })
}
