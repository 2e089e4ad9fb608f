//! A session's compute queues for asynchronous calls ("lanes"): how many
//! it uses ([`ComputeQueues`]), which one a call goes on, and the events
//! that order them against each other and against the runtime's queue.
//!
//! One in-order queue runs one kernel at a time, so a session whose calls
//! all share a queue only hides transfers and host work behind its
//! kernels. On a GPU the kernels of several queues run at the same time:
//! a session with `n` lanes runs up to `n` calls' kernels at once, as `n`
//! sessions with a queue each do. Each lane past the first has its own
//! intermediate buffers (an arena, kept by the session, see
//! `session::lane_memory`); lane 0 uses the session's.
//!
//! Ordering: a call on a lane first waits (a barrier, no host wait) for
//! its uploads, for the last call that uploaded shared constants on
//! another lane, and for what the runtime's queue holds when that can
//! matter: the lane is new (its arena came from the pool), the session
//! used the runtime's queue since (`run`, `run_device`, constant uploads:
//! `join` notes it), or an output buffer came fresh from the pool (work
//! queued there may still use it). Temporaries and views the call takes
//! from the pool wait for the runtime's queue themselves.
//! Before the session uses the runtime's queue again, that queue waits for
//! every lane used since ([`Lanes::join`]).

use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;

use super::{is_running, retained, wait_for_queue};
use crate::RuntimeInner;
use crate::device::HostIo;
use crate::error::{Error, Result};

/// Which compute queues a session's asynchronous calls use
/// ([`crate::Session::set_compute_queues`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComputeQueues {
    /// On a device that copies (a GPU): up to one queue of the session's
    /// own per call in flight ([`crate::Session::max_in_flight`]). On a
    /// host-memory device (a CPU): the runtime's queue, since kernels of
    /// several queues would only compete for the same cores.
    #[default]
    Auto,
    /// The runtime's queue, shared by its sessions and by `Session::run`.
    Shared,
    /// Up to `n` queues of the session's own (at least 1).
    Own(usize),
}

impl ComputeQueues {
    /// `auto`, `shared` or a count of own queues (`1`, `4`).
    pub fn parse(text: &str) -> Result<ComputeQueues> {
        match text {
            "auto" => Ok(ComputeQueues::Auto),
            "shared" | "0" => Ok(ComputeQueues::Shared),
            n => match n.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(ComputeQueues::Own(n)),
                _ => Err(Error::InvalidInput(format!(
                    "compute queues must be auto, shared or a count of at least 1, got `{text}`"
                ))),
            },
        }
    }

    /// How many own queues this means for a session on `rt` keeping
    /// `max_in_flight` calls in flight (0: the runtime's queue).
    pub(crate) fn count(self, rt: &RuntimeInner, max_in_flight: usize) -> usize {
        match self {
            ComputeQueues::Auto if rt.host_io == HostIo::Copy => max_in_flight.max(1),
            ComputeQueues::Auto | ComputeQueues::Shared => 0,
            ComputeQueues::Own(n) => n.max(1),
        }
    }
}

/// One compute queue of a session.
struct Lane {
    queue: Arc<CommandQueue>,
    /// Work went on it since the runtime's queue last waited for it.
    used: bool,
    /// The marker after its last call's kernels.
    last: Option<Event>,
    /// When it last took a call (a counter), to use lanes in turn.
    last_use: u64,
    /// The session put work on the runtime's queue since this lane's
    /// calls last waited for it (or the lane is new).
    runtime_fence: bool,
}

/// A session's lanes, created as calls need them and kept for its life.
pub(crate) struct Lanes {
    lanes: Vec<Lane>,
    /// The marker after the last call that uploaded shared constants on a
    /// lane: calls on other lanes wait for it while it runs.
    constants_ready: Option<Event>,
    calls: u64,
    /// Every call waits for the runtime's queue, as before session 11
    /// (`TCC_LANE_RUNTIME_WAIT=always`, to measure the difference).
    always_wait: bool,
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes {
            lanes: Vec::new(),
            constants_ready: None,
            calls: 0,
            always_wait: std::env::var("TCC_LANE_RUNTIME_WAIT").is_ok_and(|v| v == "always"),
        }
    }
}

impl Lanes {
    /// The lane for the next call when `count` lanes may be used: one
    /// whose kernels are done, else a new one while fewer than `count`
    /// exist, else the one used longest ago. `None` when `count` is 0.
    pub(crate) fn pick(&mut self, rt: &RuntimeInner, count: usize) -> Result<Option<usize>> {
        if count == 0 {
            return Ok(None);
        }
        let usable = self.lanes.len().min(count);
        let idle = (0..usable).find(|&i| !self.lanes[i].last.as_ref().is_some_and(is_running));
        let lane = match idle {
            Some(i) => i,
            None if usable < count => {
                self.lanes.push(Lane {
                    queue: Arc::new(crate::create_queue(&rt.context, rt.profiling)?),
                    used: false,
                    last: None,
                    last_use: 0,
                    runtime_fence: true,
                });
                self.lanes.len() - 1
            }
            None => (0..usable)
                .min_by_key(|&i| self.lanes[i].last_use)
                .unwrap_or(0),
        };
        self.calls += 1;
        let l = &mut self.lanes[lane];
        l.last_use = self.calls;
        l.used = true;
        Ok(Some(lane))
    }

    pub(crate) fn queue(&self, lane: usize) -> Option<&Arc<CommandQueue>> {
        self.lanes.get(lane).map(|l| &l.queue)
    }

    /// Lanes created so far.
    pub(crate) fn len(&self) -> usize {
        self.lanes.len()
    }

    /// The event a call on a lane must wait for besides its uploads and
    /// the runtime's queue: the last shared-constant upload, while it runs.
    pub(crate) fn constants_event(&mut self) -> Result<Option<Event>> {
        if self
            .constants_ready
            .as_ref()
            .is_some_and(|e| !is_running(e))
        {
            self.constants_ready = None;
        }
        self.constants_ready.as_ref().map(retained).transpose()
    }

    /// Records a call enqueued on `lane` whose kernels end at `computed`;
    /// `uploaded_constants`: it uploaded constants other lanes share.
    pub(crate) fn submitted(
        &mut self,
        lane: usize,
        computed: &Event,
        uploaded_constants: bool,
    ) -> Result<()> {
        if uploaded_constants {
            self.constants_ready = Some(retained(computed)?);
        }
        if let Some(l) = self.lanes.get_mut(lane) {
            l.last = Some(retained(computed)?);
        }
        Ok(())
    }

    /// Makes the runtime's queue wait (on the device) for every lane used
    /// since the last join; called before the session puts work there, so
    /// each lane's next call waits for the runtime's queue in turn.
    pub(crate) fn join(&mut self, rt: &RuntimeInner) -> Result<()> {
        for l in &mut self.lanes {
            if l.used {
                wait_for_queue(&l.queue, &rt.queue)?;
                l.used = false;
            }
            l.runtime_fence = true;
        }
        Ok(())
    }

    /// Whether the next call on `lane` must wait for the runtime's queue
    /// because of the session's own work there (`join`); cleared.
    pub(crate) fn take_runtime_fence(&mut self, lane: usize) -> bool {
        let needed = self
            .lanes
            .get_mut(lane)
            .is_some_and(|l| std::mem::take(&mut l.runtime_fence));
        needed || self.always_wait
    }

    /// Waits on the host for every lane.
    pub(crate) fn finish(&mut self) {
        for l in &mut self.lanes {
            let _ = l.queue.finish();
            l.last = None;
        }
        self.constants_ready = None;
    }
}
