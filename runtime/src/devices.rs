//! Several devices at once: device lists (`--device=all`, `--device=0,1`),
//! CPU device fission (`--cpu-partition=N`, `clCreateSubDevices`), and a
//! model served on a group of devices, either call by call (round robin:
//! each call goes to the device with the fewest calls in flight) or with a
//! batch split across them (data parallel).
//!
//! Each device of a [`DeviceGroup`] has a [`Runtime`] of its own: its own
//! context, queues, buffer pool, program cache (in memory; the disk cache
//! is shared) and, per model, a session holding its own copy of the
//! weights. A failure on one device (a failed launch, an allocation) fails
//! the call that was on it, and nothing else.
//!
//! **Data parallel calls** ([`GroupSession::run_split`]). An artifact has
//! static shapes, so it is compiled for the *per-device* batch (for
//! example `tcc compile --input-shape=x=8x3x224x224` for batch 32 on four
//! devices). The caller passes the whole batch; the batch axis is axis 0.
//! Each input either has exactly the artifact's shape (it is passed whole
//! to every part, like a weight given as an input) or the artifact's shape
//! with axis 0 multiplied by some `k` (it is split into `k` parts along
//! axis 0). Every split input must have the same `k`. The `k` parts run
//! as `k` calls, part `j` on device `j mod n`, all in flight at once, and
//! each output is the `k` parts' outputs concatenated along axis 0 (so
//! every output must have rank 1 or more when `k > 1`). `k` may exceed the
//! number of devices (batch 64 on two devices with a batch-8 artifact is 8
//! calls, 4 per device, pipelined by each device's session). Each device's
//! parts are submitted from a thread of its own, as views of the caller's
//! batch (`split`: nothing is cut out or copied first), so the devices
//! start together. The outputs
//! are bit-identical to running the parts one after another on one device,
//! when the devices run the same kernels (same driver and device type).
//!
//! **Device fission** ([`partition_device`]). `clCreateSubDevices` with
//! `CL_DEVICE_PARTITION_EQUALLY` splits a CPU device into parts of equal
//! compute units; each part gets its own runtime (and so its own worker
//! threads in PoCL), so two models served at once no longer share (and
//! fight over) every core.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use opencl3::device::{CL_DEVICE_PARTITION_EQUALLY, cl_device_partition_property};

pub(crate) mod split;

pub use split::SplitPlan;
use split::{concat_parts, split_views};

use crate::async_call::CallHandle;
use crate::device::{DeviceInfo, DeviceSelector, list_devices};
use crate::error::{Error, Result};
use crate::tensor::HostTensor;
use crate::{DeviceKind, Model, Runtime, RuntimeOptions, Session};

/// Which devices: one, all, or a list (`--device=`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceList {
    /// One device (the usual `--device=N|NAME`, or the default).
    One(DeviceSelector),
    /// Every device the platforms list.
    All,
    /// Several, each an index or a name (`--device=0,1`).
    Several(Vec<DeviceSelector>),
}

impl DeviceList {
    /// `all`, a comma-separated list, or one selector.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(DeviceList::All);
        }
        if !text.contains(',') {
            return Ok(DeviceList::One(DeviceSelector::parse(text)));
        }
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(Error::InvalidInput(format!(
                "--device={text}: an empty entry in the list (expected e.g. 0,1)"
            )));
        }
        Ok(DeviceList::Several(
            parts.into_iter().map(DeviceSelector::parse).collect(),
        ))
    }

    /// The `--device` flag if given, else `TCC_DEVICE`, else the default.
    pub fn from_flag_or_env(flag: Option<&str>) -> Result<Self> {
        match flag {
            Some(f) => Self::parse(f),
            None => match std::env::var(crate::device::DEVICE_ENV) {
                Ok(v) => Self::parse(&v),
                Err(_) => Ok(DeviceList::One(DeviceSelector::Default)),
            },
        }
    }

    /// Whether this names more than one device (or may: `all`).
    pub fn is_several(&self) -> bool {
        !matches!(self, DeviceList::One(_))
    }

    /// The devices, from `devices` (as [`list_devices`] returns them). A
    /// device named twice is an error.
    pub fn resolve(&self, devices: &[DeviceInfo]) -> Result<Vec<DeviceInfo>> {
        let chosen = match self {
            DeviceList::One(s) => vec![s.select(devices)?],
            DeviceList::All => devices.to_vec(),
            DeviceList::Several(list) => list
                .iter()
                .map(|s| s.select(devices))
                .collect::<Result<Vec<_>>>()?,
        };
        for (i, d) in chosen.iter().enumerate() {
            if chosen[..i].iter().any(|e| e.index == d.index) {
                return Err(Error::InvalidInput(format!(
                    "device {} is named twice in the device list",
                    d.summary()
                )));
            }
        }
        Ok(chosen)
    }
}

/// Sub-devices made so far, by parent device (its `cl_device_id`) and
/// part count, never released. PoCL 3.1 frees a sub-device on its last
/// `clReleaseDevice` even while its pthread driver threads are still
/// finishing the last commands of a context on it: a driver thread
/// signals a command's completion and only then releases the command's
/// event, and that release reads the event's queue's device. A runtime
/// dropped right after its last wait (the device released with it) then
/// crashed a driver thread in `POclReleaseEvent` (SIGSEGV;
/// `tests/multi_device.rs` in a loop with `RUST_TEST_THREADS=8`: 3 of 30
/// runs, 0 of 30 with the sub-devices kept).
fn kept_sub_devices() -> &'static Mutex<KeptSubDevices> {
    static KEPT: OnceLock<Mutex<KeptSubDevices>> = OnceLock::new();
    KEPT.get_or_init(Mutex::default)
}

/// The parts of each partitioned device, by its `cl_device_id` (as an
/// address) and part count.
type KeptSubDevices = HashMap<(usize, usize), Vec<DeviceInfo>>;

/// Splits `device` into `parts` sub-devices of equal compute units
/// (`clCreateSubDevices`, `CL_DEVICE_PARTITION_EQUALLY`). `parts == 1`
/// returns the device itself. Errors: `parts == 0`, more parts than
/// compute units, or a driver that cannot partition the device.
///
/// The sub-devices are made once per device and part count and kept for
/// the life of the process (a later call returns the same parts), as root
/// devices are (see `kept_sub_devices` for why).
pub fn partition_device(device: &DeviceInfo, parts: usize) -> Result<Vec<DeviceInfo>> {
    if parts == 0 {
        return Err(Error::InvalidInput(
            "a device cannot be split into 0 parts".into(),
        ));
    }
    if parts == 1 {
        return Ok(vec![device.clone()]);
    }
    let units = device.compute_units as usize;
    if parts > units {
        return Err(Error::InvalidInput(format!(
            "cannot split {} into {parts} parts: it has {units} compute units",
            device.summary()
        )));
    }
    let mut kept = kept_sub_devices()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let key = (device.device.id() as usize, parts);
    if let Some(infos) = kept.get(&key) {
        return Ok(infos.clone());
    }
    let per_part = (units / parts) as cl_device_partition_property;
    let props = [CL_DEVICE_PARTITION_EQUALLY, per_part, 0];
    let subs = device
        .device
        .create_sub_devices(&props)
        .map_err(|e| Error::cl(format!("clCreateSubDevices on {}", device.summary()), e))?;
    let mut infos = Vec::with_capacity(parts);
    for sub in subs.into_iter().take(parts) {
        let id = sub.id();
        let sub = Arc::new(sub);
        let mut info = DeviceInfo::query(
            device.index,
            &device.platform_name,
            &device.platform_version,
            opencl3::device::Device::new(id),
        )?;
        info.sub_device = Some(sub);
        infos.push(info);
    }
    if infos.len() == parts {
        kept.insert(key, infos.clone());
    }
    if infos.len() < parts {
        return Err(Error::Unsupported(format!(
            "{} gave {} parts, not {parts}",
            device.summary(),
            infos.len()
        )));
    }
    Ok(infos)
}

/// A runtime on each of several devices.
#[derive(Clone)]
pub struct DeviceGroup {
    runtimes: Vec<Runtime>,
}

impl DeviceGroup {
    /// A runtime per device, each with `options`.
    pub fn new(devices: Vec<DeviceInfo>, options: RuntimeOptions) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::InvalidInput("a device group needs a device".into()));
        }
        let runtimes = devices
            .into_iter()
            .map(|d| Runtime::on_device(d, options.clone()))
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceGroup { runtimes })
    }

    /// The devices `list` names; with `cpu_partition > 1` every CPU device
    /// among them is split into that many parts (other devices are kept
    /// whole).
    pub fn open(list: &DeviceList, cpu_partition: usize, options: RuntimeOptions) -> Result<Self> {
        let devices = list.resolve(&list_devices()?)?;
        let mut chosen = Vec::new();
        for d in devices {
            if cpu_partition > 1 && d.kind == DeviceKind::Cpu {
                chosen.extend(partition_device(&d, cpu_partition)?);
            } else if cpu_partition == 0 {
                return Err(Error::InvalidInput(
                    "--cpu-partition must be at least 1".into(),
                ));
            } else {
                chosen.push(d);
            }
        }
        Self::new(chosen, options)
    }

    /// A group of existing runtimes (at least one).
    pub fn from_runtimes(runtimes: Vec<Runtime>) -> Result<Self> {
        if runtimes.is_empty() {
            return Err(Error::InvalidInput("a device group needs a device".into()));
        }
        Ok(DeviceGroup { runtimes })
    }

    pub fn runtimes(&self) -> &[Runtime] {
        &self.runtimes
    }

    pub fn len(&self) -> usize {
        self.runtimes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runtimes.is_empty()
    }

    /// A session of `model` on every device. They are created one after
    /// another, and each runtime's deferred program cache entry is written
    /// before the next device builds: on PoCL the first build keeps the
    /// entry's lock until then, and identical devices share the entry (the
    /// next ones load it instead of compiling).
    pub fn session(&self, model: &Model) -> Result<GroupSession> {
        let mut sessions = Vec::with_capacity(self.runtimes.len());
        for rt in &self.runtimes {
            let s = rt.session(model).map_err(|e| on_device(rt, e))?;
            rt.wait_for_cache_writes();
            sessions.push(s);
        }
        Ok(GroupSession {
            sessions,
            next: 0,
            last_split: Vec::new(),
        })
    }
}

fn on_device(rt: &Runtime, e: Error) -> Error {
    match e {
        Error::Execution { function, message } => Error::Execution {
            function,
            message: format!("on device {}: {message}", rt.device().summary()),
        },
        e => e,
    }
}

/// One model on every device of a group.
pub struct GroupSession {
    sessions: Vec<Session>,
    /// Where the round robin starts looking next.
    next: usize,
    /// The last split call's part submissions (see
    /// [`GroupSession::last_split_submissions`]).
    last_split: Vec<(Duration, Duration)>,
}

impl GroupSession {
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    pub fn sessions_mut(&mut self) -> &mut [Session] {
        &mut self.sessions
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// When each part of the last split call ([`GroupSession::run_split`])
    /// began and finished being submitted, from the start of that call: how
    /// late the host let each device start (empty before a split call).
    pub fn last_split_submissions(&self) -> &[(Duration, Duration)] {
        &self.last_split
    }

    /// Sets every session's depth (see [`Session::set_max_in_flight`]).
    pub fn set_max_in_flight(&mut self, depth: usize) {
        for s in &mut self.sessions {
            s.set_max_in_flight(depth);
        }
    }

    /// Gives every session a compute queue of its own (see
    /// [`Session::set_own_queue`]).
    pub fn set_own_queue(&mut self, own: bool) -> Result<()> {
        for s in &mut self.sessions {
            s.set_own_queue(own)?;
        }
        Ok(())
    }

    /// Sets every session's compute queues (see
    /// [`Session::set_compute_queues`]).
    pub fn set_compute_queues(&mut self, queues: crate::ComputeQueues) -> Result<()> {
        for s in &mut self.sessions {
            s.set_compute_queues(queues)?;
        }
        Ok(())
    }

    /// The device for the next whole call: the one with the fewest calls
    /// in flight, the first such after the previous choice.
    fn pick(&mut self) -> usize {
        let sessions = &mut self.sessions;
        let n = sessions.len();
        // `calls_running` takes `&mut` (it reaps finished calls).
        let loads: Vec<usize> = sessions.iter_mut().map(|s| s.calls_running()).collect();
        crate::hal::shared::least_busy(&mut self.next, n, |i| loads[i])
    }

    /// Starts a whole call on the least busy device (round robin among
    /// equals). [`CallHandle::device`] says which one took it.
    pub fn submit(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<CallHandle> {
        let i = self.pick();
        let rt = self.sessions[i].runtime().clone();
        self.sessions[i]
            .submit(function, inputs)
            .map_err(|e| on_device(&rt, e))
    }

    /// Like [`GroupSession::submit`] with borrowed inputs.
    pub fn submit_ref(&mut self, function: &str, inputs: &[HostTensor]) -> Result<CallHandle> {
        let i = self.pick();
        let rt = self.sessions[i].runtime().clone();
        self.sessions[i]
            .submit_ref(function, inputs)
            .map_err(|e| on_device(&rt, e))
    }

    /// A whole call on the least busy device, waited for.
    pub fn run(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        self.submit_ref(function, inputs)?.wait()
    }

    /// Runs `function` on a batch split across the devices (see the module
    /// documentation for the rules). Inputs with exactly the artifact's
    /// types make one call on one device.
    pub fn run_split(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        let model = self.sessions[0].model().clone();
        let f = model.function(function)?;
        let plan = SplitPlan::new(f, inputs.iter().map(|t| (t.dtype, t.shape.as_slice())))?;
        if plan.parts == 1 {
            return self.run(function, inputs);
        }
        let n = self.sessions.len();
        // Every part is in flight before the first is waited for. Each
        // device's parts are submitted from a thread of its own, so that
        // the devices start together, and nothing is copied before a part
        // is submitted: each part is a view of the caller's batch, uploaded
        // from there (or used in place) asynchronously.
        let started = Instant::now();
        let (split, parts) = (&plan.split, plan.parts);
        let submitted: Vec<Result<Vec<SubmittedPart>>> = std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .sessions
                .iter_mut()
                .enumerate()
                .take(parts)
                .map(|(i, session)| {
                    scope.spawn(move || {
                        (i..parts)
                            .step_by(n)
                            .map(|j| {
                                let begin = started.elapsed();
                                let part = split_views(inputs, split, parts, j);
                                // SAFETY: `inputs` is borrowed for the whole of
                                // `run_split`, and every handle is finished
                                // before it returns: waited there, or dropped
                                // on an error or a panic (a handle's drop
                                // waits for its device work).
                                let h = unsafe { session.submit_views(function, part) }
                                    .map_err(|e| on_device(session.runtime(), e))?;
                                Ok((j, h, (begin, started.elapsed())))
                            })
                            .collect()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| crate::hal::shared::joined(function, w))
                .collect()
        });
        let mut submitted: Vec<SubmittedPart> = submitted
            .into_iter()
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        submitted.sort_by_key(|(j, _, _)| *j);
        self.last_split = submitted.iter().map(|(_, _, t)| *t).collect();
        let mut handles: Vec<CallHandle> = submitted.into_iter().map(|(_, h, _)| h).collect();
        // Dropping the handles after an error waits for the other parts.
        let mut parts_out: Vec<Vec<HostTensor>> = Vec::with_capacity(plan.parts);
        for (j, h) in handles.iter_mut().enumerate() {
            let out = h.wait().map_err(|e| {
                let rt = &self.sessions[j % n];
                match on_device(rt.runtime(), e) {
                    Error::Execution { function, message } => Error::Execution {
                        function,
                        message: format!("part {j} of {}: {message}", plan.parts),
                    },
                    e => e,
                }
            })?;
            parts_out.push(out);
        }
        let outputs = concat_parts(f, &parts_out);
        // The parts' output blocks serve the next split call's parts.
        for (j, p) in parts_out.into_iter().enumerate() {
            self.sessions[j % n].recycle(p);
        }
        outputs
    }
}

/// A submitted part of a split call: its index, its handle, and when its
/// submission began and ended (from the start of the call).
type SubmittedPart = (usize, CallHandle, (Duration, Duration));
