//! The driver-neutral runtime core (as IREE's HAL): what every driver
//! offers, and what is built once on top of that for all of them.
//!
//! A driver is one API that runs an artifact's kernels, in a folder of
//! its own under `drivers/`: OpenCL ([`crate::Runtime`] and
//! [`crate::Session`]; the artifact's OpenCL C, SPIR-V or PTX), NVIDIA's
//! CUDA driver ([`crate::CudaRuntime`] and [`crate::CudaSession`]; the
//! artifact's PTX) and Vulkan ([`crate::VulkanRuntime`] and
//! [`crate::VulkanSession`]; the Shader SPIR-V of `--target=vulkan`).
//! Each implements two small traits:
//!
//! - [`Device`]: one device of the driver, on which models open
//!   ([`Device::open`]); cheap to clone and shared between threads;
//! - [`DriverSession`]: one model on one device, running calls one at a
//!   time on host tensors ([`Calls`]: the call itself, recycled outputs,
//!   the kernel profile and the timeline).
//!
//! On those the core builds, once for every driver:
//!
//! - [`Lanes`]: asynchronous calls: several sessions of one model on one
//!   device, each on a worker thread of its own (on CUDA each session has
//!   a stream of its own, so calls overlap on the device), with
//!   [`Pending`] handles to wait on;
//! - [`Group`]: several devices: whole calls placed round robin on the
//!   least busy device, and the data-parallel split of a batch along axis
//!   0 ([`crate::SplitPlan`]), its parts run on the devices at once and
//!   their outputs concatenated;
//! - [`Placement`]: functions placed on different devices (a model too
//!   large for one device, a pipeline), the values between them kept in
//!   device memory and copied device to device ([`Value`], [`Hop`];
//!   through the host where the driver has no such copy);
//! - [`AnyDevice`] / [`open_devices`]: a device of whichever driver a
//!   tool chose ([`Backend`]), so that `tcc-run` and `tcc-benchmark` open
//!   a driver's devices by one path.
//!
//! The OpenCL driver keeps, beneath this, its own native asynchronous
//! calls on OpenCL queues and events (`Session::submit`, several lanes of
//! arena memory in one session) and its zero-copy split
//! ([`crate::GroupSession`]); the split's plan and the concatenation of
//! its parts are shared with [`Group`] (`devices::split`).

pub(crate) mod callbacks;
mod group;
mod lanes;
mod placement;
pub(crate) mod shared;

pub use group::Group;
pub use lanes::{Lanes, Pending};
pub use placement::{Hop, Placement, PlacementCopies, Value, parse_placement};

use crate::backend::{Backend, Calls};
use crate::cuda::{CudaRuntime, CudaSession};
use crate::drivers::vulkan::{VulkanRuntime, VulkanSession};
use crate::error::{Error, Result};
use crate::{Model, Runtime, Session};

/// One device of a driver, on which sessions of models open.
pub trait Device: Clone + Send + Sync + 'static {
    /// A model loaded on this device.
    type Session: DriverSession;

    /// The driver this device belongs to.
    fn driver(&self) -> Backend;

    /// One line naming the device (and its driver) for messages.
    fn summary(&self) -> String;

    /// Loads `model` here: the driver builds or loads its kernels, and
    /// the session allocates its memory.
    fn open(&self, model: &Model) -> Result<Self::Session>;

    /// `len` zeroed bytes of host memory that calls on this device copy
    /// from fastest, for staged inputs ([`Lanes::submit_staged`]): by
    /// default ordinary page-aligned memory; CUDA's page-locked memory,
    /// which its copies move by DMA without waiting (ordinary memory
    /// where the driver refuses to pin more).
    fn staging(&self, len: usize) -> crate::HostBytes {
        crate::HostBytes::zeroed(len)
    }

    /// Called after a model was opened here, before another device opens
    /// it: OpenCL writes its deferred program cache entries (on PoCL the
    /// first build holds the entry's lock until then, which the next
    /// device's build of the same program would wait for). Nothing by
    /// default.
    fn settle(&self) {}
}

/// One model on one device of a driver: calls one at a time.
pub trait DriverSession: Calls + Send + 'static {
    /// The model this session runs.
    fn model(&self) -> &Model;

    /// `value` brought into this session's device memory, for a call of
    /// [`DriverSession::run_values`], and how it came ([`Hop`]): left
    /// where it is when it is there already, copied device to device
    /// where the driver can (CUDA), else through the host. By default
    /// (drivers whose calls take host tensors) the value in host memory.
    fn take_value(&mut self, value: Value) -> Result<(Value, Hop)> {
        placement::host_value(value)
    }

    /// Runs `function` on values (each taken into this device's memory
    /// first, as [`DriverSession::take_value`]) and leaves its outputs in
    /// device memory. By default a call on host tensors.
    fn run_values(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>>
    where
        Self: Sized,
    {
        placement::run_on_host(self, function, inputs)
    }
}

impl Device for Runtime {
    type Session = Session;

    fn driver(&self) -> Backend {
        Backend::OpenCl
    }

    fn summary(&self) -> String {
        self.device().summary()
    }

    fn open(&self, model: &Model) -> Result<Session> {
        self.session(model)
    }

    fn settle(&self) {
        self.wait_for_cache_writes();
    }
}

impl DriverSession for Session {
    fn model(&self) -> &Model {
        Session::model(self)
    }

    fn take_value(&mut self, value: Value) -> Result<(Value, Hop)> {
        self.take(value)
    }

    fn run_values(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>> {
        self.run_taken(function, inputs)
    }
}

impl Device for CudaRuntime {
    type Session = CudaSession;

    fn driver(&self) -> Backend {
        Backend::Cuda
    }

    fn summary(&self) -> String {
        self.device().summary()
    }

    fn open(&self, model: &Model) -> Result<CudaSession> {
        self.session(model)
    }

    fn staging(&self, len: usize) -> crate::HostBytes {
        self.pinned(len)
            .unwrap_or_else(|_| crate::HostBytes::zeroed(len))
    }
}

impl DriverSession for CudaSession {
    fn model(&self) -> &Model {
        CudaSession::model(self)
    }

    fn take_value(&mut self, value: Value) -> Result<(Value, Hop)> {
        self.take(value)
    }

    fn run_values(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>> {
        self.run_taken(function, inputs)
    }
}

impl Device for VulkanRuntime {
    type Session = VulkanSession;

    fn driver(&self) -> Backend {
        Backend::Vulkan
    }

    fn summary(&self) -> String {
        self.info().summary()
    }

    fn open(&self, model: &Model) -> Result<VulkanSession> {
        self.session(model)
    }
}

impl DriverSession for VulkanSession {
    fn model(&self) -> &Model {
        VulkanSession::model(self)
    }

    fn take_value(&mut self, value: Value) -> Result<(Value, Hop)> {
        self.take(value)
    }
}

/// A device of any driver, for code that chooses the driver at run time
/// (the tools' `--backend`, the C API, Python).
#[derive(Clone)]
pub enum AnyDevice {
    OpenCl(Runtime),
    Cuda(CudaRuntime),
    Vulkan(VulkanRuntime),
}

/// A session of any driver (see [`AnyDevice`]).
pub enum AnySession {
    OpenCl(Box<Session>),
    Cuda(Box<CudaSession>),
    Vulkan(Box<VulkanSession>),
}

impl Device for AnyDevice {
    type Session = AnySession;

    fn driver(&self) -> Backend {
        match self {
            AnyDevice::OpenCl(_) => Backend::OpenCl,
            AnyDevice::Cuda(_) => Backend::Cuda,
            AnyDevice::Vulkan(_) => Backend::Vulkan,
        }
    }

    fn summary(&self) -> String {
        match self {
            AnyDevice::OpenCl(rt) => Device::summary(rt),
            AnyDevice::Cuda(rt) => Device::summary(rt),
            AnyDevice::Vulkan(rt) => Device::summary(rt),
        }
    }

    fn open(&self, model: &Model) -> Result<AnySession> {
        Ok(match self {
            AnyDevice::OpenCl(rt) => AnySession::OpenCl(Box::new(rt.open(model)?)),
            AnyDevice::Cuda(rt) => AnySession::Cuda(Box::new(rt.open(model)?)),
            AnyDevice::Vulkan(rt) => AnySession::Vulkan(Box::new(rt.open(model)?)),
        })
    }

    fn staging(&self, len: usize) -> crate::HostBytes {
        match self {
            AnyDevice::OpenCl(rt) => rt.staging(len),
            AnyDevice::Cuda(rt) => rt.staging(len),
            AnyDevice::Vulkan(rt) => rt.staging(len),
        }
    }

    fn settle(&self) {
        if let AnyDevice::OpenCl(rt) = self {
            rt.wait_for_cache_writes();
        }
    }
}

impl AnySession {
    fn calls(&mut self) -> &mut dyn Calls {
        match self {
            AnySession::OpenCl(s) => s.as_mut(),
            AnySession::Cuda(s) => s.as_mut(),
            AnySession::Vulkan(s) => s.as_mut(),
        }
    }
}

impl Calls for AnySession {
    fn run_with_sources(
        &mut self,
        function: &str,
        inputs: &[crate::HostTensor],
        sources: &[&str],
    ) -> Result<Vec<crate::HostTensor>> {
        self.calls().run_with_sources(function, inputs, sources)
    }

    fn recycle(&mut self, outputs: Vec<crate::HostTensor>) {
        self.calls().recycle(outputs)
    }

    fn kernel_profile(&mut self) -> Result<Vec<crate::KernelProfile>> {
        self.calls().kernel_profile()
    }

    fn reset_profile(&mut self) -> Result<()> {
        self.calls().reset_profile()
    }

    fn wait_for_specializations(&mut self) {
        self.calls().wait_for_specializations()
    }

    fn record_timeline(&mut self, max_calls: usize) -> Result<()> {
        self.calls().record_timeline(max_calls)
    }

    fn take_timeline(&mut self) -> Option<crate::timeline::Timeline> {
        self.calls().take_timeline()
    }
}

impl DriverSession for AnySession {
    fn model(&self) -> &Model {
        match self {
            AnySession::OpenCl(s) => s.model(),
            AnySession::Cuda(s) => s.model(),
            AnySession::Vulkan(s) => s.model(),
        }
    }

    fn take_value(&mut self, value: Value) -> Result<(Value, Hop)> {
        match self {
            AnySession::OpenCl(s) => s.take_value(value),
            AnySession::Cuda(s) => s.take_value(value),
            AnySession::Vulkan(s) => s.take_value(value),
        }
    }

    fn run_values(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>> {
        match self {
            AnySession::OpenCl(s) => s.as_mut().run_values(function, inputs),
            AnySession::Cuda(s) => s.as_mut().run_values(function, inputs),
            AnySession::Vulkan(s) => s.as_mut().run_values(function, inputs),
        }
    }
}

/// The devices named by `ordinals` of the CUDA or Vulkan driver (each
/// once), or every OpenCL device that `list` names, as [`AnyDevice`]s;
/// `profiling` records each kernel's device time.
pub fn open_devices(
    backend: Backend,
    list: &crate::DeviceList,
    ordinals: &[usize],
    profiling: bool,
) -> Result<Vec<AnyDevice>> {
    if backend != Backend::OpenCl {
        let mut seen = Vec::new();
        for &o in ordinals {
            if seen.contains(&o) {
                return Err(Error::InvalidInput(format!(
                    "{} device {o} is named twice",
                    backend.title()
                )));
            }
            seen.push(o);
        }
    }
    match backend {
        Backend::OpenCl => {
            let options = crate::RuntimeOptions {
                profiling,
                ..Default::default()
            };
            let group = crate::DeviceGroup::open(list, 1, options)?;
            Ok(group
                .runtimes()
                .iter()
                .cloned()
                .map(AnyDevice::OpenCl)
                .collect())
        }
        Backend::Cuda => ordinals
            .iter()
            .map(|&o| CudaRuntime::new(o, profiling).map(AnyDevice::Cuda))
            .collect(),
        Backend::Vulkan => ordinals
            .iter()
            .map(|&o| {
                VulkanRuntime::with_device(o)
                    .map(|rt| AnyDevice::Vulkan(rt.with_profiling(profiling)))
            })
            .collect(),
    }
}

/// The error `e` of a call on `device`, saying which device it was.
pub(crate) fn on_device(summary: &str, e: Error) -> Error {
    match e {
        Error::Execution { function, message } => Error::Execution {
            function,
            message: format!("on device {summary}: {message}"),
        },
        e => e,
    }
}
