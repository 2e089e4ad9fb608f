//! A session runs one model's functions on one runtime: it owns the model's
//! kernels and its uploaded constants, and implements the
//! `tcc_runtime_api` callbacks the artifact's host code calls.
//!
//! The session also owns the arena of the model's static memory plan (ABI
//! 2): one device buffer, as large as the largest `arena_bytes` of the
//! model's functions, allocated when the session is created and reused by
//! every call (the queue is in order, so a call's kernels run after the
//! previous call's). A `view(offset, bytes)` of it is an OpenCL sub-buffer,
//! created on first use and kept for the session. When the device needs
//! more alignment for sub-buffers (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`) than a
//! plan guarantees, or the arena exceeds the largest allocation, each
//! distinct view gets its own pool buffer instead, kept for the session:
//! two views alive at the same time never share an (offset, bytes) pair,
//! so that is still correct, only larger.
//!
//! A call works like this: inputs are uploaded (non-blocking), output
//! buffers are taken from the pool, the artifact's entry enqueues its
//! kernels through the callbacks, the outputs are read back
//! (non-blocking), and only then does the host wait for the queue. Every
//! `tcc_buffer *` the artifact gets is a `cl_mem` the runtime handed out
//! in this call, and every one it passes back is checked against that set.
//! A failing callback records its error in the call context and returns a
//! non-zero status; panics are caught so nothing unwinds into C.

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_USE_HOST_PTR, ClMem,
};
use opencl3::program::Program;
use opencl3::types::{CL_FALSE, CL_TRUE, cl_mem};
use serde::Serialize;

use crate::abi::{self, TccArg, TccBuffer, TccRuntimeApi};
use crate::artifact::{Artifact, FunctionInfo};
use crate::buffer_pool::PoolBuffer;
use crate::device::HostIo;
use crate::error::{ClResultExt, Error, Result};
use crate::host_bytes::HostBytes;
use crate::program_cache::{ProgramOrigin, ProgramSource, SourceKind};
use crate::tensor::{DType, HostTensor, type_string};
use crate::{KERNEL_FORMAT_ENV, KernelFormat, Model, Runtime, RuntimeInner, TransferCounters};

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

/// One view of the arena.
enum ArenaView {
    /// A sub-buffer of the arena.
    Sub(Buffer<u8>),
    /// A buffer of its own (the fallback).
    Own(PoolBuffer),
}

impl ArenaView {
    fn mem(&self) -> cl_mem {
        match self {
            ArenaView::Sub(b) => b.get(),
            ArenaView::Own(b) => b.mem(),
        }
    }
}

/// The session's arena and the views handed out so far.
struct Arena {
    /// The arena buffer; `None` when the model has no plan or the session
    /// uses the fallback.
    base: Option<PoolBuffer>,
    /// Bytes the model's largest plan needs.
    bytes: u64,
    views: HashMap<(u64, u64), ArenaView>,
}

/// What the session's arena looks like.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ArenaStats {
    /// The largest `arena_bytes` of the model's functions.
    pub plan_bytes: u64,
    /// Device bytes of the arena buffer (0 when not used).
    pub arena_bytes: u64,
    /// Whether views are sub-buffers of the arena (`false`: the fallback,
    /// one buffer per distinct view).
    pub sub_buffers: bool,
    /// Distinct views created so far.
    pub views: usize,
}

struct KernelSlot {
    kernel: Kernel,
    name: String,
    num_args: u32,
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
    /// Launch events not yet read (profiling only), with the kernel index.
    pending: Vec<(usize, Event)>,
    profile: Vec<KernelProfile>,
    /// Output blocks the caller handed back ([`Session::recycle`]), reused
    /// by later calls instead of fresh memory.
    pub(crate) spare_outputs: Vec<HostBytes>,
    /// Asynchronous calls in flight and their reusable device buffers
    /// (`Session::submit`, in `async_call`).
    pub(crate) calls: crate::async_call::SessionCalls,
    // Kept alive while kernels exist (kernels also retain it).
    _program: Option<Arc<Program>>,
}

/// The most recycled output blocks a session keeps.
const MAX_SPARE_OUTPUTS: usize = 16;

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
        let mut kernels = Vec::with_capacity(art.kernel_names.len());
        if let Some(program) = &program {
            for name in &art.kernel_names {
                let kernel = Kernel::create(program, name).map_err(|e| Error::MalformedArtifact {
                    path: art.path.clone(),
                    reason: format!(
                        "kernel `{name}` is not in the kernel program ({e}); the program defines: {}",
                        program.get_kernel_names().unwrap_or_default()
                    ),
                })?;
                let num_args = kernel
                    .num_args()
                    .cl("clGetKernelInfo(CL_KERNEL_NUM_ARGS)")?;
                kernels.push(KernelSlot {
                    kernel,
                    name: name.clone(),
                    num_args,
                });
            }
        }
        // The arena: sub-buffers need every plan's offsets to be multiples of
        // the device's base address alignment.
        let plan_bytes = art
            .functions
            .iter()
            .map(|f| f.arena_bytes)
            .max()
            .unwrap_or(0);
        let aligned = art
            .functions
            .iter()
            .filter(|f| f.arena_bytes > 0)
            .all(|f| f.arena_alignment % rt.inner.device.base_align_bytes == 0);
        let fits = plan_bytes <= rt.inner.device.max_alloc_bytes;
        // NVIDIA's OpenCL (driver 580, H100) crashes in clReleaseMemObject
        // on some of a buffer's overlapping sub-buffers (a segfault when a
        // session is dropped, measured with tcc-run on ResNet-50 and
        // SqueezeNet); there every view gets its own buffer, created once
        // per session and reused across calls like the arena.
        // TCC_ARENA_SUB_BUFFERS=0 forces the fallback (to test it anywhere).
        let subs_release_safely = !rt.inner.device.platform_name.contains("NVIDIA")
            && std::env::var("TCC_ARENA_SUB_BUFFERS").map_or(true, |v| v != "0");
        let base = if plan_bytes > 0 && aligned && fits && subs_release_safely {
            Some(
                rt.inner
                    .pool()
                    .acquire_exact(&rt.inner.context, plan_bytes)?,
            )
        } else {
            None
        };
        let profile = art
            .kernel_names
            .iter()
            .map(|n| KernelProfile {
                name: n.clone(),
                ..Default::default()
            })
            .collect();
        Ok(Session {
            rt: rt.clone(),
            model: model.clone(),
            origin,
            format: built.as_ref().map(|b| b.format),
            program_seconds,
            program_note: built.and_then(|b| b.note),
            kernels,
            constants: art.constants.iter().map(|_| None).collect(),
            arena: Arena {
                base,
                bytes: plan_bytes,
                views: HashMap::new(),
            },
            pending: Vec::new(),
            profile,
            spare_outputs: Vec::new(),
            calls: crate::async_call::SessionCalls::default(),
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
        ArenaStats {
            plan_bytes: self.arena.bytes,
            arena_bytes: self.arena.base.as_ref().map_or(0, PoolBuffer::capacity),
            sub_buffers: self.arena.base.is_some(),
            views: self.arena.views.len(),
        }
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

    /// Calls `function` once on zero inputs and returns how long the call
    /// took, in seconds. On a cold driver cache this is where the driver
    /// compiles each kernel for its launch sizes (PoCL does that at a
    /// kernel's first launch and caches the result on disk), so that a
    /// later process's first real call finds everything built. Used by
    /// `tcc-run --prepare`.
    pub fn warm_up(&mut self, function: &str) -> Result<f64> {
        let model = self.model.clone();
        let f = model.function(function)?;
        let zeros = f
            .inputs
            .iter()
            .map(|d| HostTensor::zeros(d.dtype, d.shape.clone()))
            .collect::<Result<Vec<_>>>()?;
        let started = std::time::Instant::now();
        self.run(&f.name, &zeros)?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// Hands outputs of an earlier call back for later calls to write
    /// into (a serving loop that is done with its results): blocks the
    /// runtime allocated are kept, up to a few, and taken by the next
    /// calls' outputs of the same size instead of fresh memory.
    pub fn recycle(&mut self, outputs: Vec<HostTensor>) {
        for tensor in outputs {
            if self.spare_outputs.len() < MAX_SPARE_OUTPUTS
                && tensor.bytes.is_runtime_allocated()
                && !tensor.bytes.is_empty()
            {
                self.spare_outputs.push(tensor.bytes);
            }
        }
    }

    /// Runs `function` on host tensors and returns its outputs. Errors about
    /// inputs describe where they came from as "the caller".
    pub fn run(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        self.run_with_sources(function, inputs, &[])
    }

    /// Like `run`; `sources[i]` says where input `i` came from (e.g.
    /// "x.npy" or "the command line") for error messages.
    pub fn run_with_sources(
        &mut self,
        function: &str,
        inputs: &[HostTensor],
        sources: &[&str],
    ) -> Result<Vec<HostTensor>> {
        let model = self.model.clone();
        let f = model.function(function)?;
        f.check_input_types(
            inputs.iter().map(|t| (t.dtype, t.shape.as_slice())),
            sources,
        )?;
        // After this session's asynchronous calls on its own queue.
        self.calls.join(&self.rt.inner)?;

        let rt = self.rt.inner.clone();
        let counters = &rt.transfers;
        let in_place = rt.host_io == HostIo::InPlace;
        // The device's alignment for host pointers (CL_MEM_USE_HOST_PTR).
        let align = usize::try_from(rt.device.base_align_bytes).unwrap_or(usize::MAX);
        let mut leases = Leases {
            rt: &rt,
            bufs: Vec::new(),
        };
        // Buffers over host memory (inputs and outputs used in place); the
        // queue must be idle before they, and the memory, go away.
        let mut host_bufs: Vec<Buffer<u8>> = Vec::new();
        // Every byte of an output is written by the call, so a recycled
        // block of the same size serves as well as fresh zeroed memory
        // (and its pages are already mapped: a fresh 8 MiB block costs
        // 2048 page faults on its first write).
        let mut results: Vec<HostBytes> = f
            .outputs
            .iter()
            .map(|d| {
                let size = d.byte_size();
                match self.spare_outputs.iter().position(|b| b.len() == size) {
                    Some(index) => self.spare_outputs.swap_remove(index),
                    None => HostBytes::zeroed(size),
                }
            })
            .collect();
        // Per input: its buffer and whether it must be copied there.
        let mut in_io: Vec<(cl_mem, u64)> = Vec::with_capacity(inputs.len());
        let mut in_copies: Vec<bool> = Vec::with_capacity(inputs.len());
        for t in inputs {
            let bytes = &t.bytes;
            if in_place && !bytes.is_empty() && bytes.is_aligned_to(align) {
                // SAFETY: the device only reads the caller's bytes
                // (CL_MEM_READ_ONLY), which outlive the wait below.
                let b = unsafe {
                    host_buffer(
                        &rt,
                        CL_MEM_READ_ONLY,
                        bytes.as_ptr().cast_mut(),
                        bytes.len(),
                    )
                }?;
                in_io.push((b.get(), bytes.len() as u64));
                host_bufs.push(b);
                in_copies.push(false);
            } else {
                leases.acquire(bytes.len())?;
                let mem = leases.bufs.last().map_or(ptr::null_mut(), PoolBuffer::mem);
                in_io.push((mem, bytes.len() as u64));
                in_copies.push(true);
            }
        }
        // Per output: its buffer and whether it is the result's memory.
        let mut out_io: Vec<(cl_mem, u64)> = Vec::with_capacity(results.len());
        let mut out_host: Vec<bool> = Vec::with_capacity(results.len());
        for r in results.iter_mut() {
            if in_place && !r.is_empty() && r.is_aligned_to(align) {
                // SAFETY: `results` is neither read nor moved out before the
                // wait below, and its blocks do not move.
                let b = unsafe { host_buffer(&rt, CL_MEM_READ_WRITE, r.as_mut_ptr(), r.len()) }?;
                out_io.push((b.get(), r.len() as u64));
                host_bufs.push(b);
                out_host.push(true);
            } else {
                leases.acquire(r.len())?;
                let mem = leases.bufs.last().map_or(ptr::null_mut(), PoolBuffer::mem);
                out_io.push((mem, r.len() as u64));
                out_host.push(false);
            }
        }
        // Outputs mapped for reading: (buffer, mapped pointer, output index).
        let mut mapped: Vec<(cl_mem, *mut c_void, usize)> = Vec::new();

        let enqueued = (|| -> Result<()> {
            for ((t, &(mem, _)), &copy) in inputs.iter().zip(&in_io).zip(&in_copies) {
                if copy {
                    // SAFETY: `t.bytes` outlives the wait below.
                    unsafe { write_buffer(&rt.queue, mem, &t.bytes, false) }?;
                    TransferCounters::add(&counters.bytes_to_device, t.bytes.len() as u64);
                }
            }
            self.execute(f, &in_io, &out_io)?;
            for (i, (r, &(mem, len))) in results.iter_mut().zip(&out_io).enumerate() {
                if out_host[i] {
                    // Makes the kernels' writes visible to the host; on a
                    // host-memory device this moves no bytes.
                    // SAFETY: the range is the whole buffer; unmapped below.
                    let p = unsafe { map_for_reading(&rt.queue, mem, to_usize(len, "size")?) }?;
                    mapped.push((mem, p, i));
                } else {
                    // SAFETY: `results` outlives the wait below.
                    unsafe { read_buffer(&rt.queue, mem, r) }?;
                    TransferCounters::add(&counters.bytes_to_host, r.len() as u64);
                }
            }
            Ok(())
        })();
        // Always wait, even after an error: the queue may still read the
        // caller's input slices or write into `results`.
        let mut waited = rt
            .queue
            .finish()
            .map_err(|e| exec_error(f, Error::cl("waiting for the queue (clFinish)", e)));
        if !mapped.is_empty() {
            for &(mem, p, i) in &mapped {
                if p.cast::<u8>() == results[i].as_mut_ptr() {
                    TransferCounters::add(&counters.outputs_in_place, 1);
                } else if waited.is_ok() && enqueued.is_ok() {
                    // The driver mapped a copy of its own: take the bytes.
                    let r = &mut results[i];
                    let len = r.len();
                    // SAFETY: the mapping covers the whole buffer, `len` bytes.
                    r.copy_from_slice(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) });
                    TransferCounters::add(&counters.bytes_to_host, r.len() as u64);
                }
                // SAFETY: `p` is the pointer this buffer's map returned.
                let unmapped = unsafe {
                    opencl3::command_queue::enqueue_unmap_mem_object(
                        rt.queue.get(),
                        mem,
                        p,
                        0,
                        ptr::null(),
                    )
                };
                if let Ok(ev) = unmapped {
                    drop(Event::new(ev));
                }
            }
            let again = rt
                .queue
                .finish()
                .map_err(|e| exec_error(f, Error::cl("waiting for the queue (clFinish)", e)));
            waited = waited.and(again);
        }
        let used_in_place = in_copies.iter().filter(|&&c| !c).count() as u64;
        drop(host_bufs);
        enqueued?;
        waited?;
        TransferCounters::add(&counters.inputs_in_place, used_in_place);
        self.collect_profile()?;
        drop(leases);
        f.outputs
            .iter()
            .zip(results)
            .map(|(d, bytes)| HostTensor::from_bytes(d.dtype, d.shape.clone(), bytes))
            .collect()
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
        let outputs = f
            .outputs
            .iter()
            .map(|d| self.alloc(d.dtype, d.shape.clone()))
            .collect::<Result<Vec<_>>>()?;
        let in_io: Vec<(cl_mem, u64)> = inputs
            .iter()
            .map(|t| (t.mem(), t.byte_size() as u64))
            .collect();
        let out_io: Vec<(cl_mem, u64)> = outputs
            .iter()
            .map(|t| (t.mem(), t.byte_size() as u64))
            .collect();
        self.execute(f, &in_io, &out_io)?;
        Ok(outputs)
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

    /// Per-kernel device time since the session started or the last
    /// `reset_profile` (waits for the queue). Empty unless the runtime was
    /// created with profiling on.
    pub fn kernel_profile(&mut self) -> Result<Vec<KernelProfile>> {
        self.calls.join(&self.rt.inner)?;
        self.rt.inner.queue.finish().cl("clFinish")?;
        self.collect_profile()?;
        Ok(self
            .profile
            .iter()
            .filter(|p| p.calls > 0)
            .cloned()
            .collect())
    }

    pub fn reset_profile(&mut self) -> Result<()> {
        self.kernel_profile()?;
        for p in &mut self.profile {
            p.calls = 0;
            p.total_ns = 0;
        }
        Ok(())
    }

    /// Folds finished launch events into `profile`; the queue must be idle.
    fn collect_profile(&mut self) -> Result<()> {
        for (k, ev) in self.pending.drain(..) {
            let start = ev.profiling_command_start().cl("clGetEventProfilingInfo")?;
            let end = ev.profiling_command_end().cl("clGetEventProfilingInfo")?;
            let p = &mut self.profile[k];
            p.calls += 1;
            p.total_ns += end.saturating_sub(start);
        }
        Ok(())
    }

    /// Calls the artifact's entry for `f` on the given (buffer, bytes) pairs.
    pub(crate) fn execute(
        &mut self,
        f: &FunctionInfo,
        inputs: &[(cl_mem, u64)],
        outputs: &[(cl_mem, u64)],
    ) -> Result<()> {
        let rt = self.rt.inner.clone();
        self.execute_on(f, inputs, outputs, &rt.queue, None)
    }

    /// [`Session::execute`] on `queue`. With `deferred` (a session's own
    /// queue, see `async_call`), temporaries the call releases are not
    /// given back to the pool but collected there, for the caller to give
    /// back once the queue has finished the call; and buffers fresh from
    /// the pool wait for the runtime's queue first.
    pub(crate) fn execute_on(
        &mut self,
        f: &FunctionInfo,
        inputs: &[(cl_mem, u64)],
        outputs: &[(cl_mem, u64)],
        queue: &CommandQueue,
        mut deferred: Option<&mut Vec<PoolBuffer>>,
    ) -> Result<()> {
        let model = self.model.clone();
        let rt = self.rt.inner.clone();
        let mut cx = CallContext {
            queue,
            deferred: deferred.as_deref_mut(),
            rt: &rt,
            artifact: model.artifact(),
            kernels: &self.kernels,
            constants: &mut self.constants,
            arena: &mut self.arena,
            function: f,
            pending: &mut self.pending,
            live: HashMap::new(),
            error: None,
        };
        for (i, &(mem, bytes)) in inputs.iter().enumerate() {
            cx.live.insert(
                mem as usize,
                Live {
                    bytes,
                    owner: Owner::Io(format!("input {i}")),
                },
            );
        }
        for (i, &(mem, bytes)) in outputs.iter().enumerate() {
            cx.live.insert(
                mem as usize,
                Live {
                    bytes,
                    owner: Owner::Io(format!("output {i}")),
                },
            );
        }
        let in_ptrs: Vec<*mut TccBuffer> =
            inputs.iter().map(|&(m, _)| m as *mut TccBuffer).collect();
        let out_ptrs: Vec<*mut TccBuffer> =
            outputs.iter().map(|&(m, _)| m as *mut TccBuffer).collect();
        let api = TccRuntimeApi {
            abi_version: abi::TCC_ABI_VERSION,
            reserved: 0,
            ctx: &mut cx as *mut CallContext as *mut c_void,
            alloc: Some(cb_alloc),
            release: Some(cb_release),
            constant: Some(cb_constant),
            launch: Some(cb_launch),
            copy: Some(cb_copy),
            view: Some(cb_view),
        };
        // SAFETY: the entry point comes from the validated artifact; the
        // buffer arrays have the lengths its descriptor declares; `cx`
        // outlives the call.
        let status = unsafe { (f.entry)(&api, in_ptrs.as_ptr(), out_ptrs.as_ptr()) };
        let CallContext { live, error, .. } = cx;
        // Temporaries the artifact did not release go back to the pool: the
        // call is over, nothing can use them any more.
        let mut pool = rt.pool();
        for (_, l) in live {
            if let Owner::Pool(b) = l.owner {
                match deferred.as_deref_mut() {
                    Some(list) => list.push(b),
                    None => pool.release(b),
                }
            }
        }
        drop(pool);
        match (status, error) {
            (0, None) => Ok(()),
            (_, Some(e)) => Err(exec_error(f, e)),
            (s, None) => Err(exec_error(
                f,
                Error::ArtifactCall(format!(
                    "the entry returned status {s} without a failing runtime call"
                )),
            )),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Pending constant uploads read the artifact's memory: wait for them
        // (and for the session's own queue, if it has one).
        self.calls.finish_own_queue();
        let _ = self.rt.inner.queue.finish();
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
        // Sub-buffers go before the arena they belong to.
        for (_, view) in self.arena.views.drain() {
            if let ArenaView::Own(b) = view {
                pool.release(b);
            }
        }
        if let Some(base) = self.arena.base.take() {
            pool.release(base);
        }
    }
}

pub(crate) fn exec_error(f: &FunctionInfo, e: Error) -> Error {
    Error::Execution {
        function: f.name.clone(),
        message: e.to_string(),
    }
}

/// Pool buffers held for one call, returned to the pool on drop.
struct Leases<'a> {
    rt: &'a RuntimeInner,
    bufs: Vec<PoolBuffer>,
}

impl Leases<'_> {
    fn acquire(&mut self, bytes: usize) -> Result<()> {
        let b = self.rt.pool().acquire(&self.rt.context, bytes as u64)?;
        self.bufs.push(b);
        Ok(())
    }
}

impl Drop for Leases<'_> {
    fn drop(&mut self) {
        let mut pool = self.rt.pool();
        for b in self.bufs.drain(..) {
            pool.release(b);
        }
    }
}

fn to_usize(v: u64, what: &str) -> Result<usize> {
    usize::try_from(v)
        .map_err(|_| Error::InvalidInput(format!("{what} {v} does not fit in size_t")))
}

/// A buffer over `len` bytes of host memory at `host` (`CL_MEM_USE_HOST_PTR`
/// with `access`, e.g. `CL_MEM_READ_ONLY`): on a host-memory device the
/// kernels use those bytes in place.
///
/// # Safety
/// The memory must stay valid, and must not be accessed from Rust while
/// the device may write it, until the queue has finished every command
/// using the buffer.
pub(crate) unsafe fn host_buffer(
    rt: &RuntimeInner,
    access: opencl3::memory::cl_mem_flags,
    host: *mut u8,
    len: usize,
) -> Result<Buffer<u8>> {
    // SAFETY: forwarded to the caller.
    unsafe { Buffer::<u8>::create(&rt.context, access | CL_MEM_USE_HOST_PTR, len, host.cast()) }
        .map_err(|e| {
            Error::cl(
                format!("clCreateBuffer(CL_MEM_USE_HOST_PTR, {len} bytes)"),
                e,
            )
        })
}

/// Enqueues a non-blocking read map of the first `len` bytes of `mem` and
/// returns the mapped pointer (valid once the queue has run the map).
///
/// # Safety
/// The mapping must be unmapped (`clEnqueueUnmapMemObject`) before the
/// buffer's memory is released.
unsafe fn map_for_reading(queue: &CommandQueue, mem: cl_mem, len: usize) -> Result<*mut c_void> {
    let mut mapped: cl_mem = ptr::null_mut();
    // SAFETY: forwarded to the caller; `mapped` receives the pointer.
    let ev = unsafe {
        opencl3::command_queue::enqueue_map_buffer(
            queue.get(),
            mem,
            CL_FALSE,
            CL_MAP_READ,
            0,
            len,
            &mut mapped,
            0,
            ptr::null(),
        )
    }
    .map_err(|e| Error::cl("clEnqueueMapBuffer", e.into()))?;
    drop(Event::new(ev));
    Ok(mapped.cast())
}

/// Host-to-device write; `blocking` waits for the copy to finish.
///
/// # Safety
/// When not `blocking`, `data` must stay alive and unchanged until the queue
/// has executed the write.
unsafe fn write_buffer(
    queue: &CommandQueue,
    mem: cl_mem,
    data: &[u8],
    blocking: bool,
) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    // SAFETY: forwarded to the caller; a blocking write no longer reads
    // `data` once it returns.
    let ev = unsafe {
        opencl3::command_queue::enqueue_write_buffer(
            queue.get(),
            mem,
            if blocking { CL_TRUE } else { CL_FALSE },
            0,
            data.len(),
            data.as_ptr().cast(),
            0,
            ptr::null(),
        )
    }
    .map_err(|e| Error::cl("clEnqueueWriteBuffer", e.into()))?;
    drop(Event::new(ev));
    Ok(())
}

/// Non-blocking device-to-host read.
///
/// # Safety
/// `data` must stay alive and untouched until the queue has executed it.
unsafe fn read_buffer(queue: &CommandQueue, mem: cl_mem, data: &mut [u8]) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    // SAFETY: forwarded to the caller.
    let ev = unsafe {
        opencl3::command_queue::enqueue_read_buffer(
            queue.get(),
            mem,
            CL_FALSE,
            0,
            data.len(),
            data.as_mut_ptr().cast(),
            0,
            ptr::null(),
        )
    }
    .map_err(|e| Error::cl("clEnqueueReadBuffer", e.into()))?;
    drop(Event::new(ev));
    Ok(())
}

// ---------------------------------------------------------------------------
// The tcc_runtime_api callbacks.

enum Owner {
    /// A temporary from `alloc`.
    Pool(PoolBuffer),
    /// Constant `index`, owned by the session.
    Constant(u32),
    /// An input or output of the call, owned by the caller.
    Io(String),
    /// A view of the session's arena.
    Arena,
}

struct Live {
    /// Bytes the artifact may use (what it asked for, or the tensor size).
    bytes: u64,
    owner: Owner,
}

/// State of one entry call; `tcc_runtime_api.ctx` points at it.
struct CallContext<'a> {
    /// The queue the call's work goes on (the runtime's, or the session's
    /// own for an asynchronous call with `Session::set_own_queue`).
    queue: &'a CommandQueue,
    /// Set when `queue` is a session's own: released temporaries are
    /// collected here instead of going back to the pool.
    deferred: Option<&'a mut Vec<PoolBuffer>>,
    rt: &'a RuntimeInner,
    artifact: &'a Artifact,
    kernels: &'a [KernelSlot],
    constants: &'a mut [Option<PoolBuffer>],
    arena: &'a mut Arena,
    /// The function being called (its arena size and alignment).
    function: &'a FunctionInfo,
    pending: &'a mut Vec<(usize, Event)>,
    live: HashMap<usize, Live>,
    /// The first failure of a runtime call.
    error: Option<Error>,
}

impl CallContext<'_> {
    /// A buffer from the pool for this call's queue: on a session's own
    /// queue it may still be in use by work on the runtime's queue (the
    /// pool's in-order rule), so the own queue waits for that first.
    fn acquire(&mut self, bytes: u64) -> Result<PoolBuffer> {
        let b = self.rt.pool().acquire(&self.rt.context, bytes)?;
        if self.deferred.is_some() {
            crate::async_call::wait_for_runtime_queue(self.rt, self.queue)?;
        }
        Ok(b)
    }

    fn lookup(&self, b: *mut TccBuffer, what: &str) -> Result<(cl_mem, u64)> {
        if b.is_null() {
            return Err(Error::InvalidInput(format!("{what} is NULL")));
        }
        self.live
            .get(&(b as usize))
            .map(|l| (b as cl_mem, l.bytes))
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{what} ({b:p}) is not a buffer the runtime handed out in this call"
                ))
            })
    }

    fn alloc(&mut self, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        if out.is_null() {
            return Err(Error::InvalidInput("output pointer is NULL".into()));
        }
        if self.rt.faults.take(crate::Fault::Alloc) {
            return Err(Error::OutOfDeviceMemory(format!(
                "{bytes} bytes requested: injected fault (Runtime::inject_fault)"
            )));
        }
        let b = self.acquire(bytes)?;
        let mem = b.mem();
        self.live.insert(
            mem as usize,
            Live {
                bytes,
                owner: Owner::Pool(b),
            },
        );
        // SAFETY: checked non-null; the artifact passes a pointer to its slot.
        unsafe { *out = mem as *mut TccBuffer };
        Ok(())
    }

    fn release(&mut self, b: *mut TccBuffer) -> Result<()> {
        if b.is_null() {
            return Ok(());
        }
        let key = b as usize;
        let refuse = |what: String| {
            Err(Error::InvalidInput(format!(
                "buffer {b:p} is {what}; only buffers from alloc() may be released"
            )))
        };
        match self.live.get(&key).map(|l| &l.owner) {
            None => Err(Error::InvalidInput(format!(
                "buffer {b:p} was not handed out by alloc() in this call"
            ))),
            Some(Owner::Constant(i)) => refuse(format!("constant {i}")),
            Some(Owner::Io(what)) => refuse(what.clone()),
            Some(Owner::Arena) => refuse("a view of the arena".into()),
            Some(Owner::Pool(_)) => {
                if let Some(Live {
                    owner: Owner::Pool(buf),
                    ..
                }) = self.live.remove(&key)
                {
                    match self.deferred.as_deref_mut() {
                        Some(list) => list.push(buf),
                        None => self.rt.pool().release(buf),
                    }
                }
                Ok(())
            }
        }
    }

    fn constant(&mut self, index: u32, out: *mut *mut TccBuffer) -> Result<()> {
        if out.is_null() {
            return Err(Error::InvalidInput("output pointer is NULL".into()));
        }
        let c = *self.artifact.constants.get(index as usize).ok_or_else(|| {
            Error::InvalidInput(format!(
                "constant index {index} out of range (the artifact has {})",
                self.constants.len()
            ))
        })?;
        if self.constants[index as usize].is_none() {
            // Always a copy, also on a host-memory device: constants are not
            // all read-only (the split-K arrival counters are a zeroed
            // "constant" the kernels write and reset), and the artifact's
            // data is read-only memory shared by every session.
            let b = self.acquire(c.bytes)?;
            // SAFETY: the artifact (and so the constant's memory) outlives
            // the session, and the session waits for the queue on drop.
            let data = unsafe { c.as_slice() };
            // SAFETY: as above.
            unsafe { write_buffer(self.queue, b.mem(), data, false) }?;
            TransferCounters::add(&self.rt.transfers.bytes_to_device, data.len() as u64);
            self.constants[index as usize] = Some(b);
        }
        let mem = self.constants[index as usize]
            .as_ref()
            .map_or(ptr::null_mut(), PoolBuffer::mem);
        self.live.entry(mem as usize).or_insert(Live {
            bytes: c.bytes,
            owner: Owner::Constant(index),
        });
        // SAFETY: checked non-null.
        unsafe { *out = mem as *mut TccBuffer };
        Ok(())
    }

    fn view(&mut self, offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        if out.is_null() {
            return Err(Error::InvalidInput("output pointer is NULL".into()));
        }
        let f = self.function;
        if offset % f.arena_alignment != 0 {
            return Err(Error::InvalidInput(format!(
                "view offset {offset} is not a multiple of @{}'s arena alignment {}",
                f.name, f.arena_alignment
            )));
        }
        if bytes == 0
            || offset
                .checked_add(bytes)
                .is_none_or(|end| end > f.arena_bytes)
        {
            return Err(Error::InvalidInput(format!(
                "view of {bytes} bytes at offset {offset} is outside @{}'s {}-byte arena",
                f.name, f.arena_bytes
            )));
        }
        let fallback =
            if self.arena.base.is_none() && !self.arena.views.contains_key(&(offset, bytes)) {
                Some(self.acquire(bytes)?)
            } else {
                None
            };
        let mem = match self.arena.views.entry((offset, bytes)) {
            std::collections::hash_map::Entry::Occupied(v) => v.get().mem(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let view = match &self.arena.base {
                    Some(base) => match base.sub_buffer(offset, bytes) {
                        Ok(sub) => ArenaView::Sub(sub),
                        Err(code) => {
                            return Err(Error::cl(
                                format!("clCreateSubBuffer(offset {offset}, {bytes} bytes)"),
                                code.into(),
                            ));
                        }
                    },
                    None => match fallback {
                        Some(b) => ArenaView::Own(b),
                        None => ArenaView::Own(self.rt.pool().acquire(&self.rt.context, bytes)?),
                    },
                };
                slot.insert(view).mem()
            }
        };
        self.live.entry(mem as usize).or_insert(Live {
            bytes,
            owner: Owner::Arena,
        });
        // SAFETY: checked non-null.
        unsafe { *out = mem as *mut TccBuffer };
        Ok(())
    }

    fn launch(
        &mut self,
        kernel: u32,
        dims: u32,
        global: *const u64,
        local: *const u64,
        num_args: u32,
        args: *const TccArg,
    ) -> Result<()> {
        let slot = self.kernels.get(kernel as usize).ok_or_else(|| {
            Error::InvalidInput(format!(
                "kernel index {kernel} out of range (the artifact has {} kernels)",
                self.kernels.len()
            ))
        })?;
        let name = &slot.name;
        if self.rt.faults.take(crate::Fault::Launch) {
            return Err(Error::cl(
                format!("clEnqueueNDRangeKernel({name}) (injected fault, Runtime::inject_fault)"),
                opencl3::error_codes::ClError(opencl3::error_codes::CL_INVALID_COMMAND_QUEUE),
            ));
        }
        if !(1..=3).contains(&dims) {
            return Err(Error::InvalidInput(format!(
                "kernel `{name}`: dims must be 1, 2 or 3, got {dims}"
            )));
        }
        if global.is_null() {
            return Err(Error::InvalidInput(format!(
                "kernel `{name}`: global size is NULL"
            )));
        }
        if num_args != slot.num_args {
            return Err(Error::InvalidInput(format!(
                "kernel `{name}` takes {} arguments, launch passed {num_args}",
                slot.num_args
            )));
        }
        if num_args > 0 && args.is_null() {
            return Err(Error::InvalidInput(format!(
                "kernel `{name}`: args is NULL"
            )));
        }
        // SAFETY: non-null, `dims` entries per the ABI.
        let global: Vec<usize> = unsafe { std::slice::from_raw_parts(global, dims as usize) }
            .iter()
            .map(|&g| to_usize(g, "global size"))
            .collect::<Result<_>>()?;
        let local: Option<Vec<usize>> = if local.is_null() {
            None
        } else {
            // SAFETY: as above.
            let l: Vec<usize> = unsafe { std::slice::from_raw_parts(local, dims as usize) }
                .iter()
                .map(|&g| to_usize(g, "local size"))
                .collect::<Result<_>>()?;
            (l.iter().any(|&x| x != 0)).then_some(l)
        };
        // SAFETY: non-null (or empty), `num_args` entries per the ABI.
        let args: &[TccArg] = if num_args == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(args, num_args as usize) }
        };
        for (i, a) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: the union member read is the one `kind` names; every
            // value is passed by value to clSetKernelArg.
            let set = unsafe {
                match a.kind {
                    abi::TCC_ARG_BUFFER => {
                        let (mem, _) =
                            self.lookup(a.value.buffer, &format!("kernel `{name}` argument {i}"))?;
                        slot.kernel.set_arg(i, &mem)
                    }
                    abi::TCC_ARG_I32 => slot.kernel.set_arg(i, &a.value.i32),
                    abi::TCC_ARG_I64 => slot.kernel.set_arg(i, &a.value.i64),
                    abi::TCC_ARG_F32 => slot.kernel.set_arg(i, &a.value.f32),
                    k => {
                        return Err(Error::InvalidInput(format!(
                            "kernel `{name}` argument {i}: unknown arg kind {k}"
                        )));
                    }
                }
            };
            set.map_err(|e| {
                Error::cl(
                    format!(
                        "clSetKernelArg(kernel `{name}`, argument {i}, kind {})",
                        a.kind
                    ),
                    e,
                )
            })?;
        }
        if global.contains(&0) {
            return Ok(()); // An empty NDRange does nothing.
        }
        // SAFETY: all arguments are set; the size arrays have `dims` entries.
        let event = unsafe {
            self.queue.enqueue_nd_range_kernel(
                slot.kernel.get(),
                dims,
                ptr::null(),
                global.as_ptr(),
                local.as_ref().map_or(ptr::null(), |l| l.as_ptr()),
                &[],
            )
        }
        .map_err(|e| {
            Error::cl(
                format!(
                    "clEnqueueNDRangeKernel(kernel `{name}`, global {global:?}, local {local:?})"
                ),
                e,
            )
        })?;
        if self.rt.profiling {
            self.pending.push((kernel as usize, event));
        }
        Ok(())
    }

    fn copy(
        &mut self,
        dst: *mut TccBuffer,
        dst_offset: u64,
        src: *mut TccBuffer,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let (dst_mem, dst_len) = self.lookup(dst, "copy destination")?;
        let (src_mem, src_len) = self.lookup(src, "copy source")?;
        for (what, off, len) in [
            ("destination", dst_offset, dst_len),
            ("source", src_offset, src_len),
        ] {
            if off.checked_add(bytes).is_none_or(|end| end > len) {
                return Err(Error::InvalidInput(format!(
                    "copy of {bytes} bytes at {what} offset {off} overruns the {len}-byte {what} buffer"
                )));
            }
        }
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both buffers are live and the ranges are checked.
        let ev = unsafe {
            opencl3::command_queue::enqueue_copy_buffer(
                self.queue.get(),
                src_mem,
                dst_mem,
                to_usize(src_offset, "offset")?,
                to_usize(dst_offset, "offset")?,
                to_usize(bytes, "size")?,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| Error::cl("clEnqueueCopyBuffer", e.into()))?;
        drop(Event::new(ev));
        Ok(())
    }
}

const STATUS_ERROR: i32 = 1;

/// Runs `op` on the call context behind `ctx`, turning errors and panics
/// into a recorded error and a non-zero status.
fn guarded(ctx: *mut c_void, name: &str, op: impl FnOnce(&mut CallContext) -> Result<()>) -> i32 {
    if ctx.is_null() {
        return STATUS_ERROR;
    }
    // SAFETY: `ctx` is the pointer `execute` put in the table, valid for the
    // duration of the entry call; callbacks are not re-entered.
    let cx = unsafe { &mut *(ctx as *mut CallContext) };
    let outcome = catch_unwind(AssertUnwindSafe(|| op(&mut *cx)));
    let err = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e.to_string(),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            format!("internal error (panic): {msg}")
        }
    };
    if cx.error.is_none() {
        cx.error = Some(Error::ArtifactCall(format!(
            "runtime call {name}() failed: {err}"
        )));
    }
    STATUS_ERROR
}

unsafe extern "C" fn cb_alloc(ctx: *mut c_void, bytes: u64, out: *mut *mut TccBuffer) -> i32 {
    guarded(ctx, "alloc", |cx| cx.alloc(bytes, out))
}

unsafe extern "C" fn cb_release(ctx: *mut c_void, buffer: *mut TccBuffer) {
    guarded(ctx, "release", |cx| cx.release(buffer));
}

unsafe extern "C" fn cb_constant(ctx: *mut c_void, index: u32, out: *mut *mut TccBuffer) -> i32 {
    guarded(ctx, "constant", |cx| cx.constant(index, out))
}

unsafe extern "C" fn cb_view(
    ctx: *mut c_void,
    offset: u64,
    bytes: u64,
    out: *mut *mut TccBuffer,
) -> i32 {
    guarded(ctx, "view", |cx| cx.view(offset, bytes, out))
}

unsafe extern "C" fn cb_launch(
    ctx: *mut c_void,
    kernel: u32,
    dims: u32,
    global: *const u64,
    local: *const u64,
    num_args: u32,
    args: *const TccArg,
) -> i32 {
    guarded(ctx, "launch", |cx| {
        cx.launch(kernel, dims, global, local, num_args, args)
    })
}

unsafe extern "C" fn cb_copy(
    ctx: *mut c_void,
    dst: *mut TccBuffer,
    dst_offset: u64,
    src: *mut TccBuffer,
    src_offset: u64,
    bytes: u64,
) -> i32 {
    guarded(ctx, "copy", |cx| {
        cx.copy(dst, dst_offset, src, src_offset, bytes)
    })
}

/// A built kernel program and how it was chosen.
struct BuiltProgram {
    program: Arc<Program>,
    origin: ProgramOrigin,
    format: SourceKind,
    note: Option<String>,
}

/// Builds the artifact's kernels in the form the runtime's
/// [`KernelFormat`] asks for: PTX where the artifact has it and the device
/// is NVIDIA's (falling back to the OpenCL C when the driver refuses it),
/// else the OpenCL C.
fn build_program(rt: &Runtime, art: &Artifact) -> Result<BuiltProgram> {
    let inner = &rt.inner;
    let device = &inner.device;
    if inner.faults.take(crate::Fault::KernelBuild) {
        return Err(Error::Build {
            device: device.name.clone(),
            code: "CL_BUILD_PROGRAM_FAILURE".into(),
            kernels: Vec::new(),
            log: "injected fault (Runtime::inject_fault)".into(),
        });
    }
    let portable = ProgramSource {
        kind: art.source_kind,
        bytes: &art.source,
        options: &art.build_options,
    };
    let build = |source: &ProgramSource| {
        inner
            .programs()
            .get_or_build(&inner.context, device, source)
    };
    let built = |(program, origin): (Arc<Program>, ProgramOrigin), format, note| BuiltProgram {
        program,
        origin,
        format,
        note,
    };
    let nvidia = device.platform_name.contains("NVIDIA");
    match (inner.kernel_format, art.ptx.as_deref()) {
        (KernelFormat::OpenClC, _) => Ok(built(build(&portable)?, portable.kind, None)),
        (KernelFormat::Ptx, None) => Err(Error::Unsupported(format!(
            "PTX kernels were asked for ({KERNEL_FORMAT_ENV}=ptx or --kernel-format=ptx) but {} carries none; compile it with --target=nvidia or --ptx=on",
            art.path.display()
        ))),
        (KernelFormat::Ptx, Some(ptx)) => {
            Ok(built(build(&ptx_source(ptx))?, SourceKind::Ptx, None))
        }
        (KernelFormat::Auto, Some(ptx)) if nvidia => match build(&ptx_source(ptx)) {
            Ok(p) => Ok(built(p, SourceKind::Ptx, None)),
            Err(e) => {
                let first_line = e.to_string().lines().next().unwrap_or_default().to_string();
                let note = format!(
                    "{} did not take the artifact's PTX ({first_line}); built its {} instead",
                    device.name,
                    portable.kind.name()
                );
                Ok(built(build(&portable)?, portable.kind, Some(note)))
            }
        },
        (KernelFormat::Auto, Some(_)) => {
            let note = format!(
                "the artifact's PTX is for NVIDIA's OpenCL; {} ({}) builds its {}",
                device.name,
                device.platform_name,
                portable.kind.name()
            );
            Ok(built(build(&portable)?, portable.kind, Some(note)))
        }
        (KernelFormat::Auto, None) => Ok(built(build(&portable)?, portable.kind, None)),
    }
}

fn ptx_source(ptx: &[u8]) -> ProgramSource<'_> {
    ProgramSource {
        kind: SourceKind::Ptx,
        bytes: ptx,
        options: "",
    }
}
