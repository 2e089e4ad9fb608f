//! CUDA graphs of a session's calls: a function's launches recorded once
//! and replayed, so that a call costs one `cuGraphLaunch` instead of one
//! `cuLaunchKernel` per kernel (at batch 1 a transformer's 200-odd
//! launches cost more host time than its kernels take).
//!
//! A function's first call runs as usual; it also uploads every constant
//! the function reads (synchronous copies, which a stream capture cannot
//! hold). The second call is recorded: its inputs go into device memory
//! the graph keeps, the entry runs with the session's stream capturing
//! (`cuStreamBeginCapture`, relaxed mode, so that a temporary's
//! `cuMemAlloc` is allowed), and the captured launches, copies and
//! memsets become a graph, instantiated once and launched. From then on a
//! call uploads its inputs into the graph's input memory, launches the
//! graph and downloads the graph's outputs.
//!
//! The recorded work reads and writes fixed device addresses: the graph's
//! own inputs and outputs, the session's arena and constants (which live
//! as long as the session), and the temporaries the entry took from the
//! session's pool while being recorded. Those went back to the pool and
//! may serve other calls; that is safe because a session's calls run one
//! at a time on one stream, and each call uploads all its inputs before
//! its work and downloads all its outputs after it, so nothing a graph
//! leaves in a temporary is read by anyone else, and the pool frees
//! nothing before the session goes.
//!
//! A function whose recording fails (a driver that refuses a captured
//! operation, say) runs without a graph from then on; the reason is
//! kept ([`CudaSession::graph_notes`]). Profiling turns graphs off: the
//! per-kernel events of a replayed graph cannot be read back.

use std::ffi::c_void;

use super::driver::{self, CuGraph, CuGraphExec, CuStream, Driver};
use super::memory::DeviceMemory;
use super::session::CudaSession;
use crate::artifact::FunctionInfo;
use crate::error::{Error, Result};
use crate::session::exec_error;
use crate::tensor::HostTensor;

/// The most shapes of one function on a symbolic dimension that a session
/// keeps graphs for (each holds its inputs' and outputs' memory); calls
/// at further shapes run without one.
pub(super) const MAX_GRAPHS_PER_FUNCTION: usize = 64;

/// The key of a call's graph: the function's name, and for a function on
/// a symbolic dimension the call's shapes (a graph replays one shape).
pub(super) fn graph_key(function: &str, shapes: &[i64]) -> String {
    if shapes.is_empty() {
        function.to_string()
    } else {
        format!("{function} {shapes:?}")
    }
}

/// Whether `key` is one of `function`'s graph keys.
pub(super) fn graph_key_is_of(key: &str, function: &str) -> bool {
    key == function
        || key
            .strip_prefix(function)
            .is_some_and(|rest| rest.starts_with(" ["))
}

/// Where a function stands with graphs in one session.
pub(super) enum GraphState {
    /// It ran once without a graph: the next call records one.
    Recordable,
    /// Recorded: calls replay it.
    Ready(CallGraph),
    /// Recording failed (the reason); calls run without a graph.
    Unavailable(String),
}

/// One function's recorded call.
pub(super) struct CallGraph {
    graph: CuGraph,
    exec: CuGraphExec,
    /// Device memory of the inputs and of the outputs, in order, that the
    /// graph reads and writes.
    inputs: Vec<DeviceMemory>,
    outputs: Vec<DeviceMemory>,
}

impl CallGraph {
    /// Destroys the graph and gives its memory back to the session's pool
    /// (the stream must be idle).
    pub(super) fn free(self, driver: &Driver, pool: &mut super::memory::MemoryPool) {
        // SAFETY: handles of this graph, no longer launched.
        unsafe {
            (driver.api.graph_exec_destroy)(self.exec);
            (driver.api.graph_destroy)(self.graph);
        }
        for memory in self.inputs.into_iter().chain(self.outputs) {
            pool.release(memory);
        }
    }
}

impl CudaSession {
    /// Runs `f` through its graph when it has one, recording it first on
    /// the call after its first; `None` when the call must run without a
    /// graph (its first call, or recording failed). The stream is idle
    /// when this returns.
    pub(super) fn run_graph(
        &mut self,
        f: &FunctionInfo,
        shapes: &[i64],
        inputs: &[HostTensor],
    ) -> Result<Option<Vec<HostTensor>>> {
        let Some(key) = self.ready_graph(f, shapes) else {
            return Ok(None);
        };
        let Some(GraphState::Ready(graph)) = self.graphs.get(&key) else {
            return Ok(None);
        };
        let driver = self.rt.inner.driver;
        let launched = upload(driver, self.stream, &graph.inputs, inputs).and_then(|()| {
            // SAFETY: an instantiated graph of this session's context.
            let status = unsafe { (driver.api.graph_launch)(graph.exec, self.stream) };
            driver.check(status, || format!("cuGraphLaunch(@{})", f.name))
        });
        let outputs: Vec<_> = graph.outputs.iter().map(DeviceMemory::ptr).collect();
        // Always wait, even after an error.
        let waited = self.synchronize();
        launched
            .and(waited)
            .and_then(|()| self.download(f, &outputs))
            .map(Some)
            .map_err(|e| exec_error(f, e))
    }

    /// [`CudaSession::run_graph`] for a call on device memory
    /// (`run_device`): each input copied device to device into the
    /// graph's input memory, the graph launched, its outputs copied into
    /// `outputs` (the call's new device tensors), the stream waited for.
    /// `false` when no graph is ready for the call (it then runs as
    /// usual). A decode loop's one-token steps so cost one graph launch
    /// and the copies, not a launch per kernel.
    pub(super) fn run_graph_on_device(
        &mut self,
        f: &FunctionInfo,
        shapes: &[i64],
        inputs: &[(u64, u64)],
        outputs: &[(u64, u64)],
    ) -> Result<bool> {
        let Some(key) = self.ready_graph(f, shapes) else {
            return Ok(false);
        };
        let Some(GraphState::Ready(graph)) = self.graphs.get(&key) else {
            return Ok(false);
        };
        let driver = self.rt.inner.driver;
        let stream = self.stream;
        let copy = |to: u64, from: u64, bytes: u64| -> Result<()> {
            if bytes == 0 {
                return Ok(());
            }
            // SAFETY: both blocks hold `bytes` (the function's types,
            // checked before the call) in this session's context.
            let status =
                unsafe { (driver.api.memcpy_dtod_async)(to, from, bytes as usize, stream) };
            driver.check(status, || format!("cuMemcpyDtoDAsync({bytes} bytes)"))
        };
        let launched = (|| -> Result<()> {
            for (memory, &(from, bytes)) in graph.inputs.iter().zip(inputs) {
                copy(memory.ptr(), from, bytes)?;
            }
            // SAFETY: an instantiated graph of this session's context.
            let status = unsafe { (driver.api.graph_launch)(graph.exec, stream) };
            driver.check(status, || format!("cuGraphLaunch(@{})", f.name))?;
            for (memory, &(to, bytes)) in graph.outputs.iter().zip(outputs) {
                copy(to, memory.ptr(), bytes)?;
            }
            Ok(())
        })();
        // Always wait, even after an error.
        let waited = self.synchronize();
        launched.and(waited).map_err(|e| exec_error(f, e))?;
        Ok(true)
    }

    /// The key of the call's graph once it is ready: recorded now if the
    /// function is recordable at these shapes (a failed recording is kept
    /// as the reason and the call runs without); `None` without a graph.
    fn ready_graph(&mut self, f: &FunctionInfo, shapes: &[i64]) -> Option<String> {
        let key = graph_key(&f.name, shapes);
        match self.graphs.get(&key)? {
            GraphState::Unavailable(_) => return None,
            GraphState::Ready(_) => {}
            GraphState::Recordable => {
                let state = match self.record(f, shapes) {
                    Ok(graph) => GraphState::Ready(graph),
                    Err(reason) => GraphState::Unavailable(reason.to_string()),
                };
                let ready = matches!(state, GraphState::Ready(_));
                self.graphs.insert(key.clone(), state);
                if !ready {
                    return None;
                }
            }
        }
        Some(key)
    }

    /// Records `f`'s entry as a graph, on memory for its inputs and
    /// outputs that the graph keeps. Nothing runs while recording.
    fn record(&mut self, f: &FunctionInfo, shapes: &[i64]) -> Result<CallGraph> {
        let driver = self.rt.inner.driver;
        let mut take = |sizes: Vec<usize>| -> Result<Vec<DeviceMemory>> {
            sizes
                .into_iter()
                .map(|bytes| self.pool.acquire(driver, bytes as u64))
                .collect()
        };
        let inputs = take(f.inputs.iter().map(|d| d.byte_size()).collect())?;
        let outputs = take(f.outputs.iter().map(|d| d.byte_size()).collect())?;
        let pairs = |memory: &[DeviceMemory], sizes: Vec<usize>| -> Vec<(u64, u64)> {
            memory
                .iter()
                .zip(sizes)
                .map(|(m, bytes)| (m.ptr(), bytes as u64))
                .collect()
        };
        let inputs_io = pairs(&inputs, f.inputs.iter().map(|d| d.byte_size()).collect());
        let outputs_io = pairs(&outputs, f.outputs.iter().map(|d| d.byte_size()).collect());
        let recorded = self.capture(f, shapes, &inputs_io, &outputs_io);
        match recorded {
            Ok((graph, exec)) => Ok(CallGraph {
                graph,
                exec,
                inputs,
                outputs,
            }),
            Err(e) => {
                for memory in inputs.into_iter().chain(outputs) {
                    self.pool.release(memory);
                }
                Err(e)
            }
        }
    }

    /// Runs the entry with the stream capturing; the instantiated graph.
    fn capture(
        &mut self,
        f: &FunctionInfo,
        shapes: &[i64],
        inputs: &[(u64, u64)],
        outputs: &[(u64, u64)],
    ) -> Result<(CuGraph, CuGraphExec)> {
        let driver = self.rt.inner.driver;
        // SAFETY: the session's stream, idle.
        let status = unsafe {
            (driver.api.stream_begin_capture)(self.stream, driver::STREAM_CAPTURE_MODE_RELAXED)
        };
        driver.check(status, || "cuStreamBeginCapture".into())?;
        let executed = self.execute(
            f,
            crate::hal::shared::CallIo::new(inputs, outputs).with_shapes(shapes),
        );
        let mut graph: CuGraph = std::ptr::null_mut();
        // SAFETY: ends the capture begun above; the driver writes the graph.
        let status = unsafe { (driver.api.stream_end_capture)(self.stream, &mut graph) };
        let ended = driver.check(status, || "cuStreamEndCapture".into());
        let destroy = |graph: CuGraph| {
            if !graph.is_null() {
                // SAFETY: a graph of this capture, never instantiated.
                unsafe { (driver.api.graph_destroy)(graph) };
            }
        };
        if let Err(e) = executed.and(ended) {
            destroy(graph);
            return Err(e);
        }
        let mut exec: CuGraphExec = std::ptr::null_mut();
        // SAFETY: a complete graph; the driver writes the executable one.
        let status = unsafe { (driver.api.graph_instantiate)(&mut exec, graph, 0) };
        if let Err(e) = driver.check(status, || "cuGraphInstantiateWithFlags".into()) {
            destroy(graph);
            return Err(e);
        }
        Ok((graph, exec))
    }

    /// Why functions run without a graph: `(function, reason)` for each
    /// whose recording failed.
    pub fn graph_notes(&self) -> Vec<(String, String)> {
        self.graphs
            .iter()
            .filter_map(|(name, state)| match state {
                GraphState::Unavailable(reason) => Some((name.clone(), reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// The functions that replay a recorded graph.
    pub fn graphs_recorded(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .graphs
            .iter()
            .filter(|(_, state)| matches!(state, GraphState::Ready(_)))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}

/// Copies each input tensor into its device memory on `stream`
/// (`cuMemcpyHtoDAsync`: ordered after the stream's earlier work; from
/// pageable memory the driver has staged the bytes when it returns, from
/// page-locked memory (staged calls, `hal::Device::staging`) it is DMA
/// the stream runs, and the call waits for the stream before its inputs
/// are given back). Not
/// on the legacy default stream, which would wait for every other
/// session's stream in the context and serialize calls in flight.
fn upload(
    driver: &Driver,
    stream: CuStream,
    memory: &[DeviceMemory],
    inputs: &[HostTensor],
) -> Result<()> {
    if memory.len() != inputs.len() {
        return Err(Error::InvalidInput(format!(
            "{} inputs for a graph recorded with {}",
            inputs.len(),
            memory.len()
        )));
    }
    for (m, t) in memory.iter().zip(inputs) {
        if t.bytes.is_empty() {
            continue;
        }
        // SAFETY: the block was sized for this input (checked against the
        // function's signature before the call).
        let status = unsafe {
            (driver.api.memcpy_htod_async)(
                m.ptr(),
                t.bytes.as_ptr() as *const c_void,
                t.bytes.len(),
                stream,
            )
        };
        driver.check(status, || {
            format!("cuMemcpyHtoDAsync({} bytes)", t.bytes.len())
        })?;
    }
    Ok(())
}
