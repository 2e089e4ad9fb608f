//! Asynchronous calls: [`Session::submit`] enqueues a whole call and
//! returns a [`CallHandle`] at once; [`CallHandle::wait`] returns the
//! outputs.
//!
//! A call uses three in-order queues of the runtime's context:
//!
//! - the **upload queue** writes the inputs into device buffers;
//! - a **compute queue** first waits for the call's last upload (a barrier
//!   on its event), then runs the kernels the artifact's entry enqueues,
//!   then a marker whose event says the call's kernels are done. Which
//!   one is the session's choice ([`ComputeQueues`], `lanes`): the
//!   runtime's own queue (the one `Session::run` uses), or one of the
//!   session's own queues, up to one per call in flight (the default on a
//!   GPU), so that the kernels of several calls run at the same time;
//! - the **download queue** reads the outputs back after that marker.
//!
//! So call N+1's uploads run while call N's kernels run, and call N's
//! downloads run while call N+1's kernels run; with several compute
//! queues the kernels of calls N and N+1 overlap too. Nothing waits on the
//! host until [`CallHandle::wait`]. Each compute queue is in order, and
//! each has its own arena (the static memory plan), so consecutive calls
//! on one queue reuse it exactly as `Session::run` does.
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
//!
//! This module holds the side queues and a session's asynchronous state;
//! `lanes` chooses a call's compute queue, `submit` enqueues a call,
//! `handle` finishes it, `staging` is the pinned staging pool.

mod handle;
mod lanes;
mod staging;
mod submit;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;

pub use handle::CallHandle;
pub use lanes::ComputeQueues;
use lanes::Lanes;
pub(crate) use staging::StagingPool;
pub use staging::StagingStats;
pub(crate) use submit::InputView;

use crate::RuntimeInner;
use crate::buffer_pool::PoolBuffer;
use crate::error::{ClResultExt, Result};
use crate::session::Session;

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
        let queues = SideQueues {
            upload: crate::create_queue(&self.context, self.profiling)?,
            download: crate::create_queue(&self.context, self.profiling)?,
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
    /// Which compute queues its calls use ([`Session::set_compute_queues`]).
    queues: ComputeQueues,
    /// Its own compute queues, created as calls need them.
    pub(crate) lanes: Lanes,
    /// Completion events of the calls submitted and maybe not yet done,
    /// oldest first.
    in_flight: VecDeque<Event>,
    io: Arc<Mutex<IoCache>>,
}

impl Default for SessionCalls {
    fn default() -> Self {
        SessionCalls {
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            queues: ComputeQueues::Auto,
            lanes: Lanes::default(),
            in_flight: VecDeque::new(),
            io: Arc::default(),
        }
    }
}

impl SessionCalls {
    /// Makes the runtime's queue wait (on the device, no host wait) for
    /// everything enqueued so far on the session's own queues: called
    /// before the session uses the runtime's queue (`run`, `run_device`,
    /// profiles), since its arena and constants are shared by both.
    pub(crate) fn join(&mut self, rt: &RuntimeInner) -> Result<()> {
        self.lanes.join(rt)
    }

    /// Waits on the host for the session's own queues.
    pub(crate) fn finish_own_queue(&mut self) {
        self.lanes.finish();
    }

    /// How many own compute queues the next call may use (0: the
    /// runtime's queue).
    pub(crate) fn lane_count(&self, rt: &RuntimeInner) -> usize {
        self.queues.count(rt, self.max_in_flight)
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

/// A second reference to `ev` (retained; the new `Event` releases it).
fn retained(ev: &Event) -> Result<Event> {
    // SAFETY: retaining a valid event.
    unsafe { opencl3::event::retain_event(ev.get()) }
        .map_err(|e| crate::error::Error::cl("clRetainEvent", e.into()))?;
    Ok(Event::new(ev.get()))
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

    /// Gives the session a compute queue of its own (`true`,
    /// [`ComputeQueues::Own`]`(1)`), or sends its calls to the runtime's
    /// queue (`false`, [`ComputeQueues::Shared`]). See
    /// [`Session::set_compute_queues`].
    pub fn set_own_queue(&mut self, own: bool) -> Result<()> {
        self.set_compute_queues(if own {
            ComputeQueues::Own(1)
        } else {
            ComputeQueues::Shared
        })
    }

    /// Chooses the compute queues of asynchronous calls (default
    /// [`ComputeQueues::Auto`]). With queues of its own a session's calls
    /// run their kernels there, up to one call per queue at the same time
    /// (a GPU runs kernels of different queues concurrently; one in-order
    /// queue never does); each queue past the first gets its own
    /// intermediate buffers (arena) for the session's life. Buffers the
    /// calls release go back to the runtime's pool only once the call is
    /// done, and buffers taken from the pool wait for the runtime's queue.
    /// `run`, `run_device` and the profile still use the runtime's queue,
    /// after the own queues' work. Outputs are bit-identical in every mode.
    pub fn set_compute_queues(&mut self, queues: ComputeQueues) -> Result<()> {
        let rt = self.rt.inner.clone();
        if self.calls.lane_count(&rt) > 0 {
            self.calls.join(&rt)?;
        }
        self.calls.queues = queues;
        Ok(())
    }

    /// The compute queues asynchronous calls use (the setting).
    pub fn compute_queues(&self) -> ComputeQueues {
        self.calls.queues
    }

    /// How many compute queues of its own the session's next calls may
    /// use on this device (0: the runtime's queue).
    pub fn compute_queue_count(&self) -> usize {
        self.calls.lane_count(&self.rt.inner)
    }

    /// Compute queues of its own the session has created so far (each past
    /// the first with its own arena); they are kept for its life.
    pub fn compute_queues_created(&self) -> usize {
        self.calls.lanes.len()
    }

    /// Whether asynchronous calls use compute queues of the session's own.
    pub fn has_own_queue(&self) -> bool {
        self.compute_queue_count() > 0
    }

    /// Sets how many calls may be in flight at once (at least 1): a
    /// `submit` beyond that waits for the oldest call's device work first.
    pub fn set_max_in_flight(&mut self, depth: usize) {
        self.calls.max_in_flight = depth.max(1);
    }
}
