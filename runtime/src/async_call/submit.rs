//! Submitting an asynchronous call: the inputs go to device buffers
//! (through pinned staging up to the staging limit, straight from the
//! tensor above it, or used in place on a host-memory device) on
//! the upload queue, the kernels on the compute queue after the uploads,
//! the outputs come back on the download queue after the kernels; the
//! call's resources go to its [`CallHandle`].

use std::time::Instant;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::memory::ClMem;
use opencl3::types::{cl_event, cl_mem};

use super::handle::{CallHandle, InFlight, OutputSlot, Resources, retire, unmap_outputs};
use super::staging::{StagingBuf, copy_bytes};
use super::{retained, take_io};
use crate::TransferCounters;
use crate::buffer_pool::PoolBuffer;
use crate::device::HostIo;
use crate::error::{ClResultExt, Error, Result};
use crate::session::{
    Session, enqueue_read, enqueue_write, exec_error, input_in_place, map_for_reading,
    output_in_place,
};
use crate::tensor::{DType, HostTensor};

/// Error labels of the side queues' transfers.
const WRITE: &str = "clEnqueueWriteBuffer (upload queue)";
const READ: &str = "clEnqueueReadBuffer (download queue)";
const MAP: &str = "clEnqueueMapBuffer (download queue)";

/// Where an input's bytes come from when they are copied.
enum UploadSource {
    /// A pinned staging buffer holding a copy.
    Staged(StagingBuf),
    /// The input's own memory, by index: a tensor kept in
    /// `Resources::inputs`, or a view valid until the call is done.
    Own(usize),
    /// A borrowed input above the staging limit, by index: written from the
    /// caller's tensor with a blocking write (no host copy, as the
    /// synchronous path does), so it is on the device when `submit_ref`
    /// returns.
    Lent(usize),
}

impl Session {
    /// Starts `function` on `inputs` and returns at once; the outputs come
    /// from [`CallHandle::wait`]. Errors found before anything runs (an
    /// unknown function, wrong input types, a failing runtime call while
    /// the kernels are enqueued) are returned here, after everything the
    /// call had enqueued has finished, and the session stays usable.
    ///
    /// Outputs are bit-identical to `Session::run`'s: the same kernels run
    /// in the same order on the same queue.
    pub fn submit(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<CallHandle> {
        self.submit_inner(function, Inputs::Owned(inputs))
    }

    /// Like [`Session::submit`] for borrowed inputs: with pinned staging
    /// they are copied into staging buffers before this returns, and those
    /// above the staging limit are written to the device before this
    /// returns (no host copy); on a host-memory device they are cloned (the
    /// call needs them until it is done).
    pub fn submit_ref(&mut self, function: &str, inputs: &[HostTensor]) -> Result<CallHandle> {
        self.submit_inner(function, Inputs::Borrowed(inputs))
    }

    /// Like [`Session::submit`] for views of bytes the call reads in place
    /// or uploads asynchronously straight from them (never staged), with
    /// no copy before this returns.
    ///
    /// # Safety
    /// Every view's bytes must stay valid and unchanged until the returned
    /// handle is finished (waited for or dropped); the handle must not be
    /// leaked (`mem::forget`) while they are borrowed.
    pub(crate) unsafe fn submit_views(
        &mut self,
        function: &str,
        inputs: Vec<InputView<'_>>,
    ) -> Result<CallHandle> {
        self.submit_inner(function, Inputs::Views(inputs))
    }

    /// Another name for [`Session::submit`].
    pub fn run_async(&mut self, function: &str, inputs: Vec<HostTensor>) -> Result<CallHandle> {
        self.submit(function, inputs)
    }

    fn submit_inner(&mut self, function: &str, inputs: Inputs<'_>) -> Result<CallHandle> {
        let model = self.model.clone();
        let f = model.function(function)?;
        match &inputs {
            Inputs::Owned(v) => f.check_input_types(types_of(v), &[])?,
            Inputs::Borrowed(s) => f.check_input_types(types_of(s), &[])?,
            Inputs::Views(v) => {
                f.check_input_types(v.iter().map(|v| (v.dtype, v.shape.as_slice())), &[])?
            }
        }
        // A function on a symbolic dimension: the outputs and the entry's
        // shapes from the call's inputs (checked above).
        let call = if f.is_dynamic() {
            let shapes: Vec<&[usize]> = match &inputs {
                Inputs::Owned(v) => v.iter().map(|t| t.shape.as_slice()).collect(),
                Inputs::Borrowed(s) => s.iter().map(|t| t.shape.as_slice()).collect(),
                Inputs::Views(v) => v.iter().map(|t| t.shape.as_slice()).collect(),
            };
            f.call_shapes(&shapes)?
        } else {
            crate::artifact::CallShapes {
                outputs: f.outputs.iter().map(|d| d.shape.clone()).collect(),
                flat: Vec::new(),
            }
        };
        self.calls.throttle();
        let rt = self.rt.inner.clone();
        let queues = rt.side_queues()?;
        let in_place = rt.host_io == HostIo::InPlace;
        let staged = !in_place && rt.pinned_staging;
        let io = self.calls.io.clone();
        // The compute queue: one of the session's own (a lane), or the
        // runtime's.
        let lane = self.calls.lanes.pick(&rt, self.calls.lane_count(&rt))?;
        if let Some(i) = lane {
            self.prepare_lane(i)?;
        }
        let own = lane.and_then(|i| self.calls.lanes.queue(i).cloned());
        let mut res = Resources {
            out_types: f
                .outputs
                .iter()
                .zip(&call.outputs)
                .map(|(d, shape)| (d.dtype, shape.clone()))
                .collect(),
            ..Default::default()
        };
        let started = Instant::now();

        // Everything is enqueued here; on failure `res` is cleaned up below
        // once the queues have finished with it.
        let enqueue = |res: &mut Resources| -> Result<(Event, Event)> {
            // Inputs the device may read after `submit` returns are owned by
            // the call from here on (also when enqueuing fails half-way).
            let (owned, rest) = match inputs {
                Inputs::Owned(v) => (v, Rest::Owned),
                Inputs::Borrowed(s) if !staged => (s.to_vec(), Rest::Owned),
                Inputs::Borrowed(s) => (Vec::new(), Rest::Lent(s)),
                Inputs::Views(v) => (Vec::new(), Rest::Views(v)),
            };
            res.inputs = owned;
            // Per input: its bytes, and whether they are only lent until
            // `submit_ref` returns (`false`: valid until the call is done).
            let sources: Vec<(&[u8], bool)> = match &rest {
                Rest::Owned => res.inputs.iter().map(|t| (&t.bytes[..], false)).collect(),
                Rest::Lent(s) => s.iter().map(|t| (&t.bytes[..], true)).collect(),
                Rest::Views(v) => v.iter().map(|v| (v.bytes, false)).collect(),
            };
            let views = matches!(rest, Rest::Views(_));
            // Per input: its buffer, and what to upload into it.
            let mut in_io: Vec<(cl_mem, u64)> = Vec::with_capacity(sources.len());
            let mut uploads: Vec<(cl_mem, UploadSource, usize)> = Vec::new();
            let mut fresh = false;
            let mut fresh_out = false;
            for (i, &(bytes, lent)) in sources.iter().enumerate() {
                // SAFETY: an input used in place is one of `res.inputs`
                // (borrowed inputs are cloned there on a host-memory
                // device) or a view valid until the call is done.
                if let Some(b) = unsafe { input_in_place(&rt, bytes) }? {
                    in_io.push((b.get(), bytes.len() as u64));
                    res.in_host.push(b);
                    TransferCounters::add(&rt.transfers.inputs_in_place, 1);
                    continue;
                }
                let (dev, new) = take_io(&rt, &io, bytes.len() as u64)?;
                fresh |= new;
                let mem = dev.mem();
                in_io.push((mem, bytes.len() as u64));
                res.in_device.push(dev);
                // Inputs above the staging limit go straight from their
                // memory: asynchronously when it outlives the call, a
                // borrowed one before `submit_ref` returns. Views are never
                // staged: they outlive the call, and a copy would delay
                // the submission of a split call's next part.
                let stage = !views && !bytes.is_empty() && bytes.len() <= rt.staging_limit;
                let source = if lent && !stage {
                    UploadSource::Lent(i)
                } else if staged && stage {
                    let stage = rt.staging().take(&rt, &queues.upload, bytes.len())?;
                    // SAFETY: the staging buffer holds at least `len` bytes
                    // and nothing else uses it.
                    let dst = unsafe { std::slice::from_raw_parts_mut(stage.ptr(), bytes.len()) };
                    copy_bytes(dst, bytes);
                    UploadSource::Staged(stage)
                } else {
                    UploadSource::Own(i)
                };
                uploads.push((mem, source, bytes.len()));
            }
            // The outputs.
            let mut out_io: Vec<(cl_mem, u64)> = Vec::with_capacity(res.out_types.len());
            for (d, shape) in f.outputs.iter().zip(&call.outputs) {
                let size = crate::tensor::byte_size(shape, d.dtype).unwrap_or(usize::MAX);
                let mut bytes = self.output_block(size);
                // SAFETY: the block is owned by the call and not read until
                // it is done; it does not move.
                if let Some(b) = unsafe { output_in_place(&rt, &mut bytes) }? {
                    out_io.push((b.get(), size as u64));
                    res.outputs.push(OutputSlot::InPlace {
                        buffer: b,
                        bytes,
                        mapped: 0,
                    });
                    continue;
                }
                let (device, new) = take_io(&rt, &io, size as u64)?;
                fresh_out |= new;
                out_io.push((device.mem(), size as u64));
                if staged && size > 0 && size <= rt.staging_limit {
                    let stage = rt.staging().take(&rt, &queues.upload, size)?;
                    res.outputs.push(OutputSlot::Staged {
                        device,
                        stage,
                        bytes,
                    });
                } else {
                    res.outputs.push(OutputSlot::Direct { device, bytes });
                }
            }
            // Uploads: after the compute queue's earlier work when a buffer
            // came fresh from the pool.
            // SAFETY: a marker reads nothing.
            let fence = if fresh && !uploads.is_empty() {
                Some(
                    unsafe { rt.queue.enqueue_marker_with_wait_list(&[]) }
                        .cl("clEnqueueMarkerWithWaitList")?,
                )
            } else {
                None
            };
            let fence_list: Vec<cl_event> = fence.iter().map(Event::get).collect();
            let mut last_upload: Option<Event> = None;
            for (mem, source, len) in uploads {
                let src: &[u8] = match &source {
                    // SAFETY: the staging buffer holds at least `len` bytes.
                    UploadSource::Staged(s) => unsafe { std::slice::from_raw_parts(s.ptr(), len) },
                    UploadSource::Own(i) | UploadSource::Lent(i) => sources[*i].0,
                };
                let blocking = matches!(source, UploadSource::Lent(_));
                // SAFETY: the source (a staging buffer, an input tensor or
                // a view) is kept by the call until it is done; a lent
                // tensor is written before this returns.
                let written = unsafe {
                    enqueue_write(&queues.upload, mem, src, blocking, &fence_list, WRITE)
                }?;
                if written.is_some() {
                    last_upload = written;
                    TransferCounters::add(&rt.transfers.bytes_to_device, len as u64);
                }
                if let UploadSource::Staged(s) = source {
                    res.staging.push(s);
                }
            }
            let compute: &CommandQueue = own.as_deref().unwrap_or(&rt.queue);
            // The kernels wait for the uploads and, on an own queue, for
            // what the runtime's queue holds where this session's arena,
            // constants or outputs may be in use there.
            let mut start: Vec<Event> = Vec::new();
            if let Some(up) = last_upload {
                queues.upload.flush().cl("clFlush (upload queue)")?;
                start.push(up);
            }
            if let Some(i) = lane {
                // What the runtime's queue holds, when it can matter
                // (`lanes`), and constants another lane is uploading.
                if self.calls.lanes.take_runtime_fence(i) || fresh_out {
                    // SAFETY: a marker reads nothing.
                    start.push(
                        unsafe { rt.queue.enqueue_marker_with_wait_list(&[]) }
                            .cl("clEnqueueMarkerWithWaitList")?,
                    );
                    rt.queue.flush().cl("clFlush")?;
                }
                start.extend(self.calls.lanes.constants_event()?);
            }
            if !start.is_empty() {
                let list: Vec<cl_event> = start.iter().map(Event::get).collect();
                // SAFETY: a barrier reads nothing.
                let barrier = unsafe { compute.enqueue_barrier_with_wait_list(&list) }
                    .cl("clEnqueueBarrierWithWaitList")?;
                drop(barrier);
            }
            let io = crate::hal::shared::CallIo::new(&in_io, &out_io).with_shapes(&call.flat);
            let uploaded_constants = match lane {
                Some(i) => self.execute_on(f, io, compute, Some(&mut res.deferred), i)?,
                None => {
                    self.execute(f, io)?;
                    false
                }
            };
            // SAFETY: a marker reads nothing.
            let computed = unsafe { compute.enqueue_marker_with_wait_list(&[]) }
                .cl("clEnqueueMarkerWithWaitList")?;
            compute.flush().cl("clFlush")?;
            if let Some(i) = lane {
                self.calls
                    .lanes
                    .submitted(i, &computed, uploaded_constants)?;
            }
            let mut done: Option<Event> = None;
            let wait = [computed.get()];
            for slot in res.outputs.iter_mut() {
                let (device, dst): (&PoolBuffer, &mut [u8]) = match slot {
                    OutputSlot::InPlace {
                        buffer,
                        bytes,
                        mapped,
                    } => {
                        // SAFETY: unmapped in `finish`; the block outlives it.
                        let (p, ev) = unsafe {
                            map_for_reading(&queues.download, buffer.get(), bytes.len(), &wait, MAP)
                        }?;
                        *mapped = p as usize;
                        done = Some(ev);
                        continue;
                    }
                    OutputSlot::Staged {
                        device,
                        stage,
                        bytes,
                    } => {
                        // SAFETY: the staging buffer holds at least
                        // `bytes.len()` bytes.
                        let dst =
                            unsafe { std::slice::from_raw_parts_mut(stage.ptr(), bytes.len()) };
                        (device, dst)
                    }
                    OutputSlot::Direct { device, bytes } => (device, bytes),
                };
                // SAFETY: `dst` (a staging buffer or the output's block) is
                // kept until the call is done and does not move.
                if let Some(ev) =
                    unsafe { enqueue_read(&queues.download, device.mem(), dst, &wait, READ) }?
                {
                    TransferCounters::add(&rt.transfers.bytes_to_host, dst.len() as u64);
                    done = Some(ev);
                }
            }
            queues.download.flush().cl("clFlush (download queue)")?;
            let done = match done {
                Some(d) => d,
                // No output to read: the kernels' marker ends the call (a
                // second reference to it).
                None => retained(&computed)?,
            };
            Ok((computed, done))
        };
        match enqueue(&mut res) {
            Ok((computed, done)) => {
                // The session's own reference to the end of the call.
                if let Ok(end) = retained(&done) {
                    self.calls.in_flight.push_back(end);
                }
                rt.live_handles
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(CallHandle {
                    rt: rt.clone(),
                    function: f.name.clone(),
                    submitted: started,
                    state: Some(InFlight {
                        rt,
                        io,
                        own,
                        computed,
                        done,
                        res,
                    }),
                })
            }
            Err(e) => {
                // Whatever was enqueued must finish before its memory goes.
                let _ = queues.upload.finish();
                if let Some(q) = &own {
                    let _ = q.finish();
                }
                let _ = rt.queue.finish();
                let _ = queues.download.finish();
                unmap_outputs(&rt, &queues.download, &mut res, false);
                retire(&rt, &io, res);
                Err(match e {
                    e @ Error::Execution { .. } => e,
                    e => exec_error(f, e),
                })
            }
        }
    }
}

fn types_of(tensors: &[HostTensor]) -> impl ExactSizeIterator<Item = (DType, &[usize])> {
    tensors.iter().map(|t| (t.dtype, t.shape.as_slice()))
}

enum Inputs<'a> {
    Owned(Vec<HostTensor>),
    Borrowed(&'a [HostTensor]),
    Views(Vec<InputView<'a>>),
}

/// The inputs `submit` still holds once the owned ones went to the call.
enum Rest<'a> {
    Owned,
    Lent(&'a [HostTensor]),
    Views(Vec<InputView<'a>>),
}

/// An input given as a typed view of bytes the caller keeps valid until
/// the call is finished ([`Session::submit_views`]): a part of a split
/// batch, uploaded (or used in place) without cutting it out first.
pub(crate) struct InputView<'a> {
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
    pub(crate) bytes: &'a [u8],
}
