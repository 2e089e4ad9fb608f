//! Asynchronous calls: [`Session::submit`] enqueues a whole call and
//! returns a [`CallHandle`] at once; [`CallHandle::wait`] returns the
//! outputs.
//!
//! A call uses three in-order queues of the runtime's context:
//!
//! - the **upload queue** writes the inputs into device buffers;
//! - the **compute queue** (the runtime's own queue, the one `Session::run`
//!   uses) first waits for the call's last upload (a barrier on its
//!   event), then runs the kernels the artifact's entry enqueues, then a
//!   marker whose event says the call's kernels are done;
//! - the **download queue** reads the outputs back after that marker.
//!
//! So call N+1's uploads run while call N's kernels run, and call N's
//! downloads run while call N+1's kernels run. Nothing waits on the host
//! until [`CallHandle::wait`]. The compute queue is still in order, so the
//! session's arena (the static memory plan) is reused by consecutive calls
//! exactly as with `Session::run`.
//!
//! **Buffers.** A call's input and output device buffers belong to the
//! call until its handle is finished (waited or dropped), then go to the
//! session's own free list ([`SessionCalls`]) for its later calls. The
//! upload queue only ever writes buffers from that list, which no earlier
//! work still uses, or buffers fresh from the runtime's pool, which earlier
//! work on the compute queue may still use (the pool's in-order rule): for
//! those the uploads also wait for a marker on the compute queue. That
//! happens only for a session's first calls, until its free list holds a
//! set of buffers per call in flight.
//!
//! **Host tensors.** On a host-memory device (a CPU, [`HostIo::InPlace`])
//! the inputs and outputs are used in place, as in `Session::run`: the
//! handle owns the input tensors until the call is done, and each output is
//! a page-aligned block the kernels write into (mapped for reading after
//! the kernels, unmapped in `wait`). On a device that copies, inputs and
//! outputs go through **pinned staging buffers** (`CL_MEM_ALLOC_HOST_PTR`,
//! mapped once for their life, as NVIDIA's OpenCL guide recommends for
//! full-speed DMA): `submit` copies each input into one on the calling
//! thread, the upload reads from it; the download writes into one and
//! `wait` copies it into the output tensor. With pinned staging off
//! (`TCC_PINNED_STAGING=0`) the transfers use the tensors' own memory.
//!
//! **Depth.** A session keeps at most [`Session::max_in_flight`] calls in
//! flight (default [`DEFAULT_MAX_IN_FLIGHT`]): `submit` first waits for
//! the oldest call's device work (not its handle) when that many are
//! still running.
//!
//! **Handles.** A handle does not borrow its session: it holds its own
//! buffers and a reference to the runtime, so it can be waited after the
//! session is dropped (the session's drop waits for the kernels; the
//! handle then finishes its download). Waiting twice is an error that says
//! so; dropping a handle unwaited waits for its device work and discards
//! the outputs. [`crate::Runtime::live_call_handles`] counts handles not
//! yet dropped.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::event::Event;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE, ClMem,
};
use opencl3::types::{CL_TRUE, cl_event, cl_mem};
use serde::Serialize;

use crate::buffer_pool::PoolBuffer;
use crate::device::HostIo;
use crate::error::{ClResultExt, Error, Result};
use crate::host_bytes::HostBytes;
use crate::session::{
    Session, enqueue_read, enqueue_write, exec_error, input_in_place, map_for_reading,
    output_in_place, unmap_output,
};
use crate::tensor::{DType, HostTensor};
use crate::{RuntimeInner, TransferCounters};

/// Calls a session keeps in flight unless told otherwise
/// ([`Session::set_max_in_flight`]).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4;

/// The upload and download queues of a runtime's asynchronous calls.
pub(crate) struct SideQueues {
    pub(crate) upload: CommandQueue,
    pub(crate) download: CommandQueue,
}

impl RuntimeInner {
    /// The side queues, created on first use.
    pub(crate) fn side_queues(&self) -> Result<&SideQueues> {
        if let Some(q) = self.side_queues.get() {
            return Ok(q);
        }
        let props = if self.profiling {
            CL_QUEUE_PROFILING_ENABLE
        } else {
            0
        };
        let queues = SideQueues {
            upload: crate::create_queue(&self.context, props)?,
            download: crate::create_queue(&self.context, props)?,
        };
        // Another thread may have won the race: its queues are kept.
        let _ = self.side_queues.set(queues);
        Ok(self.side_queues.get().expect("just set"))
    }
}

/// Called when the runtime is dropped: waits for the side queues and
/// unmaps and frees the staging buffers.
pub(crate) fn release_side_resources(rt: &mut RuntimeInner) {
    if let Some(q) = rt.side_queues.get() {
        let _ = q.upload.finish();
        let _ = q.download.finish();
        let staging =
            std::mem::take(&mut *rt.staging.get_mut().unwrap_or_else(PoisonError::into_inner));
        staging.free_all(&q.upload);
    }
}

// ---------------------------------------------------------------------------
// Pinned staging.

/// A pinned host buffer (`CL_MEM_ALLOC_HOST_PTR`), mapped for its life.
pub(crate) struct StagingBuf {
    buffer: Buffer<u8>,
    /// The mapped host pointer (as an address, so the type is `Send`).
    ptr: usize,
    capacity: usize,
}

impl StagingBuf {
    fn ptr(&self) -> *mut u8 {
        self.ptr as *mut u8
    }
}

/// Free pinned staging buffers, by capacity (powers of two).
#[derive(Default)]
pub(crate) struct StagingPool {
    free: Vec<StagingBuf>,
    stats: StagingStats,
}

/// What the pinned staging pool holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StagingStats {
    /// Staging buffers created (`CL_MEM_ALLOC_HOST_PTR` + map).
    pub allocations: u64,
    /// Staging buffers taken from the free list.
    pub reuse_hits: u64,
    /// Bytes of every staging buffer alive (free or in use).
    pub current_bytes: u64,
    /// Staging buffers in use by calls in flight.
    pub in_use: u64,
}

/// The most bytes of free staging buffers kept for reuse.
const MAX_FREE_STAGING_BYTES: usize = 1 << 30;

impl StagingPool {
    pub(crate) fn stats(&self) -> StagingStats {
        self.stats.clone()
    }

    /// A staging buffer of at least `bytes` bytes.
    fn take(
        &mut self,
        rt: &RuntimeInner,
        queue: &CommandQueue,
        bytes: usize,
    ) -> Result<StagingBuf> {
        let capacity = bytes.max(4096).checked_next_power_of_two().unwrap_or(bytes);
        if let Some(i) = self.free.iter().position(|b| b.capacity == capacity) {
            self.stats.reuse_hits += 1;
            self.stats.in_use += 1;
            return Ok(self.free.swap_remove(i));
        }
        // SAFETY: no host pointer is passed (the driver allocates).
        let buffer = unsafe {
            Buffer::<u8>::create(
                &rt.context,
                CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                capacity,
                ptr::null_mut(),
            )
        }
        .map_err(|e| {
            Error::cl(
                format!(
                    "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR, {capacity} bytes) for pinned staging"
                ),
                e,
            )
        })?;
        let mut mapped: cl_mem = ptr::null_mut();
        // SAFETY: a blocking map of the whole new buffer; unmapped in
        // `free_all` before the buffer is released.
        let ev = unsafe {
            opencl3::command_queue::enqueue_map_buffer(
                queue.get(),
                buffer.get(),
                CL_TRUE,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                capacity,
                &mut mapped,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| Error::cl("clEnqueueMapBuffer (pinned staging)", e.into()))?;
        drop(Event::new(ev));
        if mapped.is_null() {
            return Err(Error::Unsupported(
                "the driver mapped a pinned staging buffer at NULL".into(),
            ));
        }
        self.stats.allocations += 1;
        self.stats.in_use += 1;
        self.stats.current_bytes += capacity as u64;
        Ok(StagingBuf {
            buffer,
            ptr: mapped as usize,
            capacity,
        })
    }

    /// Gives a buffer back (its call is done with it); buffers beyond
    /// [`MAX_FREE_STAGING_BYTES`] of free ones are unmapped and freed.
    fn give_back(&mut self, buf: StagingBuf, queue: &CommandQueue) {
        self.stats.in_use = self.stats.in_use.saturating_sub(1);
        let free_bytes: usize = self.free.iter().map(|b| b.capacity).sum();
        if free_bytes + buf.capacity > MAX_FREE_STAGING_BYTES {
            self.stats.current_bytes -= buf.capacity as u64;
            unmap_staging(buf, queue);
        } else {
            self.free.push(buf);
        }
    }

    /// Unmaps and frees every free buffer.
    fn free_all(mut self, queue: &CommandQueue) {
        for b in self.free.drain(..) {
            unmap_staging(b, queue);
        }
        let _ = queue.finish();
    }
}

fn unmap_staging(buf: StagingBuf, queue: &CommandQueue) {
    // SAFETY: `ptr` is the pointer this buffer's map returned; nothing uses
    // the buffer any more.
    let ev = unsafe {
        opencl3::command_queue::enqueue_unmap_mem_object(
            queue.get(),
            buf.buffer.get(),
            buf.ptr as *mut c_void,
            0,
            ptr::null(),
        )
    };
    if let Ok(ev) = ev {
        let ev = Event::new(ev);
        let _ = ev.wait();
    }
    drop(buf);
}

// ---------------------------------------------------------------------------
// A session's asynchronous state.

/// Device buffers of finished calls, kept for the session's later calls.
#[derive(Default)]
pub(crate) struct IoCache {
    free: Vec<PoolBuffer>,
    /// The session is gone: buffers go straight back to the pool.
    closed: bool,
}

/// A session's calls in flight and its reusable call buffers.
pub(crate) struct SessionCalls {
    max_in_flight: usize,
    /// The session's own compute queue ([`Session::set_own_queue`]).
    own_queue: Option<Arc<CommandQueue>>,
    /// Work went on the own queue since the runtime's queue last waited
    /// for it.
    own_used: bool,
    /// Completion events of the calls submitted and maybe not yet done,
    /// oldest first.
    in_flight: VecDeque<Event>,
    io: Arc<Mutex<IoCache>>,
}

impl Default for SessionCalls {
    fn default() -> Self {
        SessionCalls {
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            own_queue: None,
            own_used: false,
            in_flight: VecDeque::new(),
            io: Arc::default(),
        }
    }
}

impl SessionCalls {
    /// Makes the runtime's queue wait (on the device, no host wait) for
    /// everything enqueued so far on the session's own queue: called
    /// before the session uses the runtime's queue (`run`, `run_device`,
    /// profiles), since its arena and constants are shared by both.
    pub(crate) fn join(&mut self, rt: &RuntimeInner) -> Result<()> {
        if let (Some(q), true) = (&self.own_queue, self.own_used) {
            wait_for_queue(q, &rt.queue)?;
            self.own_used = false;
        }
        Ok(())
    }

    /// Waits on the host for the session's own queue.
    pub(crate) fn finish_own_queue(&mut self) {
        if let Some(q) = &self.own_queue {
            let _ = q.finish();
        }
    }

    /// The session is being dropped (its queue finished): kept buffers go
    /// back to the pool; calls still in flight return theirs there.
    pub(crate) fn close(&mut self, rt: &RuntimeInner) {
        for ev in self.in_flight.drain(..) {
            let _ = ev.wait();
        }
        let mut io = self.io.lock().unwrap_or_else(PoisonError::into_inner);
        io.closed = true;
        let mut pool = rt.pool();
        for b in io.free.drain(..) {
            pool.release(b);
        }
    }

    /// Forgets the calls that are done; then, while `max_in_flight` or more
    /// are running, waits for the oldest.
    fn throttle(&mut self) {
        while let Some(front) = self.in_flight.front() {
            let done = !is_running(front);
            if done || self.in_flight.len() >= self.max_in_flight {
                if !done {
                    // Its failure, if any, is its handle's to report.
                    let _ = front.wait();
                }
                self.in_flight.pop_front();
            } else {
                break;
            }
        }
    }
}

/// Whether an event's command is still queued or running (a failed one is
/// not).
fn is_running(ev: &Event) -> bool {
    ev.command_execution_status().is_ok_and(|s| s.0 > 0)
}

fn take_io(rt: &RuntimeInner, io: &Mutex<IoCache>, bytes: u64) -> Result<(PoolBuffer, bool)> {
    let class = rt.pool().class_for(bytes.max(1))?;
    {
        let mut cache = io.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = cache.free.iter().position(|b| b.capacity() == class) {
            return Ok((cache.free.swap_remove(i), false));
        }
    }
    Ok((rt.pool().acquire(&rt.context, bytes.max(1))?, true))
}

fn give_io(rt: &RuntimeInner, io: &Mutex<IoCache>, b: PoolBuffer) {
    let mut cache = io.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.closed {
        drop(cache);
        rt.pool().release(b);
    } else {
        cache.free.push(b);
    }
}

/// Makes `waiting` wait (on the device) for everything enqueued so far on
/// `first`: a marker on `first`, a barrier on `waiting`.
fn wait_for_queue(first: &CommandQueue, waiting: &CommandQueue) -> Result<()> {
    // SAFETY: markers and barriers read no memory.
    let marker =
        unsafe { first.enqueue_marker_with_wait_list(&[]) }.cl("clEnqueueMarkerWithWaitList")?;
    first.flush().cl("clFlush")?;
    // SAFETY: as above.
    let barrier = unsafe { waiting.enqueue_barrier_with_wait_list(&[marker.get()]) }
        .cl("clEnqueueBarrierWithWaitList")?;
    drop(barrier);
    Ok(())
}

/// Makes a session's own `queue` wait for the runtime's queue: a buffer
/// just taken from the pool may still be used by work queued there.
pub(crate) fn wait_for_runtime_queue(rt: &RuntimeInner, queue: &CommandQueue) -> Result<()> {
    wait_for_queue(&rt.queue, queue)
}

// ---------------------------------------------------------------------------
// Submitting.

/// Error labels of the side queues' transfers.
const WRITE: &str = "clEnqueueWriteBuffer (upload queue)";
const READ: &str = "clEnqueueReadBuffer (download queue)";
const MAP: &str = "clEnqueueMapBuffer (download queue)";

/// Where an input's bytes come from when they are copied.
enum UploadSource {
    /// A pinned staging buffer holding a copy.
    Staged(StagingBuf),
    /// The input tensor itself (kept in `Resources::inputs`), by index.
    Own(usize),
}

/// How an output comes back.
enum OutputSlot {
    /// The kernels write the result's own memory (a host-memory device):
    /// mapped for reading after them, unmapped in `wait`.
    InPlace {
        buffer: Buffer<u8>,
        bytes: HostBytes,
        mapped: usize,
    },
    /// Read into a pinned staging buffer, copied into `bytes` in `wait`.
    Staged {
        device: PoolBuffer,
        stage: StagingBuf,
        bytes: HostBytes,
    },
    /// Read straight into `bytes`.
    Direct {
        device: PoolBuffer,
        bytes: HostBytes,
    },
}

/// Everything a call in flight holds.
#[derive(Default)]
struct Resources {
    /// The input tensors, kept while the device may read them.
    inputs: Vec<HostTensor>,
    /// Device buffers of copied inputs.
    in_device: Vec<PoolBuffer>,
    /// Host buffers over inputs used in place.
    in_host: Vec<Buffer<u8>>,
    staging: Vec<StagingBuf>,
    /// Temporaries the call released on a session's own queue, given back
    /// to the pool when it is done.
    deferred: Vec<PoolBuffer>,
    outputs: Vec<OutputSlot>,
    /// Output descriptions, for the result tensors.
    out_types: Vec<(DType, Vec<usize>)>,
}

impl Session {
    /// The most calls this session keeps in flight (see
    /// [`Session::set_max_in_flight`]).
    pub fn max_in_flight(&self) -> usize {
        self.calls.max_in_flight
    }

    /// Calls of this session whose device work is still running.
    pub fn calls_running(&mut self) -> usize {
        self.calls.in_flight.retain(is_running);
        self.calls.in_flight.len()
    }

    /// Gives the session a compute queue of its own (`true`), or goes back
    /// to the runtime's (`false`). Asynchronous calls then run their
    /// kernels there, so that the calls of several sessions on one device
    /// can run at the same time (a GPU runs kernels of different queues
    /// concurrently; one in-order queue never does). Each session has its
    /// own arena, so this is safe; buffers the calls release go back to the
    /// runtime's pool only once the call is done, and buffers taken from
    /// the pool wait for the runtime's queue. `run`, `run_device` and the
    /// profile still use the runtime's queue, after the own queue's work.
    pub fn set_own_queue(&mut self, own: bool) -> Result<()> {
        let rt = self.rt.inner.clone();
        if own == self.calls.own_queue.is_some() {
            return Ok(());
        }
        if own {
            let props = if rt.profiling {
                CL_QUEUE_PROFILING_ENABLE
            } else {
                0
            };
            self.calls.own_queue = Some(Arc::new(crate::create_queue(&rt.context, props)?));
        } else {
            self.calls.join(&rt)?;
            self.calls.finish_own_queue();
            self.calls.own_queue = None;
        }
        Ok(())
    }

    /// Whether asynchronous calls use a compute queue of the session's own.
    pub fn has_own_queue(&self) -> bool {
        self.calls.own_queue.is_some()
    }

    /// Sets how many calls may be in flight at once (at least 1): a
    /// `submit` beyond that waits for the oldest call's device work first.
    pub fn set_max_in_flight(&mut self, depth: usize) {
        self.calls.max_in_flight = depth.max(1);
    }

    /// Starts `function` on `inputs` and returns at once; the outputs come
    /// from [`CallHandle::wait`]. Errors found before anything runs (an
    /// unknown function, wrong input types, a failing runtime call while
    /// the kernels are enqueued) are returned here, after everything the
    /// call had enqueued has finished, and the session stays usable.
    ///
    /// Outputs are bit-identical to `Session::run`'s: the same kernels run
    /// in the same order on the same queue.
    pub fn submit(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<CallHandle> {
        self.submit_inner(function, Inputs::Owned(inputs))
    }

    /// Like [`Session::submit`] for borrowed inputs: with pinned staging
    /// they are copied into staging buffers before this returns; on a
    /// host-memory device they are cloned (the call needs them until it is
    /// done).
    pub fn submit_ref(&mut self, function: &str, inputs: &[HostTensor]) -> Result<CallHandle> {
        self.submit_inner(function, Inputs::Borrowed(inputs))
    }

    /// Another name for [`Session::submit`].
    pub fn run_async(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<CallHandle> {
        self.submit(function, inputs)
    }

    fn submit_inner(&mut self, function: &str, inputs: Inputs<'_>) -> Result<CallHandle> {
        let model = self.model.clone();
        let f = model.function(function)?;
        {
            let slice: &[HostTensor] = match &inputs {
                Inputs::Owned(v) => v,
                Inputs::Borrowed(s) => s,
            };
            f.check_input_types(slice.iter().map(|t| (t.dtype, t.shape.as_slice())), &[])?;
        }
        self.calls.throttle();
        let rt = self.rt.inner.clone();
        let queues = rt.side_queues()?;
        let in_place = rt.host_io == HostIo::InPlace;
        let staged = !in_place && rt.pinned_staging;
        let io = self.calls.io.clone();
        let own = self.calls.own_queue.clone();
        if own.is_some() {
            self.calls.own_used = true;
        }
        let mut res = Resources {
            out_types: f
                .outputs
                .iter()
                .map(|d| (d.dtype, d.shape.clone()))
                .collect(),
            ..Default::default()
        };
        let started = Instant::now();

        // Everything is enqueued here; on failure `res` is cleaned up below
        // once the queues have finished with it.
        let enqueue = |res: &mut Resources| -> Result<(Event, Event)> {
            // Inputs the device may read after `submit` returns are owned by
            // the call from here on (also when enqueuing fails half-way).
            let (owned, lent): (Vec<HostTensor>, Option<&[HostTensor]>) = match inputs {
                Inputs::Owned(v) => (v, None),
                Inputs::Borrowed(s) if !staged => (s.to_vec(), None),
                Inputs::Borrowed(s) => (Vec::new(), Some(s)),
            };
            res.inputs = owned;
            let borrowed: &[HostTensor] = lent.unwrap_or(&res.inputs);
            // Per input: its buffer, and what to upload into it.
            let mut in_io: Vec<(cl_mem, u64)> = Vec::with_capacity(borrowed.len());
            let mut uploads: Vec<(cl_mem, UploadSource, usize)> = Vec::new();
            let mut fresh = false;
            for (i, t) in borrowed.iter().enumerate() {
                let bytes = &t.bytes;
                // SAFETY: an input used in place is one of `res.inputs`
                // (borrowed inputs are cloned there on a host-memory
                // device), kept until the call is done.
                if let Some(b) = unsafe { input_in_place(&rt, bytes) }? {
                    in_io.push((b.get(), bytes.len() as u64));
                    res.in_host.push(b);
                    TransferCounters::add(&rt.transfers.inputs_in_place, 1);
                    continue;
                }
                let (dev, new) = take_io(&rt, &io, bytes.len() as u64)?;
                fresh |= new;
                let mem = dev.mem();
                in_io.push((mem, bytes.len() as u64));
                res.in_device.push(dev);
                let source = if staged && !bytes.is_empty() {
                    let stage = rt.staging().take(&rt, &queues.upload, bytes.len())?;
                    // SAFETY: the staging buffer holds at least `len` bytes
                    // and nothing else uses it.
                    let dst = unsafe { std::slice::from_raw_parts_mut(stage.ptr(), bytes.len()) };
                    copy_bytes(dst, bytes);
                    UploadSource::Staged(stage)
                } else {
                    UploadSource::Own(i)
                };
                uploads.push((mem, source, bytes.len()));
            }
            // The outputs.
            let mut out_io: Vec<(cl_mem, u64)> = Vec::with_capacity(res.out_types.len());
            for d in &f.outputs {
                let size = d.byte_size();
                let mut bytes = self.output_block(size);
                // SAFETY: the block is owned by the call and not read until
                // it is done; it does not move.
                if let Some(b) = unsafe { output_in_place(&rt, &mut bytes) }? {
                    out_io.push((b.get(), size as u64));
                    res.outputs.push(OutputSlot::InPlace {
                        buffer: b,
                        bytes,
                        mapped: 0,
                    });
                    continue;
                }
                let (device, _) = take_io(&rt, &io, size as u64)?;
                out_io.push((device.mem(), size as u64));
                if staged && size > 0 {
                    let stage = rt.staging().take(&rt, &queues.upload, size)?;
                    res.outputs.push(OutputSlot::Staged {
                        device,
                        stage,
                        bytes,
                    });
                } else {
                    res.outputs.push(OutputSlot::Direct { device, bytes });
                }
            }
            // Uploads: after the compute queue's earlier work when a buffer
            // came fresh from the pool.
            // SAFETY: a marker reads nothing.
            let fence = if fresh && !uploads.is_empty() {
                Some(
                    unsafe { rt.queue.enqueue_marker_with_wait_list(&[]) }
                        .cl("clEnqueueMarkerWithWaitList")?,
                )
            } else {
                None
            };
            let fence_list: Vec<cl_event> = fence.iter().map(Event::get).collect();
            let mut last_upload: Option<Event> = None;
            for (mem, source, len) in uploads {
                let src: &[u8] = match &source {
                    // SAFETY: the staging buffer holds at least `len` bytes.
                    UploadSource::Staged(s) => unsafe { std::slice::from_raw_parts(s.ptr(), len) },
                    UploadSource::Own(i) => &borrowed[*i].bytes,
                };
                // SAFETY: the source (a staging buffer or an input tensor)
                // is kept by the call until it is done.
                let written =
                    unsafe { enqueue_write(&queues.upload, mem, src, false, &fence_list, WRITE) }?;
                if written.is_some() {
                    last_upload = written;
                    TransferCounters::add(&rt.transfers.bytes_to_device, len as u64);
                }
                if let UploadSource::Staged(s) = source {
                    res.staging.push(s);
                }
            }
            let compute: &CommandQueue = own.as_deref().unwrap_or(&rt.queue);
            // The kernels wait for the uploads and, on an own queue, for
            // what the runtime's queue holds (this session's arena and
            // constants may be in use there).
            let mut start: Vec<Event> = Vec::new();
            if let Some(up) = last_upload {
                queues.upload.flush().cl("clFlush (upload queue)")?;
                start.push(up);
            }
            if own.is_some() {
                // SAFETY: a marker reads nothing.
                start.push(
                    unsafe { rt.queue.enqueue_marker_with_wait_list(&[]) }
                        .cl("clEnqueueMarkerWithWaitList")?,
                );
                rt.queue.flush().cl("clFlush")?;
            }
            if !start.is_empty() {
                let list: Vec<cl_event> = start.iter().map(Event::get).collect();
                // SAFETY: a barrier reads nothing.
                let barrier = unsafe { compute.enqueue_barrier_with_wait_list(&list) }
                    .cl("clEnqueueBarrierWithWaitList")?;
                drop(barrier);
            }
            if own.is_some() {
                self.execute_on(f, &in_io, &out_io, compute, Some(&mut res.deferred))?;
            } else {
                self.execute(f, &in_io, &out_io)?;
            }
            // SAFETY: a marker reads nothing.
            let computed = unsafe { compute.enqueue_marker_with_wait_list(&[]) }
                .cl("clEnqueueMarkerWithWaitList")?;
            compute.flush().cl("clFlush")?;
            let mut done: Option<Event> = None;
            let wait = [computed.get()];
            for slot in res.outputs.iter_mut() {
                let (device, dst): (&PoolBuffer, &mut [u8]) = match slot {
                    OutputSlot::InPlace {
                        buffer,
                        bytes,
                        mapped,
                    } => {
                        // SAFETY: unmapped in `finish`; the block outlives it.
                        let (p, ev) = unsafe {
                            map_for_reading(&queues.download, buffer.get(), bytes.len(), &wait, MAP)
                        }?;
                        *mapped = p as usize;
                        done = Some(ev);
                        continue;
                    }
                    OutputSlot::Staged {
                        device,
                        stage,
                        bytes,
                    } => {
                        // SAFETY: the staging buffer holds at least
                        // `bytes.len()` bytes.
                        let dst =
                            unsafe { std::slice::from_raw_parts_mut(stage.ptr(), bytes.len()) };
                        (device, dst)
                    }
                    OutputSlot::Direct { device, bytes } => (device, bytes),
                };
                // SAFETY: `dst` (a staging buffer or the output's block) is
                // kept until the call is done and does not move.
                if let Some(ev) =
                    unsafe { enqueue_read(&queues.download, device.mem(), dst, &wait, READ) }?
                {
                    TransferCounters::add(&rt.transfers.bytes_to_host, dst.len() as u64);
                    done = Some(ev);
                }
            }
            queues.download.flush().cl("clFlush (download queue)")?;
            let done = match done {
                Some(d) => d,
                // No output to read: the kernels' marker ends the call (a
                // second reference to it).
                None => {
                    // SAFETY: retaining a valid event.
                    unsafe { opencl3::event::retain_event(computed.get()) }
                        .map_err(|e| Error::cl("clRetainEvent", e.into()))?;
                    Event::new(computed.get())
                }
            };
            Ok((computed, done))
        };
        match enqueue(&mut res) {
            Ok((computed, done)) => {
                // The session's own reference to the end of the call.
                // SAFETY: retaining a valid event.
                if unsafe { opencl3::event::retain_event(done.get()) }.is_ok() {
                    self.calls.in_flight.push_back(Event::new(done.get()));
                }
                rt.live_handles
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(CallHandle {
                    rt: rt.clone(),
                    function: f.name.clone(),
                    submitted: started,
                    state: Some(InFlight {
                        rt,
                        io,
                        own,
                        computed,
                        done,
                        res,
                    }),
                })
            }
            Err(e) => {
                // Whatever was enqueued must finish before its memory goes.
                let _ = queues.upload.finish();
                if let Some(q) = &own {
                    let _ = q.finish();
                }
                let _ = rt.queue.finish();
                let _ = queues.download.finish();
                unmap_outputs(&rt, &queues.download, &mut res, false);
                retire(&rt, &io, res);
                Err(match e {
                    e @ Error::Execution { .. } => e,
                    e => exec_error(f, e),
                })
            }
        }
    }
}

/// Bytes from or to a staging buffer: large blocks are copied by several
/// threads (one thread's memcpy, about 10 GB/s, would otherwise bound a
/// GPU's PCIe transfers, e.g. sgemm 4096³'s 192 MiB per call).
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    const PER_THREAD: usize = 8 << 20;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(src.len() / PER_THREAD);
    if threads <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    let chunk = src.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            scope.spawn(move || d.copy_from_slice(s));
        }
    });
}

enum Inputs<'a> {
    Owned(Vec<HostTensor>),
    Borrowed(&'a [HostTensor]),
}

/// Unmaps outputs mapped in place (after the download queue ran the maps),
/// taking the bytes where the driver mapped a copy, when `ok`.
fn unmap_outputs(rt: &RuntimeInner, download: &CommandQueue, res: &mut Resources, ok: bool) {
    let mut last = None;
    for slot in res.outputs.iter_mut() {
        if let OutputSlot::InPlace {
            buffer,
            bytes,
            mapped,
        } = slot
        {
            if *mapped == 0 {
                continue;
            }
            // SAFETY: the download queue ran the map (the caller waited
            // for it); `mapped` covers the whole block.
            let ev =
                unsafe { unmap_output(rt, download, buffer.get(), *mapped as *mut u8, bytes, ok) };
            *mapped = 0;
            if ev.is_some() {
                last = ev;
            }
        }
    }
    if let Some(ev) = last {
        let _ = ev.wait();
    }
}

/// Returns a finished call's buffers: device buffers to the session's free
/// list (or the pool once the session is gone), staging to the runtime.
fn retire(rt: &RuntimeInner, io: &Mutex<IoCache>, res: Resources) {
    let Resources {
        in_device,
        in_host,
        staging,
        deferred,
        outputs,
        ..
    } = res;
    drop(in_host);
    {
        let mut pool = rt.pool();
        for b in deferred {
            pool.release(b);
        }
    }
    for b in in_device {
        give_io(rt, io, b);
    }
    let queue = rt.side_queues.get().map(|q| &q.upload);
    let give_stage = |s: StagingBuf| {
        if let Some(q) = queue {
            rt.staging().give_back(s, q);
        }
    };
    for s in staging {
        give_stage(s);
    }
    for o in outputs {
        match o {
            OutputSlot::InPlace { .. } => {}
            OutputSlot::Staged { device, stage, .. } => {
                give_io(rt, io, device);
                give_stage(stage);
            }
            OutputSlot::Direct { device, .. } => give_io(rt, io, device),
        }
    }
}

// ---------------------------------------------------------------------------
// Handles.

/// A call in flight, from [`Session::submit`]. Wait for it once with
/// [`CallHandle::wait`]; dropping it unwaited waits for its device work and
/// discards the outputs. It does not borrow the session and stays valid
/// after the session is dropped.
pub struct CallHandle {
    rt: Arc<RuntimeInner>,
    function: String,
    submitted: Instant,
    /// `None` once waited.
    state: Option<InFlight>,
}

struct InFlight {
    rt: Arc<RuntimeInner>,
    io: Arc<Mutex<IoCache>>,
    /// The session's own compute queue, if the call ran there.
    own: Option<Arc<CommandQueue>>,
    /// The marker after the call's kernels.
    computed: Event,
    /// The call's last command (its last download, or `computed`).
    done: Event,
    res: Resources,
}

impl CallHandle {
    /// The function called.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// The device the call runs on.
    pub fn device(&self) -> &crate::DeviceInfo {
        &self.rt.device
    }

    pub(crate) fn runtime_inner(&self) -> &Arc<RuntimeInner> {
        &self.rt
    }

    /// When `submit` started on this call.
    pub fn submitted_at(&self) -> Instant {
        self.submitted
    }

    /// Whether the call's device work is over (done or failed), so that
    /// `wait` will not block on the device. `false` once waited.
    pub fn is_ready(&self) -> bool {
        self.state.as_ref().is_some_and(|s| !is_running(&s.done))
    }

    /// Whether `wait` has already returned.
    pub fn is_waited(&self) -> bool {
        self.state.is_none()
    }

    /// Waits for the call and returns its outputs. A second `wait` is an
    /// error (the outputs were handed out by the first).
    pub fn wait(&mut self) -> Result<Vec<HostTensor>> {
        let Some(state) = self.state.take() else {
            return Err(Error::InvalidInput(format!(
                "the call of @{} was already waited for; a handle's outputs are returned once",
                self.function
            )));
        };
        state.finish(&self.function)
    }
}

impl InFlight {
    fn finish(self, function: &str) -> Result<Vec<HostTensor>> {
        let InFlight {
            rt,
            io,
            own,
            computed,
            done,
            mut res,
        } = self;
        let waited = opencl3::event::wait_for_events(&[done.get()]);
        let failed = |ev: &Event| ev.command_execution_status().map_or(true, |s| s.0 < 0);
        let error = if waited.is_err() || failed(&computed) || failed(&done) {
            // Make sure nothing still uses the call's memory.
            if let Some(q) = rt.side_queues.get() {
                let _ = q.upload.finish();
                let _ = q.download.finish();
            }
            if let Some(q) = &own {
                let _ = q.finish();
            }
            let _ = rt.queue.finish();
            let code = waited
                .err()
                .unwrap_or(opencl3::error_codes::CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
            Some(Error::Execution {
                function: function.to_string(),
                message: Error::cl(
                    "the device failed the call (clWaitForEvents)",
                    opencl3::error_codes::ClError(code),
                )
                .to_string(),
            })
        } else {
            None
        };
        if let Some(q) = rt.side_queues.get() {
            unmap_outputs(&rt, &q.download, &mut res, error.is_none());
        }
        // Staged outputs: copy out of the pinned buffers.
        let mut results = Vec::with_capacity(res.outputs.len());
        for slot in res.outputs.iter_mut() {
            let bytes = match slot {
                OutputSlot::InPlace { bytes, .. } | OutputSlot::Direct { bytes, .. } => {
                    std::mem::replace(bytes, HostBytes::zeroed(0))
                }
                OutputSlot::Staged { stage, bytes, .. } => {
                    let mut b = std::mem::replace(bytes, HostBytes::zeroed(0));
                    if error.is_none() {
                        let len = b.len();
                        // SAFETY: the read into the staging buffer is done;
                        // it holds at least `len` bytes.
                        copy_bytes(&mut b, unsafe {
                            std::slice::from_raw_parts(stage.ptr(), len)
                        });
                    }
                    b
                }
            };
            results.push(bytes);
        }
        let types = std::mem::take(&mut res.out_types);
        drop(computed);
        drop(done);
        retire(&rt, &io, res);
        if let Some(e) = error {
            return Err(e);
        }
        types
            .into_iter()
            .zip(results)
            .map(|((dtype, shape), bytes)| HostTensor::from_bytes(dtype, shape, bytes))
            .collect()
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let _ = state.finish(&self.function);
        }
        self.rt
            .live_handles
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl std::fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CallHandle(@{}, {})",
            self.function,
            if self.state.is_some() {
                "in flight"
            } else {
                "waited"
            }
        )
    }
}
