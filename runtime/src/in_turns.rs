//! Several builds of one model timed in turns: each call of each build in
//! turn, with profiling events on, keeping every kernel's fastest call per
//! build. Taking turns means that a change in the machine's load (another
//! job, clocks, temperature) touches every build alike, which separate runs
//! one after the other do not; the fastest call is the least disturbed.
//!
//! `tcc tune` measures its candidate rounds this way, and
//! `tcc-benchmark A.so --in-turns-with=B.so` compares two builds side by
//! side; on a machine without the compiler the second one measures rounds
//! that `tcc tune --prepare` compiled elsewhere.

use std::collections::BTreeMap;

use crate::backend::Calls;
use crate::cuda::CudaRuntime;
use crate::{HostTensor, Model, Result, Runtime};

/// One build, loaded and ready to run (on either backend).
pub struct Turn {
    session: Box<dyn Calls + Send>,
    function: String,
    inputs: Vec<HostTensor>,
    /// Each kernel's fastest call so far, in milliseconds.
    fastest: BTreeMap<String, f64>,
}

impl Turn {
    /// Opens a session for `model` on `runtime` (the driver builds its
    /// kernels) and runs `function` once, untimed.
    pub fn new(
        runtime: &Runtime,
        model: &Model,
        function: &str,
        inputs: Vec<HostTensor>,
    ) -> Result<Self> {
        Self::with_session(Box::new(runtime.session(model)?), function, inputs)
    }

    /// [`Turn::new`] on the CUDA backend (`runtime` with profiling on).
    pub fn new_cuda(
        runtime: &CudaRuntime,
        model: &Model,
        function: &str,
        inputs: Vec<HostTensor>,
    ) -> Result<Self> {
        Self::with_session(Box::new(runtime.session(model)?), function, inputs)
    }

    fn with_session(
        mut session: Box<dyn Calls + Send>,
        function: &str,
        inputs: Vec<HostTensor>,
    ) -> Result<Self> {
        let outputs = session.run_with_sources(function, &inputs, &[])?;
        session.recycle(outputs);
        Ok(Turn {
            session,
            function: function.to_string(),
            inputs,
            fastest: BTreeMap::new(),
        })
    }

    /// One profiled call: keeps each kernel's fastest time.
    pub fn measure(&mut self) -> Result<()> {
        self.session.reset_profile()?;
        let outputs = self
            .session
            .run_with_sources(&self.function, &self.inputs, &[])?;
        self.session.recycle(outputs);
        for kernel in self.session.kernel_profile()? {
            let ms = kernel.mean_ns() / 1e6;
            self.fastest
                .entry(kernel.name)
                .and_modify(|best| *best = best.min(ms))
                .or_insert(ms);
        }
        Ok(())
    }

    /// Drops the times kept so far (after warm-up calls).
    pub fn forget(&mut self) {
        self.fastest.clear();
    }

    /// Each kernel's fastest call, in milliseconds, by kernel name.
    pub fn fastest(&self) -> &BTreeMap<String, f64> {
        &self.fastest
    }

    /// The fastest calls, the turn consumed.
    pub fn into_fastest(self) -> BTreeMap<String, f64> {
        self.fastest
    }
}

/// Runs `iterations` rounds in which every turn makes one profiled call.
pub fn measure_in_turns(turns: &mut [Turn], iterations: usize) -> Result<()> {
    for _ in 0..iterations.max(1) {
        for turn in turns.iter_mut() {
            turn.measure()?;
        }
    }
    Ok(())
}
