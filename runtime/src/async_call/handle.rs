//! A call in flight: its [`CallHandle`], what the call holds until it is
//! finished (device and staging buffers, the output blocks, the input
//! tensors), and finishing it: waiting for its last command, taking the
//! outputs back, and returning its buffers.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::memory::{Buffer, ClMem};

use super::staging::{StagingBuf, copy_bytes};
use super::{IoCache, give_io, is_running};
use crate::RuntimeInner;
use crate::buffer_pool::PoolBuffer;
use crate::error::{Error, Result};
use crate::host_bytes::HostBytes;
use crate::session::unmap_output;
use crate::tensor::{DType, HostTensor};

/// How an output comes back.
pub(super) enum OutputSlot {
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
pub(super) struct Resources {
    /// The input tensors, kept while the device may read them.
    pub(super) inputs: Vec<HostTensor>,
    /// Device buffers of copied inputs.
    pub(super) in_device: Vec<PoolBuffer>,
    /// Host buffers over inputs used in place.
    pub(super) in_host: Vec<Buffer<u8>>,
    pub(super) staging: Vec<StagingBuf>,
    /// Temporaries the call released on a session's own queue, given back
    /// to the pool when it is done.
    pub(super) deferred: Vec<PoolBuffer>,
    pub(super) outputs: Vec<OutputSlot>,
    /// Output descriptions, for the result tensors.
    pub(super) out_types: Vec<(DType, Vec<usize>)>,
}

/// Unmaps outputs mapped in place (after the download queue ran the maps),
/// taking the bytes where the driver mapped a copy, when `ok`.
pub(super) fn unmap_outputs(
    rt: &RuntimeInner,
    download: &CommandQueue,
    res: &mut Resources,
    ok: bool,
) {
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
pub(super) fn retire(rt: &RuntimeInner, io: &Mutex<IoCache>, res: Resources) {
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

/// A call in flight, from [`Session::submit`]. Wait for it once with
/// [`CallHandle::wait`]; dropping it unwaited waits for its device work and
/// discards the outputs. It does not borrow the session and stays valid
/// after the session is dropped.
pub struct CallHandle {
    pub(super) rt: Arc<RuntimeInner>,
    pub(super) function: String,
    pub(super) submitted: Instant,
    /// `None` once waited.
    pub(super) state: Option<InFlight>,
}

/// What a call in flight holds until it is finished.
pub(super) struct InFlight {
    pub(super) rt: Arc<RuntimeInner>,
    pub(super) io: Arc<Mutex<IoCache>>,
    /// The session's own compute queue, if the call ran there.
    pub(super) own: Option<Arc<CommandQueue>>,
    /// The marker after the call's kernels.
    pub(super) computed: Event,
    /// The call's last command (its last download, or `computed`).
    pub(super) done: Event,
    pub(super) res: Resources,
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
