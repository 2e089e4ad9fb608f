//! Functions placed on different devices, for any driver: a model too
//! large for one device, or a pipeline, runs each function (or each
//! function of a multi-function artifact) on the device it is placed on
//! ([`Placement`]), and the values between them stay in device memory,
//! copied from device to device where the next function runs elsewhere.
//!
//! What a copy between two devices is depends on the driver
//! ([`DriverSession::take_value`]):
//! - CUDA: device to device, `cuMemcpyPeerAsync` between the two primary
//!   contexts, with peer access enabled first where the devices can reach
//!   each other (NVLink or PCIe peer to peer; else the driver stages the
//!   copy itself) ([`Hop::DeviceToDevice`]);
//! - OpenCL: each device has a context of its own, and OpenCL has no copy
//!   between contexts (nor do PoCL or NVIDIA's OpenCL offer a peer
//!   extension): the value is read to the host and written to the other
//!   device ([`Hop::ThroughHost`]);
//! - Vulkan: a session's values are host tensors (its calls copy through
//!   host-visible buffers anyway), so a value moves as a host tensor.
//!
//! A device only loads what its functions use: sessions upload a
//! constant on its first use, so the weights of a function placed on
//! device 1 never reach device 0.

use super::{Device, DriverSession, on_device};
use crate::cuda::{CudaSession, CudaTensor};
use crate::drivers::vulkan::VulkanSession;
use crate::error::{Error, Result};
use crate::tensor::HostTensor;
use crate::{DeviceTensor, Model, Session};

/// A value between placed functions, where it lives.
#[derive(Debug)]
pub enum Value {
    /// In host memory (an input, or a value of a driver whose calls take
    /// host tensors: Vulkan).
    Host(HostTensor),
    /// In an OpenCL device's memory.
    OpenCl(DeviceTensor),
    /// In a CUDA device's memory.
    Cuda(CudaTensor),
}

impl Value {
    /// `1000xf32`.
    pub fn type_string(&self) -> String {
        match self {
            Value::Host(t) => t.type_string(),
            Value::OpenCl(t) => t.type_string(),
            Value::Cuda(t) => t.type_string(),
        }
    }

    pub fn byte_size(&self) -> usize {
        match self {
            Value::Host(t) => t.bytes.len(),
            Value::OpenCl(t) => t.byte_size(),
            Value::Cuda(t) => t.byte_size(),
        }
    }

    /// The value in host memory (a device's copy is read back).
    pub fn into_host(self) -> Result<HostTensor> {
        match self {
            Value::Host(t) => Ok(t),
            Value::OpenCl(t) => t.to_host(),
            Value::Cuda(t) => t.to_host(),
        }
    }
}

/// How a value reached the device of the function that takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// It was there already (the previous function ran on this device).
    Stayed,
    /// From host memory (a caller's input).
    Uploaded,
    /// From another device's memory, device to device; `peer`: over peer
    /// access (CUDA's `cuCtxEnablePeerAccess` pair), else staged by the
    /// driver.
    DeviceToDevice { peer: bool },
    /// From another device's memory through the host (the driver has no
    /// copy between the two devices).
    ThroughHost,
}

/// The copies a [`Placement`] made between devices since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlacementCopies {
    /// Values copied device to device ([`Hop::DeviceToDevice`]) ...
    pub device_to_device: u64,
    /// ... of which over peer access.
    pub peer: u64,
    /// Values that went through the host between two devices.
    pub through_host: u64,
    /// Bytes of the values of both kinds.
    pub bytes: u64,
}

/// The default of [`DriverSession::take_value`] for drivers whose calls
/// take host tensors: the value in host memory.
pub(crate) fn host_value(value: Value) -> Result<(Value, Hop)> {
    let hop = match value {
        Value::Host(_) => Hop::Uploaded,
        _ => Hop::ThroughHost,
    };
    Ok((Value::Host(value.into_host()?), hop))
}

/// The default of [`DriverSession::run_values`]: a call on host tensors.
pub(crate) fn run_on_host(
    session: &mut impl DriverSession,
    function: &str,
    inputs: Vec<Value>,
) -> Result<Vec<Value>> {
    let inputs = inputs
        .into_iter()
        .map(Value::into_host)
        .collect::<Result<Vec<_>>>()?;
    Ok(session
        .run_with_sources(function, &inputs, &[])?
        .into_iter()
        .map(Value::Host)
        .collect())
}

impl Session {
    /// `value` in this session's device memory (see
    /// [`DriverSession::take_value`]).
    pub(crate) fn take(&mut self, value: Value) -> Result<(Value, Hop)> {
        Ok(match value {
            Value::OpenCl(t) if self.holds(&t) => (Value::OpenCl(t), Hop::Stayed),
            Value::Host(h) => (Value::OpenCl(self.upload(&h)?), Hop::Uploaded),
            other => {
                let h = other.into_host()?;
                (Value::OpenCl(self.upload(&h)?), Hop::ThroughHost)
            }
        })
    }

    pub(crate) fn run_taken(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let inputs = inputs
            .into_iter()
            .map(|v| match self.take(v)? {
                (Value::OpenCl(t), _) => Ok(t),
                _ => unreachable!("an OpenCL session takes values into OpenCL memory"),
            })
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&DeviceTensor> = inputs.iter().collect();
        Ok(self
            .run_device(function, &refs)?
            .into_iter()
            .map(Value::OpenCl)
            .collect())
    }
}

impl CudaSession {
    /// `value` in this session's device memory (see
    /// [`DriverSession::take_value`]).
    pub(crate) fn take(&mut self, value: Value) -> Result<(Value, Hop)> {
        let rt = self.runtime().clone();
        Ok(match value {
            Value::Cuda(t) if t.device_ordinal() == rt.device().ordinal => {
                (Value::Cuda(t), Hop::Stayed)
            }
            Value::Cuda(t) => {
                let (copy, peer) = t.copy_to(&rt)?;
                (Value::Cuda(copy), Hop::DeviceToDevice { peer })
            }
            Value::Host(h) => (Value::Cuda(CudaTensor::upload(&rt, &h)?), Hop::Uploaded),
            other => {
                let h = other.into_host()?;
                (Value::Cuda(CudaTensor::upload(&rt, &h)?), Hop::ThroughHost)
            }
        })
    }

    pub(crate) fn run_taken(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let inputs = inputs
            .into_iter()
            .map(|v| match self.take(v)? {
                (Value::Cuda(t), _) => Ok(t),
                _ => unreachable!("a CUDA session takes values into CUDA memory"),
            })
            .collect::<Result<Vec<_>>>()?;
        let io: Vec<_> = inputs.iter().map(CudaTensor::as_input).collect();
        // SAFETY: every input is a live allocation of this device (taken
        // above), owned here until the call has returned; its producing
        // work was waited for (`run_device` and `copy_to` wait).
        let outputs = unsafe { self.run_device(function, &io) }?;
        Ok(outputs.into_iter().map(Value::Cuda).collect())
    }
}

impl VulkanSession {
    pub(crate) fn take(&mut self, value: Value) -> Result<(Value, Hop)> {
        host_value(value)
    }
}

/// Parses a placement, `FUNCTION=DEVICE[,FUNCTION=DEVICE...]` (a function
/// with or without its `@`, a device as its position among the devices
/// given, from 0), as the tools' `--placement`, the C API and Python take
/// it.
pub fn parse_placement(text: &str) -> Result<Vec<(String, usize)>> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (function, device) = part.split_once('=').ok_or_else(|| {
            Error::InvalidInput(format!(
                "placement `{part}`: expected FUNCTION=DEVICE (e.g. encoder=0,decoder=1)"
            ))
        })?;
        let function = function.trim().trim_start_matches('@').to_string();
        let device = device.trim().parse::<usize>().map_err(|_| {
            Error::InvalidInput(format!(
                "placement `{part}`: the device is its position among the devices given (0, 1, ...), not `{}`",
                device.trim()
            ))
        })?;
        if function.is_empty() {
            return Err(Error::InvalidInput(format!(
                "placement `{part}`: the function name is empty"
            )));
        }
        out.push((function, device));
    }
    if out.is_empty() {
        return Err(Error::InvalidInput(
            "the placement is empty: expected FUNCTION=DEVICE[,FUNCTION=DEVICE...]".into(),
        ));
    }
    Ok(out)
}

/// One model's functions placed on several devices of a driver (see the
/// module documentation).
pub struct Placement<D: Device> {
    devices: Vec<D>,
    /// The model's session on each device, opened when a function placed
    /// there first runs (or at once, for the devices named).
    sessions: Vec<Option<D::Session>>,
    model: Model,
    /// Function → device; functions not named run on device 0.
    places: Vec<(String, usize)>,
    copies: PlacementCopies,
}

impl<D: Device> Placement<D> {
    /// Places `model`'s functions on `devices` as `places` says (function
    /// name, position in `devices`); a function not named runs on device
    /// 0. Opens the model on every device named.
    pub fn new(devices: &[D], model: &Model, places: &[(String, usize)]) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::InvalidInput("a placement needs a device".into()));
        }
        let mut resolved: Vec<(String, usize)> = Vec::new();
        for (function, device) in places {
            let name = model.function(function)?.name.clone();
            if *device >= devices.len() {
                return Err(Error::InvalidInput(format!(
                    "placement {name}={device}: there {} {} device{} (0{})",
                    if devices.len() == 1 { "is" } else { "are" },
                    devices.len(),
                    if devices.len() == 1 { "" } else { "s" },
                    if devices.len() == 1 {
                        String::new()
                    } else {
                        format!("..{}", devices.len() - 1)
                    }
                )));
            }
            if let Some((_, d)) = resolved.iter().find(|(n, _)| *n == name) {
                return Err(Error::InvalidInput(format!(
                    "placement: @{name} is placed twice (on devices {d} and {device})"
                )));
            }
            resolved.push((name, *device));
        }
        let mut placement = Placement {
            devices: devices.to_vec(),
            sessions: devices.iter().map(|_| None).collect(),
            model: model.clone(),
            places: resolved,
            copies: PlacementCopies::default(),
        };
        let named: Vec<usize> = placement.places.iter().map(|(_, d)| *d).collect();
        for d in named {
            placement.session(d)?;
        }
        Ok(placement)
    }

    /// The device (position) `function` runs on.
    pub fn device_of(&self, function: &str) -> Result<usize> {
        let name = &self.model.function(function)?.name;
        Ok(self
            .places
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, d)| *d))
    }

    pub fn devices(&self) -> &[D] {
        &self.devices
    }

    /// Whether the model is open on device `i` (a function placed there
    /// has run, or was named).
    pub fn is_open(&self, i: usize) -> bool {
        self.sessions.get(i).is_some_and(Option::is_some)
    }

    /// The copies between devices so far.
    pub fn copies(&self) -> PlacementCopies {
        self.copies
    }

    fn session(&mut self, i: usize) -> Result<&mut D::Session> {
        if self.sessions[i].is_none() {
            let device = &self.devices[i];
            let s = device.open(&self.model).map_err(|e| match e {
                Error::InvalidInput(m) => {
                    Error::InvalidInput(format!("on device {}: {m}", device.summary()))
                }
                e => e,
            })?;
            device.settle();
            self.sessions[i] = Some(s);
        }
        Ok(self.sessions[i].as_mut().expect("opened above"))
    }

    /// Runs `function` on its device on `inputs` wherever they live; the
    /// outputs stay in that device's memory. Each input not on that device
    /// is copied there first (and counted in [`Placement::copies`]).
    pub fn run_values(&mut self, function: &str, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let i = self.device_of(function)?;
        let name = self.model.function(function)?.name.clone();
        let summary = self.devices[i].summary();
        let session = self.session(i)?;
        let mut taken = Vec::with_capacity(inputs.len());
        let mut copies = PlacementCopies::default();
        for v in inputs {
            let bytes = v.byte_size() as u64;
            let (v, hop) = session.take_value(v).map_err(|e| {
                on_device(
                    &summary,
                    match e {
                        Error::Execution { message, .. } => Error::Execution {
                            function: name.clone(),
                            message: format!("copying an input: {message}"),
                        },
                        e => e,
                    },
                )
            })?;
            match hop {
                Hop::DeviceToDevice { peer } => {
                    copies.device_to_device += 1;
                    copies.peer += u64::from(peer);
                    copies.bytes += bytes;
                }
                Hop::ThroughHost => {
                    copies.through_host += 1;
                    copies.bytes += bytes;
                }
                Hop::Stayed | Hop::Uploaded => {}
            }
            taken.push(v);
        }
        let outputs = session
            .run_values(&name, taken)
            .map_err(|e| on_device(&summary, e))?;
        self.copies.device_to_device += copies.device_to_device;
        self.copies.peer += copies.peer;
        self.copies.through_host += copies.through_host;
        self.copies.bytes += copies.bytes;
        Ok(outputs)
    }

    /// Runs `function` on host inputs on its device; the outputs come
    /// back to the host.
    pub fn run(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        let values = inputs.iter().cloned().map(Value::Host).collect();
        self.run_values(function, values)?
            .into_iter()
            .map(Value::into_host)
            .collect()
    }

    /// Runs `functions` in order, each on its device, the outputs of one
    /// the inputs of the next (kept in device memory, copied between
    /// devices where two functions run on different ones); returns the
    /// last function's outputs in host memory. The chain is checked
    /// before anything runs: each function takes as many inputs, of the
    /// same element types, as the one before gives.
    pub fn run_pipeline(
        &mut self,
        functions: &[&str],
        inputs: &[HostTensor],
    ) -> Result<Vec<HostTensor>> {
        let Some(first) = functions.first() else {
            return Err(Error::InvalidInput(
                "a pipeline needs at least one function".into(),
            ));
        };
        check_chain(&self.model, functions)?;
        let mut values: Vec<Value> = inputs.iter().cloned().map(Value::Host).collect();
        values = self.run_values(first, values)?;
        for f in &functions[1..] {
            values = self.run_values(f, values)?;
        }
        values.into_iter().map(Value::into_host).collect()
    }
}

/// Each of `functions` takes what the one before it gives: as many
/// values, of the same element types and shapes.
fn check_chain(model: &Model, functions: &[&str]) -> Result<()> {
    for pair in functions.windows(2) {
        let (a, b) = (model.function(pair[0])?, model.function(pair[1])?);
        if a.outputs.len() != b.inputs.len() {
            return Err(Error::InvalidInput(format!(
                "pipeline: @{} takes {} input(s) but @{} before it gives {} output(s)",
                b.name,
                b.inputs.len(),
                a.name,
                a.outputs.len()
            )));
        }
        for (k, (o, i)) in a.outputs.iter().zip(&b.inputs).enumerate() {
            if o.dtype != i.dtype || o.shape != i.shape {
                return Err(Error::InvalidInput(format!(
                    "pipeline: input {k} of @{} is {} but output {k} of @{} before it is {}",
                    b.name,
                    i.type_string(),
                    a.name,
                    o.type_string()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse_placement("enc=0, @dec=1").unwrap(),
            [("enc".to_string(), 0), ("dec".to_string(), 1)]
        );
        for (bad, says) in [
            ("enc", "FUNCTION=DEVICE"),
            ("enc=gpu1", "position among the devices"),
            ("=1", "name is empty"),
            ("", "empty"),
            ("a=-1", "position"),
        ] {
            let e = parse_placement(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
