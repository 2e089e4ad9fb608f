//! Moving a call's bytes between the host and the device: the non-blocking
//! writes, reads and read maps the session's calls enqueue, the buffers
//! over host memory that a host-memory device ([`HostIo::InPlace`]) uses in
//! place of copies, and [`Session::run_with_sources`]'s host-tensor path
//! built from them.
//!
//! `Session::run` and the asynchronous calls (`async_call`) share these:
//! the choice of whether an input or output is used in place, the blocks
//! the outputs are written into, and how a mapped output is taken back.

use std::ffi::c_void;
use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_USE_HOST_PTR, ClMem,
};
use opencl3::types::{CL_FALSE, CL_TRUE, cl_event, cl_mem};

use super::{PendingCommand, Session, exec_error};
use crate::buffer_pool::PoolBuffer;
use crate::device::HostIo;
use crate::error::{Error, Result};
use crate::hal::shared::CallIo;
use crate::host_bytes::HostBytes;
use crate::tensor::HostTensor;
use crate::timeline::CommandKind;
use crate::{RuntimeInner, TransferCounters};

crate::hal::shared::host_calls!(Session);

impl Session {
    /// The call of `f` (its inputs checked by `run_with_sources`, see
    /// [`crate::hal::shared::host_calls`]).
    pub(crate) fn run_checked(
        &mut self,
        f: &crate::FunctionInfo,
        inputs: &[HostTensor],
    ) -> Result<Vec<HostTensor>> {
        // After this session's asynchronous calls on its own queues.
        self.calls.join(&self.rt.inner)?;
        // A recorded call (`Session::record_timeline`) keeps every
        // command's event.
        let tracing = self.begin_traced_call(&f.name);

        let rt = self.rt.inner.clone();
        let counters = &rt.transfers;
        let mut leases = Leases {
            rt: &rt,
            bufs: Vec::new(),
        };
        // Buffers over host memory (inputs and outputs used in place); the
        // queue must be idle before they, and the memory, go away.
        let mut host_bufs: Vec<Buffer<u8>> = Vec::new();
        // A function on a symbolic dimension: the outputs sized from the
        // call's inputs (checked against the ranges by `check_inputs`).
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
        let call = f.shapes_of_call(&shapes)?;
        let mut results: Vec<HostBytes> = f
            .outputs
            .iter()
            .zip(&call.outputs)
            .map(|(d, shape)| {
                let bytes = crate::tensor::byte_size(shape, d.dtype).unwrap_or(usize::MAX);
                self.output_block(bytes)
            })
            .collect();
        // Per input: its buffer and whether it must be copied there.
        let mut in_io: Vec<(cl_mem, u64)> = Vec::with_capacity(inputs.len());
        let mut in_copies: Vec<bool> = Vec::with_capacity(inputs.len());
        for t in inputs {
            let len = t.bytes.len();
            // SAFETY: the caller's bytes outlive the wait below.
            match unsafe { input_in_place(&rt, &t.bytes) }? {
                Some(b) => {
                    in_io.push((b.get(), len as u64));
                    host_bufs.push(b);
                    in_copies.push(false);
                }
                None => {
                    in_io.push((leases.acquire(len)?, len as u64));
                    in_copies.push(true);
                }
            }
        }
        // Per output: its buffer and whether it is the result's memory.
        let mut out_io: Vec<(cl_mem, u64)> = Vec::with_capacity(results.len());
        let mut out_host: Vec<bool> = Vec::with_capacity(results.len());
        for r in results.iter_mut() {
            // SAFETY: `results` is neither read nor moved out before the
            // wait below, and its blocks do not move.
            match unsafe { output_in_place(&rt, r) }? {
                Some(b) => {
                    out_io.push((b.get(), r.len() as u64));
                    host_bufs.push(b);
                    out_host.push(true);
                }
                None => {
                    out_io.push((leases.acquire(r.len())?, r.len() as u64));
                    out_host.push(false);
                }
            }
        }
        // Outputs mapped for reading: (buffer, mapped pointer, output index).
        let mut mapped: Vec<(cl_mem, *mut u8, usize)> = Vec::new();

        let enqueued = (|| -> Result<()> {
            for ((t, &(mem, _)), &copy) in inputs.iter().zip(&in_io).zip(&in_copies) {
                if copy {
                    // SAFETY: `t.bytes` outlives the wait below.
                    let event = unsafe {
                        enqueue_write(&rt.queue, mem, &t.bytes, false, &[], "clEnqueueWriteBuffer")
                    }?;
                    if tracing && let Some(event) = event {
                        let bytes = Some(t.bytes.len() as u64);
                        self.pending.push(PendingCommand::traced(
                            CommandKind::Upload,
                            bytes,
                            event,
                        ));
                    }
                    TransferCounters::add(&counters.bytes_to_device, t.bytes.len() as u64);
                }
            }
            self.execute_traced(
                f,
                CallIo::new(&in_io, &out_io).with_shapes(&call.flat),
                tracing,
            )?;
            for (i, (r, &(mem, len))) in results.iter_mut().zip(&out_io).enumerate() {
                if out_host[i] {
                    // Makes the kernels' writes visible to the host; on a
                    // host-memory device this moves no bytes.
                    // SAFETY: the range is the whole buffer; unmapped below.
                    let (p, event) = unsafe {
                        map_for_reading(&rt.queue, mem, to_usize(len, "size")?, &[], MAP)
                    }?;
                    if tracing {
                        self.pending.push(PendingCommand::traced(
                            CommandKind::Map,
                            Some(len),
                            event,
                        ));
                    }
                    mapped.push((mem, p, i));
                } else {
                    // SAFETY: `results` outlives the wait below.
                    let event =
                        unsafe { enqueue_read(&rt.queue, mem, r, &[], "clEnqueueReadBuffer") }?;
                    if tracing && let Some(event) = event {
                        let bytes = Some(r.len() as u64);
                        self.pending.push(PendingCommand::traced(
                            CommandKind::Download,
                            bytes,
                            event,
                        ));
                    }
                    TransferCounters::add(&counters.bytes_to_host, r.len() as u64);
                }
            }
            Ok(())
        })();
        // Always wait, even after an error: the queue may still read the
        // caller's input slices or write into `results`.
        let mut waited = rt
            .queue
            .finish()
            .map_err(|e| exec_error(f, Error::cl("waiting for the queue (clFinish)", e)));
        if !mapped.is_empty() {
            let take = waited.is_ok() && enqueued.is_ok();
            for &(mem, p, i) in &mapped {
                // SAFETY: `p` is this buffer's mapping, done (the queue
                // finished); it covers the whole output.
                unsafe { unmap_output(&rt, &rt.queue, mem, p, &mut results[i], take) };
            }
            let again = rt
                .queue
                .finish()
                .map_err(|e| exec_error(f, Error::cl("waiting for the queue (clFinish)", e)));
            waited = waited.and(again);
        }
        let used_in_place = in_copies.iter().filter(|&&c| !c).count() as u64;
        drop(host_bufs);
        enqueued?;
        waited?;
        TransferCounters::add(&counters.inputs_in_place, used_in_place);
        self.collect_profile()?;
        drop(leases);
        f.outputs
            .iter()
            .zip(call.outputs)
            .zip(results)
            .map(|((d, shape), bytes)| HostTensor::from_bytes(d.dtype, shape, bytes))
            .collect()
    }

    /// A block for an output of `size` bytes (see `host_bytes::SpareOutputs`).
    pub(crate) fn output_block(&mut self, size: usize) -> HostBytes {
        self.spare_outputs.take(size)
    }

    /// Hands outputs of an earlier call back for later calls to write
    /// into (a serving loop that is done with its results): blocks the
    /// runtime allocated are kept, up to a few, and taken by the next
    /// calls' outputs of the same size instead of fresh memory.
    pub fn recycle(&mut self, outputs: Vec<HostTensor>) {
        self.spare_outputs.recycle(outputs)
    }
}

/// The error label of a read map on the runtime's queue.
const MAP: &str = "clEnqueueMapBuffer";

/// Pool buffers held for one call, returned to the pool on drop.
struct Leases<'a> {
    rt: &'a RuntimeInner,
    bufs: Vec<PoolBuffer>,
}

impl Leases<'_> {
    /// A pool buffer of at least `bytes` bytes, held until the drop.
    fn acquire(&mut self, bytes: usize) -> Result<cl_mem> {
        let b = self.rt.pool().acquire(&self.rt.context, bytes as u64)?;
        let mem = b.mem();
        self.bufs.push(b);
        Ok(mem)
    }
}

impl Drop for Leases<'_> {
    fn drop(&mut self) {
        let mut pool = self.rt.pool();
        for b in self.bufs.drain(..) {
            pool.release(b);
        }
    }
}

pub(super) fn to_usize(v: u64, what: &str) -> Result<usize> {
    usize::try_from(v)
        .map_err(|_| Error::InvalidInput(format!("{what} {v} does not fit in size_t")))
}

/// Whether the device uses `bytes` in place: a host-memory device, and a
/// non-empty block at the device's alignment for host pointers
/// (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`).
fn usable_in_place(rt: &RuntimeInner, bytes: &[u8]) -> bool {
    let align = usize::try_from(rt.device.base_align_bytes).unwrap_or(usize::MAX);
    rt.host_io == HostIo::InPlace
        && !bytes.is_empty()
        && (bytes.as_ptr() as usize).is_multiple_of(align.max(1))
}

/// A read-only buffer over an input's bytes when the device reads them in
/// place ([`usable_in_place`]), counted in `inputs_in_place` by the
/// caller; `None` when they must be copied to a device buffer.
///
/// # Safety
/// As [`host_buffer`]: `bytes` must stay valid until the queue has finished
/// every command using the buffer.
pub(crate) unsafe fn input_in_place(rt: &RuntimeInner, bytes: &[u8]) -> Result<Option<Buffer<u8>>> {
    if !usable_in_place(rt, bytes) {
        return Ok(None);
    }
    // SAFETY: forwarded to the caller; the device only reads
    // (CL_MEM_READ_ONLY).
    unsafe { host_buffer(rt, CL_MEM_READ_ONLY, bytes.as_ptr().cast_mut(), bytes.len()) }.map(Some)
}

/// A buffer over an output's block when the kernels write it in place
/// ([`usable_in_place`]); `None` when the output is read back from a
/// device buffer.
///
/// # Safety
/// As [`host_buffer`]: the block must not move, nor be read, until the
/// queue has finished every command using the buffer.
pub(crate) unsafe fn output_in_place(
    rt: &RuntimeInner,
    bytes: &mut HostBytes,
) -> Result<Option<Buffer<u8>>> {
    if !usable_in_place(rt, bytes) {
        return Ok(None);
    }
    // SAFETY: forwarded to the caller.
    unsafe { host_buffer(rt, CL_MEM_READ_WRITE, bytes.as_mut_ptr(), bytes.len()) }.map(Some)
}

/// A buffer over `len` bytes of host memory at `host` (`CL_MEM_USE_HOST_PTR`
/// with `access`, e.g. `CL_MEM_READ_ONLY`): on a host-memory device the
/// kernels use those bytes in place.
///
/// # Safety
/// The memory must stay valid, and must not be accessed from Rust while
/// the device may write it, until the queue has finished every command
/// using the buffer.
unsafe fn host_buffer(
    rt: &RuntimeInner,
    access: opencl3::memory::cl_mem_flags,
    host: *mut u8,
    len: usize,
) -> Result<Buffer<u8>> {
    // SAFETY: forwarded to the caller.
    unsafe { Buffer::<u8>::create(&rt.context, access | CL_MEM_USE_HOST_PTR, len, host.cast()) }
        .map_err(|e| {
            Error::cl(
                format!("clCreateBuffer(CL_MEM_USE_HOST_PTR, {len} bytes)"),
                e,
            )
        })
}

/// `wait` as OpenCL takes an event wait list (NULL when empty).
fn wait_list(wait: &[cl_event]) -> (u32, *const cl_event) {
    if wait.is_empty() {
        (0, ptr::null())
    } else {
        (wait.len() as u32, wait.as_ptr())
    }
}

/// Enqueues a non-blocking read map of the first `len` bytes of `mem`
/// after `wait`, and returns the mapped pointer (valid once the queue has
/// run the map) and the map's event. `what` names the call in errors.
///
/// # Safety
/// The mapping must be unmapped (`clEnqueueUnmapMemObject`, see
/// [`unmap_output`]) before the buffer's memory is released.
pub(crate) unsafe fn map_for_reading(
    queue: &CommandQueue,
    mem: cl_mem,
    len: usize,
    wait: &[cl_event],
    what: &str,
) -> Result<(*mut u8, Event)> {
    let mut mapped: cl_mem = ptr::null_mut();
    let (n, list) = wait_list(wait);
    // SAFETY: forwarded to the caller; `mapped` receives the pointer.
    let ev = unsafe {
        opencl3::command_queue::enqueue_map_buffer(
            queue.get(),
            mem,
            CL_FALSE,
            CL_MAP_READ,
            0,
            len,
            &mut mapped,
            n,
            list,
        )
    }
    .map_err(|e| Error::cl(what, e.into()))?;
    Ok((mapped.cast(), Event::new(ev)))
}

/// Ends the read mapping `mapped` of an output used in place, whose map
/// has run: when the driver mapped the output's own block the output is
/// counted in `outputs_in_place`, otherwise (it mapped a copy of its own)
/// the bytes are copied into `bytes` when `take`. Then the unmap is
/// enqueued on `queue`; its event is returned.
///
/// # Safety
/// `mapped` is what [`map_for_reading`] returned for `mem`, covering
/// `bytes.len()` bytes, and its map has completed.
pub(crate) unsafe fn unmap_output(
    rt: &RuntimeInner,
    queue: &CommandQueue,
    mem: cl_mem,
    mapped: *mut u8,
    bytes: &mut [u8],
    take: bool,
) -> Option<Event> {
    if mapped == bytes.as_mut_ptr() {
        TransferCounters::add(&rt.transfers.outputs_in_place, 1);
    } else if take {
        let len = bytes.len();
        // SAFETY: the mapping covers the whole buffer, `len` bytes.
        bytes.copy_from_slice(unsafe { std::slice::from_raw_parts(mapped, len) });
        TransferCounters::add(&rt.transfers.bytes_to_host, len as u64);
    }
    // SAFETY: `mapped` is the pointer this buffer's map returned.
    let unmapped = unsafe {
        opencl3::command_queue::enqueue_unmap_mem_object(
            queue.get(),
            mem,
            mapped.cast::<c_void>(),
            0,
            ptr::null(),
        )
    };
    unmapped.ok().map(Event::new)
}

/// Host-to-device write on the runtime's queue; `blocking` waits for the
/// copy to finish.
///
/// # Safety
/// When not `blocking`, `data` must stay alive and unchanged until the queue
/// has executed the write.
pub(super) unsafe fn write_buffer(
    queue: &CommandQueue,
    mem: cl_mem,
    data: &[u8],
    blocking: bool,
) -> Result<()> {
    // SAFETY: forwarded to the caller.
    unsafe { enqueue_write(queue, mem, data, blocking, &[], "clEnqueueWriteBuffer") }.map(drop)
}

/// Host-to-device write of `data` after `wait`; `None` when there is
/// nothing to write. `what` names the call in errors.
///
/// # Safety
/// As [`write_buffer`].
pub(crate) unsafe fn enqueue_write(
    queue: &CommandQueue,
    mem: cl_mem,
    data: &[u8],
    blocking: bool,
    wait: &[cl_event],
    what: &str,
) -> Result<Option<Event>> {
    let flag = if blocking { CL_TRUE } else { CL_FALSE };
    // SAFETY: forwarded to the caller; a blocking write no longer reads
    // `data` once it returns.
    enqueue_transfer(data.len(), wait, what, |n, list| unsafe {
        opencl3::command_queue::enqueue_write_buffer(
            queue.get(),
            mem,
            flag,
            0,
            data.len(),
            data.as_ptr().cast(),
            n,
            list,
        )
    })
}

/// Non-blocking device-to-host read on the runtime's queue.
///
/// # Safety
/// `data` must stay alive and untouched until the queue has executed it.
pub(super) unsafe fn read_buffer(queue: &CommandQueue, mem: cl_mem, data: &mut [u8]) -> Result<()> {
    // SAFETY: forwarded to the caller.
    unsafe { enqueue_read(queue, mem, data, &[], "clEnqueueReadBuffer") }.map(drop)
}

/// Non-blocking read of `mem` into `data` after `wait`; `None` when there
/// is nothing to read. `what` names the call in errors.
///
/// # Safety
/// As [`read_buffer`].
pub(crate) unsafe fn enqueue_read(
    queue: &CommandQueue,
    mem: cl_mem,
    data: &mut [u8],
    wait: &[cl_event],
    what: &str,
) -> Result<Option<Event>> {
    let len = data.len();
    // SAFETY: forwarded to the caller.
    enqueue_transfer(len, wait, what, |n, list| unsafe {
        opencl3::command_queue::enqueue_read_buffer(
            queue.get(),
            mem,
            CL_FALSE,
            0,
            len,
            data.as_mut_ptr().cast(),
            n,
            list,
        )
    })
}

/// Runs `enqueue` (a read or a write of `len` bytes, given the wait list
/// as OpenCL takes it) unless there is nothing to move (`None`); `what`
/// names the call in errors.
fn enqueue_transfer(
    len: usize,
    wait: &[cl_event],
    what: &str,
    enqueue: impl FnOnce(u32, *const cl_event) -> std::result::Result<cl_event, i32>,
) -> Result<Option<Event>> {
    if len == 0 {
        return Ok(None);
    }
    let (n, list) = wait_list(wait);
    let ev = enqueue(n, list).map_err(|e| Error::cl(what, e.into()))?;
    Ok(Some(Event::new(ev)))
}
