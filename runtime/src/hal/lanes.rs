//! Asynchronous calls for any driver: [`Lanes`] keeps several sessions of
//! one model on one device, each owned by a worker thread, and hands each
//! submitted call to the lane with the fewest calls queued. The caller
//! gets a [`Pending`] at once and waits on it when it wants the outputs.
//!
//! Why threads: a driver session runs one call at a time and blocks until
//! its outputs are on the host. With one session per lane, each on its
//! own queue (CUDA: its own stream), up to `lanes` calls are on the
//! device at once, the upload of one overlapping the kernels of another.
//! A CUDA session opened on a device whose runtime already holds the
//! model's module takes it from the runtime's module cache, so extra
//! lanes cost their memory (arena, constants) and no second PTX compile.
//!
//! Staged calls ([`Lanes::submit_staged`], what [`Lanes::run`] and
//! [`super::Group`] use): the inputs are copied into host memory of the
//! driver's choosing ([`Device::staging`]; CUDA's is page-locked, so the
//! upload is DMA queued on the lane's stream instead of a copy the driver
//! stages and waits for), kept by the lanes after the call for the next
//! staged call of the same types: the staging memory is allocated once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::{Device, DriverSession};
use crate::async_call::InputView;
use crate::error::{Error, Result};
use crate::tensor::HostTensor;
use crate::{KernelProfile, Model};

/// A call handed to a lane: the function, its inputs, and where its
/// result goes.
struct Job {
    function: String,
    inputs: Vec<HostTensor>,
    reply: mpsc::SyncSender<Done>,
    /// Where the inputs go once the call is done (staged calls), rather
    /// than back with the outputs.
    spares: Option<Spares>,
}

/// Staged inputs of finished calls, for the next staged calls to copy
/// into (see the module documentation).
type Spares = Arc<Mutex<Vec<Vec<HostTensor>>>>;

/// The most sets of staged inputs kept.
const MAX_SPARES: usize = 16;

/// A finished call: its outputs (or error), and its inputs back, whose
/// memory a split call reuses for its next parts.
type Done = (Result<Vec<HostTensor>>, Vec<HostTensor>);

/// Work run on a lane's session itself ([`Lanes::with_session`]).
type SessionJob<S> = Box<dyn FnOnce(&mut S) + Send>;

/// What a worker is asked to do.
enum Request<S> {
    Call(Job),
    /// Anything else on the session (a call on device tensors).
    With(SessionJob<S>),
    /// Outputs of earlier calls to write later outputs into.
    Recycle(Vec<HostTensor>),
    /// The lane's kernel profile (and reset it, when `true`).
    Profile(bool, mpsc::SyncSender<Result<Vec<KernelProfile>>>),
}

struct Lane<S> {
    requests: Option<mpsc::Sender<Request<S>>>,
    /// Calls queued on this lane and not yet finished.
    queued: Arc<AtomicUsize>,
    worker: Option<JoinHandle<()>>,
}

/// Several sessions of one model on one device, for calls in flight at
/// once (see the module documentation).
pub struct Lanes<D: Device> {
    device: D,
    model: Model,
    lanes: Vec<Lane<D::Session>>,
    /// Where the choice of lane starts looking next.
    next: usize,
    /// Staging memory of finished staged calls.
    spares: Spares,
}

/// A call submitted to [`Lanes`] (or a [`super::Group`]); [`Pending::wait`]
/// gives its outputs. Dropping it without waiting lets the call finish
/// on its lane and throws the outputs away.
pub struct Pending {
    reply: mpsc::Receiver<Done>,
    /// The result, once `is_done` has taken it from the lane.
    ready: Option<Done>,
    function: String,
    device: usize,
    summary: String,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("function", &self.function)
            .field("device", &self.device)
            .finish()
    }
}

impl Pending {
    /// Which device of a group ran the call (0 on [`Lanes`] of their own).
    pub fn device(&self) -> usize {
        self.device
    }

    /// Waits for the call; its outputs or its error (naming the device).
    pub fn wait(self) -> Result<Vec<HostTensor>> {
        self.wait_keeping_inputs().0
    }

    /// Like `wait`, with the call's inputs given back (empty when the lane
    /// stopped).
    pub(super) fn wait_keeping_inputs(mut self) -> Done {
        let received = match self.ready.take() {
            Some(done) => Ok(done),
            None => self.reply.recv(),
        };
        match received {
            Ok((result, inputs)) => (
                result.map_err(|e| super::on_device(&self.summary, e)),
                inputs,
            ),
            Err(_) => (
                Err(Error::Execution {
                    function: self.function,
                    message: format!(
                        "on device {}: the lane running the call stopped (its thread panicked)",
                        self.summary
                    ),
                }),
                Vec::new(),
            ),
        }
    }

    /// Whether the call has finished (`wait` would not block).
    pub fn is_done(&mut self) -> bool {
        if self.ready.is_some() {
            return true;
        }
        match self.reply.try_recv() {
            Ok(result) => {
                self.ready = Some(result);
                true
            }
            Err(mpsc::TryRecvError::Empty) => false,
            Err(mpsc::TryRecvError::Disconnected) => true,
        }
    }

    pub(super) fn with_device(mut self, device: usize) -> Self {
        self.device = device;
        self
    }
}

impl<D: Device> Lanes<D> {
    /// Opens `lanes` (at least 1) sessions of `model` on `device`.
    pub fn new(device: &D, model: &Model, lanes: usize) -> Result<Self> {
        if lanes == 0 {
            return Err(Error::InvalidInput(
                "the number of calls in flight must be at least 1".into(),
            ));
        }
        let mut out = Lanes {
            device: device.clone(),
            model: model.clone(),
            lanes: Vec::with_capacity(lanes),
            next: 0,
            spares: Arc::default(),
        };
        for i in 0..lanes {
            let session = device.open(model)?;
            out.lanes.push(spawn(session, i)?);
        }
        Ok(out)
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// How many calls can be in flight at once.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Calls submitted and not yet finished, over all lanes.
    pub fn calls_running(&self) -> usize {
        self.lanes
            .iter()
            .map(|l| l.queued.load(Ordering::SeqCst))
            .sum()
    }

    /// Starts `function` on `inputs` on the least busy lane (checked
    /// against the signature here, so a bad input fails at once).
    pub fn submit(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<Pending> {
        self.submit_job(function, inputs, None)
    }

    /// Starts `function` on a copy of `inputs` in this device's staging
    /// memory (see the module documentation); the caller's tensors are
    /// free again when this returns.
    pub fn submit_staged(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Pending> {
        let views: Vec<InputView<'_>> = inputs
            .iter()
            .map(|t| InputView {
                dtype: t.dtype,
                shape: t.shape.clone(),
                bytes: &t.bytes,
            })
            .collect();
        self.submit_views(function, &views)
    }

    /// Like `submit_staged`, on views (a split call's part of a batch,
    /// copied straight from the caller's batch into staging memory).
    pub(crate) fn submit_views(
        &mut self,
        function: &str,
        inputs: &[InputView<'_>],
    ) -> Result<Pending> {
        // Checked before anything is staged.
        self.model
            .function(function)?
            .check_input_types(inputs.iter().map(|v| (v.dtype, v.shape.as_slice())), &[])?;
        let spare = {
            let mut spares = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
            let fits = |s: &Vec<HostTensor>| {
                s.len() == inputs.len()
                    && s.iter()
                        .zip(inputs)
                        .all(|(t, v)| t.dtype == v.dtype && t.shape == v.shape)
            };
            spares.iter().position(fits).map(|i| spares.swap_remove(i))
        };
        let staged = match spare {
            Some(mut spare) => {
                for (t, v) in spare.iter_mut().zip(inputs) {
                    t.bytes.copy_from_slice(v.bytes);
                }
                spare
            }
            None => inputs
                .iter()
                .map(|v| {
                    let mut bytes = self.device.staging(v.bytes.len());
                    bytes.copy_from_slice(v.bytes);
                    HostTensor::from_bytes(v.dtype, v.shape.clone(), bytes)
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let spares = self.spares.clone();
        self.submit_job(function, staged, Some(spares))
    }

    fn submit_job(
        &mut self,
        function: &str,
        inputs: Vec<HostTensor>,
        spares: Option<Spares>,
    ) -> Result<Pending> {
        self.model.function(function)?.check_inputs(&inputs, &[])?;
        let lanes = &self.lanes;
        let best = super::shared::least_busy(&mut self.next, lanes.len(), |i| {
            lanes[i].queued.load(Ordering::SeqCst)
        });
        let lane = &self.lanes[best];
        let (reply, receive) = mpsc::sync_channel(1);
        lane.queued.fetch_add(1, Ordering::SeqCst);
        let job = Job {
            function: function.to_string(),
            inputs,
            reply,
            spares,
        };
        let sent = lane
            .requests
            .as_ref()
            .map(|r| r.send(Request::Call(job)).is_ok())
            .unwrap_or(false);
        if !sent {
            lane.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::Execution {
                function: function.to_string(),
                message: format!(
                    "on device {}: lane {best} stopped (its thread panicked)",
                    self.device.summary()
                ),
            });
        }
        Ok(Pending {
            reply: receive,
            ready: None,
            function: function.to_string(),
            device: 0,
            summary: self.device.summary(),
        })
    }

    /// A call waited for (its inputs staged).
    pub fn run(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        self.submit_staged(function, inputs)?.wait()
    }

    /// Runs `job` on the session of the least busy lane, after the calls
    /// queued there, and returns what it returns (for what the lanes'
    /// calls on host tensors do not cover: a CUDA session's calls on
    /// device tensors). Blocks until it has run.
    pub fn with_session<R: Send + 'static>(
        &mut self,
        job: impl FnOnce(&mut D::Session) -> R + Send + 'static,
    ) -> Result<R> {
        let lanes = &self.lanes;
        let best = super::shared::least_busy(&mut self.next, lanes.len(), |i| {
            lanes[i].queued.load(Ordering::SeqCst)
        });
        let (reply, receive) = mpsc::sync_channel(1);
        let request = Request::With(Box::new(move |session: &mut D::Session| {
            // The caller may have stopped waiting.
            let _ = reply.send(job(session));
        }));
        let sent = self.lanes[best]
            .requests
            .as_ref()
            .is_some_and(|r| r.send(request).is_ok());
        let stopped = || {
            Error::Unsupported(format!(
                "on device {}: lane {best} stopped (its thread panicked)",
                self.device.summary()
            ))
        };
        if !sent {
            return Err(stopped());
        }
        receive.recv().map_err(|_| stopped())
    }

    /// Sets of staged inputs kept for later staged calls.
    pub fn spare_inputs(&self) -> usize {
        self.spares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Hands outputs back for later calls to write into (to one lane).
    pub fn recycle(&mut self, outputs: Vec<HostTensor>) {
        let i = self.next % self.lanes.len();
        if let Some(r) = &self.lanes[i].requests {
            let _ = r.send(Request::Recycle(outputs));
        }
    }

    /// The per-kernel device time of every lane, summed (profiling
    /// devices only; empty otherwise); `reset` starts it again.
    pub fn kernel_profile(&mut self, reset: bool) -> Result<Vec<KernelProfile>> {
        let mut total: Vec<KernelProfile> = Vec::new();
        for lane in &self.lanes {
            let (reply, receive) = mpsc::sync_channel(1);
            let Some(r) = &lane.requests else { continue };
            if r.send(Request::Profile(reset, reply)).is_err() {
                continue;
            }
            let Ok(profile) = receive.recv() else {
                continue;
            };
            super::shared::add_profiles(&mut total, profile?);
        }
        Ok(total)
    }
}

impl<D: Device> Drop for Lanes<D> {
    fn drop(&mut self) {
        // Closing each lane's queue ends its worker once its calls are done.
        for lane in &mut self.lanes {
            lane.requests = None;
        }
        for lane in &mut self.lanes {
            if let Some(w) = lane.worker.take() {
                let _ = w.join();
            }
        }
    }
}

/// Starts lane `index`'s worker, which owns `session`.
fn spawn<S: DriverSession>(mut session: S, index: usize) -> Result<Lane<S>> {
    let (requests, receive) = mpsc::channel::<Request<S>>();
    let queued = Arc::new(AtomicUsize::new(0));
    let counter = queued.clone();
    let worker = std::thread::Builder::new()
        .name(format!("tcc-lane-{index}"))
        .spawn(move || {
            while let Ok(request) = receive.recv() {
                match request {
                    Request::Call(job) => {
                        let result = session.run_with_sources(&job.function, &job.inputs, &[]);
                        counter.fetch_sub(1, Ordering::SeqCst);
                        // Staged inputs are kept before the reply, so a
                        // caller that waited finds them for its next call.
                        let inputs = match job.spares {
                            Some(spares) => {
                                let mut spares =
                                    spares.lock().unwrap_or_else(PoisonError::into_inner);
                                if spares.len() < MAX_SPARES {
                                    spares.push(job.inputs);
                                }
                                Vec::new()
                            }
                            None => job.inputs,
                        };
                        // The caller may have dropped its handle.
                        let _ = job.reply.send((result, inputs));
                    }
                    Request::With(job) => job(&mut session),
                    Request::Recycle(outputs) => session.recycle(outputs),
                    Request::Profile(reset, reply) => {
                        let profile = session.kernel_profile();
                        let profile = match (profile, reset) {
                            (Ok(p), true) => session.reset_profile().map(|()| p),
                            (p, _) => p,
                        };
                        let _ = reply.send(profile);
                    }
                }
            }
        })
        .map_err(|e| Error::Unsupported(format!("cannot start a lane's thread: {e}")))?;
    Ok(Lane {
        requests: Some(requests),
        queued,
        worker: Some(worker),
    })
}
