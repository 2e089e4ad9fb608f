//! What the drivers' sessions share below the traits: the callbacks'
//! kernel- and constant-index checks and the kernel profile table (per kernel:
//! launches and device time since the start or the last reset), so that
//! OpenCL's and CUDA's sessions check and report the same way.

use crate::KernelProfile;

/// The public host-tensor calls of a driver's session, written once for
/// every driver: `run` and `run_with_sources` find the function, check the
/// inputs against its signature (naming where each came from) and hand the
/// checked call to the session's own
/// `fn run_checked(&mut self, f: &FunctionInfo, inputs: &[HostTensor]) -> Result<Vec<HostTensor>>`.
macro_rules! host_calls {
    ($session:ty) => {
        impl $session {
            /// Runs `function` on host tensors and returns its outputs.
            /// Errors about inputs describe where they came from as "the
            /// caller".
            pub fn run(
                &mut self,
                function: &str,
                inputs: &[$crate::HostTensor],
            ) -> $crate::Result<Vec<$crate::HostTensor>> {
                self.run_with_sources(function, inputs, &[])
            }

            /// Like `run`; `sources[i]` says where input `i` came from
            /// (e.g. "x.npy" or "the command line") for error messages.
            pub fn run_with_sources(
                &mut self,
                function: &str,
                inputs: &[$crate::HostTensor],
                sources: &[&str],
            ) -> $crate::Result<Vec<$crate::HostTensor>> {
                let model = self.model().clone();
                let f = model.function(function)?;
                f.check_inputs(inputs, sources)?;
                self.run_checked(f, inputs)
            }
        }
    };
}
pub(crate) use host_calls;

/// A driver session's kernel profile calls, written once: each waits for
/// the session's device work (the session's own
/// `fn finish_work(&mut self) -> Result<()>`), folds what finished into the
/// session's `profile` table (`fn collect_profile(&mut self) -> Result<()>`)
/// and reports or clears it.
macro_rules! profile_calls {
    ($session:ty) => {
        impl $session {
            /// Per-kernel device time since the session started or the
            /// last `reset_profile` (waits for the session's work). Empty
            /// unless the runtime was created with profiling on.
            pub fn kernel_profile(&mut self) -> $crate::Result<Vec<$crate::KernelProfile>> {
                self.finish_work()?;
                self.collect_profile()?;
                Ok($crate::hal::shared::launched(&self.profile))
            }

            pub fn reset_profile(&mut self) -> $crate::Result<()> {
                self.kernel_profile()?;
                $crate::hal::shared::reset(&mut self.profile);
                Ok(())
            }
        }
    };
}
use crate::error::{Error, Result};
pub(crate) use profile_calls;

/// Kernel `kernel` of the artifact's `kernels`, or the error every driver
/// gives for an index the artifact has no kernel at.
pub(crate) fn kernel_at<T>(kernels: &[T], kernel: u32) -> Result<&T> {
    kernels.get(kernel as usize).ok_or_else(|| {
        Error::InvalidInput(format!(
            "kernel index {kernel} out of range (the artifact has {} kernels)",
            kernels.len()
        ))
    })
}

/// Constant `index` of the artifact's `constants`, or the error every
/// driver gives for an index the artifact has no constant at.
pub(crate) fn constant_at<T>(constants: &[T], index: u32) -> Result<&T> {
    constants.get(index as usize).ok_or_else(|| {
        Error::InvalidInput(format!(
            "constant index {index} out of range (the artifact has {})",
            constants.len()
        ))
    })
}

/// Of `n` places (devices, lanes), the one with the least `load`: the
/// first such from `*next` on, which then moves past it (round robin
/// among equals).
pub(crate) fn least_busy(next: &mut usize, n: usize, load: impl Fn(usize) -> usize) -> usize {
    let mut best = *next % n;
    let mut best_load = usize::MAX;
    for step in 0..n {
        let i = (*next + step) % n;
        let l = load(i);
        if l < best_load {
            best = i;
            best_load = l;
        }
    }
    *next = (best + 1) % n;
    best
}

/// Adds `more` (another session's or lane's profile) into `total`, kernel
/// by kernel.
pub(crate) fn add_profiles(total: &mut Vec<KernelProfile>, more: Vec<KernelProfile>) {
    for k in more {
        match total.iter_mut().find(|t| t.name == k.name) {
            Some(t) => {
                t.calls += k.calls;
                t.total_ns += k.total_ns;
            }
            None => total.push(k),
        }
    }
}

/// The result of a thread that submitted parts of a split call of
/// `function`; its panic is that call's error.
pub(crate) fn joined<T>(
    function: &str,
    worker: std::thread::ScopedJoinHandle<'_, Result<T>>,
) -> Result<T> {
    worker.join().unwrap_or_else(|_| {
        Err(Error::Execution {
            function: function.to_string(),
            message: "a thread submitting part of a split call panicked".into(),
        })
    })
}

/// An empty profile table, one row per kernel name in the artifact's order.
pub(crate) fn profile_table(names: &[String]) -> Vec<KernelProfile> {
    names
        .iter()
        .map(|n| KernelProfile {
            name: n.clone(),
            ..Default::default()
        })
        .collect()
}

/// The kernels of `table` launched at least once.
pub(crate) fn launched(table: &[KernelProfile]) -> Vec<KernelProfile> {
    table.iter().filter(|p| p.calls > 0).cloned().collect()
}

/// Starts `table` again from zero.
pub(crate) fn reset(table: &mut [KernelProfile]) {
    for p in table {
        p.calls = 0;
        p.total_ns = 0;
    }
}

/// Who owns a buffer handle the artifact holds during one call, on every
/// driver; `T` is the driver's memory of a temporary.
pub(crate) enum Owner<T> {
    /// A temporary from `alloc`.
    Temporary(T),
    /// Constant `index`, owned by the session.
    Constant(u32),
    /// An input or output of the call (`input 0`), owned by the caller.
    Io(String),
    /// A view of the session's arena.
    Arena,
}

/// The artifact's `release(handle)` for every driver: takes the temporary
/// `handle` names out of the call's `live` table and returns its memory
/// (`None` for NULL, which releases nothing). Anything else is refused
/// with what it is: a handle not handed out in this call, a constant, an
/// input or output, a view of the arena.
pub(crate) fn release_temporary<E, T>(
    live: &mut std::collections::HashMap<usize, E>,
    handle: *mut crate::abi::TccBuffer,
    owner: impl Fn(E) -> Owner<T>,
    owner_of: impl Fn(&E) -> &Owner<T>,
) -> Result<Option<T>> {
    if handle.is_null() {
        return Ok(None);
    }
    let key = handle as usize;
    let what = match live.get(&key).map(owner_of) {
        None => {
            return Err(Error::InvalidInput(format!(
                "buffer {handle:p} was not handed out by alloc() in this call"
            )));
        }
        Some(Owner::Temporary(_)) => {
            return Ok(live.remove(&key).map(owner).and_then(|o| match o {
                Owner::Temporary(memory) => Some(memory),
                _ => None,
            }));
        }
        Some(Owner::Constant(i)) => format!("constant {i}"),
        Some(Owner::Io(what)) => what.clone(),
        Some(Owner::Arena) => "a view of the arena".to_string(),
    };
    Err(Error::InvalidInput(format!(
        "buffer {handle:p} is {what}; only buffers from alloc() may be released"
    )))
}

/// The caller's buffers of one entry call, as a driver holds them: each
/// input's and output's device buffer (a `cl_mem`, a CUDA device pointer)
/// with its size in bytes.
/// A call of a function on a symbolic dimension also carries its shapes
/// (`FunctionInfo::call_shapes`), which the entry reads.
#[derive(Clone, Copy)]
pub(crate) struct CallIo<'a, B> {
    pub(crate) inputs: &'a [(B, u64)],
    pub(crate) outputs: &'a [(B, u64)],
    pub(crate) shapes: &'a [i64],
}

impl<'a, B: Copy> CallIo<'a, B> {
    pub(crate) fn new(inputs: &'a [(B, u64)], outputs: &'a [(B, u64)]) -> Self {
        CallIo {
            inputs,
            outputs,
            shapes: &[],
        }
    }

    /// The call's shapes (every input's extents, then every output's).
    pub(crate) fn with_shapes(self, shapes: &'a [i64]) -> Self {
        CallIo { shapes, ..self }
    }

    /// The shapes the entry of `f` reads: the call's, which a function on
    /// a symbolic dimension needs (an error naming `driver` where the
    /// caller has none: a path that does not size calls yet).
    pub(crate) fn shapes_for(
        &self,
        f: &crate::FunctionInfo,
        driver: &str,
    ) -> crate::Result<&'a [i64]> {
        if f.is_dynamic() && self.shapes.is_empty() {
            return Err(crate::Error::InvalidInput(format!(
                "@{} has symbolic dimensions ({}), which {driver} does not run yet: run it through a session's run or run_device on the OpenCL driver, or compile one shape with --input-shape",
                f.name,
                f.dims
                    .iter()
                    .map(|d| format!("{}={}..{}", d.name, d.min, d.max))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(self.shapes)
    }

    /// The artifact's handles of the inputs and of the outputs, each made
    /// by `issue(buffer, bytes, owner)` with the owner every driver gives
    /// them (`Owner::Io("input 0")`, ..., `Owner::Io("output 0")`, ...).
    pub(crate) fn handles<T>(
        &self,
        mut issue: impl FnMut(B, u64, Owner<T>) -> *mut crate::abi::TccBuffer,
    ) -> (
        Vec<*mut crate::abi::TccBuffer>,
        Vec<*mut crate::abi::TccBuffer>,
    ) {
        let mut side = |what: &str, list: &[(B, u64)]| {
            list.iter()
                .enumerate()
                .map(|(i, &(buffer, bytes))| issue(buffer, bytes, Owner::Io(format!("{what} {i}"))))
                .collect::<Vec<_>>()
        };
        let inputs = side("input", self.inputs);
        let outputs = side("output", self.outputs);
        (inputs, outputs)
    }
}
