//! Several devices of one driver for any driver: [`Group`] holds one
//! [`Lanes`] per device (the same model on each) and places whole calls
//! on the least busy device, round robin among equals, or splits a batch
//! along axis 0 across the devices ([`Group::run_split`], the plan of
//! [`SplitPlan`]): every part is in flight before the first is waited
//! for, and the parts' outputs are concatenated in order. Each device's
//! parts are copied from the caller's batch straight into that device's
//! staging memory (CUDA: page-locked, kept for the next call), from a
//! thread of its own, so the devices' copies and uploads run at once.
//!
//! An error of one device's call (its memory exhausted, say) is that
//! call's error, naming the device; the other devices' sessions go on.

use super::shared::{add_profiles, joined, least_busy};
use super::{Device, Lanes, Pending};
use crate::devices::SplitPlan;
use crate::devices::split::{concat_parts, split_views};
use crate::error::{Error, Result};
use crate::tensor::HostTensor;
use crate::{KernelProfile, Model};

/// One model on several devices of a driver (see the module
/// documentation).
pub struct Group<D: Device> {
    devices: Vec<Lanes<D>>,
    /// Where the round robin starts looking next.
    next: usize,
}

impl<D: Device> Group<D> {
    /// Opens `model` on every device of `devices` (at least one), with
    /// `in_flight` calls at once on each.
    pub fn new(devices: &[D], model: &Model, in_flight: usize) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::InvalidInput("a device group needs a device".into()));
        }
        let devices = devices
            .iter()
            .map(|d| {
                Lanes::new(d, model, in_flight).map_err(|e| match e {
                    Error::InvalidInput(m) => {
                        Error::InvalidInput(format!("on device {}: {m}", d.summary()))
                    }
                    e => e,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Group { devices, next: 0 })
    }

    /// Each device's lanes.
    pub fn devices(&self) -> &[Lanes<D>] {
        &self.devices
    }

    pub fn len(&self) -> usize {
        self.devices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The device for the next whole call: the one with the fewest calls
    /// in flight, the first such after the previous choice.
    fn pick(&mut self) -> usize {
        let devices = &self.devices;
        least_busy(&mut self.next, devices.len(), |i| {
            devices[i].calls_running()
        })
    }

    /// Starts a whole call on the least busy device; [`Pending::device`]
    /// says which.
    pub fn submit(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<Pending> {
        let i = self.pick();
        Ok(self.devices[i].submit(function, inputs)?.with_device(i))
    }

    /// Like `submit`, on a copy of `inputs` in the chosen device's
    /// staging memory ([`Lanes::submit_staged`]).
    pub fn submit_staged(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Pending> {
        let i = self.pick();
        Ok(self.devices[i]
            .submit_staged(function, inputs)?
            .with_device(i))
    }

    /// A whole call on the least busy device, waited for.
    pub fn run(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        self.submit_staged(function, inputs)?.wait()
    }

    /// Runs `function` on a batch split along axis 0 across the devices:
    /// part `j` on device `j % len`. Inputs of exactly the function's
    /// types make one whole call.
    pub fn run_split(&mut self, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        let model = self.devices[0].model().clone();
        let f = model.function(function)?;
        let plan = SplitPlan::new(f, inputs.iter().map(|t| (t.dtype, t.shape.as_slice())))?;
        if plan.parts == 1 {
            return self.run(function, inputs);
        }
        let n = self.devices.len();
        let (split, parts) = (&plan.split, plan.parts);
        // Device `i` takes parts i, i + n, ..., each copied from the batch
        // into its staging memory and submitted from a thread of its own.
        let submitted: Vec<Result<Vec<(usize, Pending)>>> = std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .devices
                .iter_mut()
                .enumerate()
                .take(parts)
                .map(|(i, lanes)| {
                    scope.spawn(move || {
                        (i..parts)
                            .step_by(n)
                            .map(|j| {
                                let part = split_views(inputs, split, parts, j);
                                Ok((j, lanes.submit_views(function, &part)?.with_device(i)))
                            })
                            .collect()
                    })
                })
                .collect();
            workers.into_iter().map(|w| joined(function, w)).collect()
        });
        let mut pending: Vec<(usize, Pending)> = submitted
            .into_iter()
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        pending.sort_by_key(|(j, _)| *j);
        let pending = pending.into_iter().map(|(_, p)| p);
        // Every part is waited for before an error is returned, so that
        // every part's staging memory is back with its lanes.
        let mut parts = Vec::with_capacity(plan.parts);
        let mut failed = None;
        for (j, p) in pending.enumerate() {
            match p.wait() {
                Ok(out) => parts.push(out),
                Err(e) => {
                    failed.get_or_insert(match e {
                        Error::Execution { function, message } => Error::Execution {
                            function,
                            message: format!("part {j} of {}: {message}", plan.parts),
                        },
                        e => e,
                    });
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        let outputs = concat_parts(f, &parts);
        for (j, p) in parts.into_iter().enumerate() {
            self.devices[j % n].recycle(p);
        }
        outputs
    }

    /// Per-kernel device time of every device and lane, summed.
    pub fn kernel_profile(&mut self, reset: bool) -> Result<Vec<KernelProfile>> {
        let mut total: Vec<KernelProfile> = Vec::new();
        for d in &mut self.devices {
            add_profiles(&mut total, d.kernel_profile(reset)?);
        }
        Ok(total)
    }
}
