//! The `tcc_runtime_api` callbacks the artifact's host code calls during
//! one entry call, and [`Session::execute_on`], which makes that call.
//!
//! A call's kernels are enqueued by the artifact through these callbacks:
//! `alloc`/`release` for temporaries from the pool, `constant` for the
//! session's uploaded constants, `view` for the arena, `launch` and
//! `copy`. Every `tcc_buffer *` the artifact gets is a `cl_mem` the runtime
//! handed out in this call, and every one it passes back is checked
//! against that set. A failing callback records its error in the call
//! context and returns a non-zero status; panics are caught so nothing
//! unwinds into C.

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::types::cl_mem;

use super::arena::Arena;
use super::lane_memory::{constant_slot, lane_parts};
use super::program::KernelSlot;
use super::specialize::{Plan, Recording};
use super::transfers::{enqueue_write, to_usize};
use super::{PendingCommand, Session, exec_error};
use crate::abi::{self, TccBuffer};
use crate::artifact::{Artifact, FunctionInfo};
use crate::buffer_pool::PoolBuffer;
use crate::error::{Error, Result};
use crate::hal::callbacks::{BufferCopy, Callbacks, api_table, out_slot};
use crate::hal::shared::{CallIo, constant_at};
use crate::program_cache::SourceKind;
use crate::timeline::CommandKind;
use crate::{RuntimeInner, TransferCounters};

impl Session {
    /// Calls the artifact's entry for `f` on the given (buffer, bytes) pairs.
    pub(crate) fn execute(&mut self, f: &FunctionInfo, io: CallIo<'_, cl_mem>) -> Result<()> {
        let rt = self.rt.inner.clone();
        self.execute_on(f, io, &rt.queue, None, 0).map(drop)
    }

    /// [`Session::execute`] for a call whose timeline is recorded when
    /// `tracing`: its constant uploads and copies are kept with their
    /// events too.
    pub(crate) fn execute_traced(
        &mut self,
        f: &FunctionInfo,
        io: CallIo<'_, cl_mem>,
        tracing: bool,
    ) -> Result<()> {
        let rt = self.rt.inner.clone();
        self.execute_with(f, io, &rt.queue, None, 0, tracing)
            .map(drop)
    }

    /// [`Session::execute`] on `queue`. With `deferred` (a session's own
    /// queue, see `async_call`), temporaries the call releases are not
    /// given back to the pool but collected there, for the caller to give
    /// back once the queue has finished the call; and buffers fresh from
    /// the pool wait for the runtime's queue first. `lane`: the compute
    /// lane whose arena and scratch constants the call uses (0: the
    /// session's own; others must have been prepared,
    /// `Session::prepare_lane`). Returns whether the call uploaded
    /// constants that other lanes share.
    pub(crate) fn execute_on(
        &mut self,
        f: &FunctionInfo,
        io: CallIo<'_, cl_mem>,
        queue: &CommandQueue,
        deferred: Option<&mut Vec<PoolBuffer>>,
        lane: usize,
    ) -> Result<bool> {
        self.execute_with(f, io, queue, deferred, lane, false)
    }

    /// [`Session::execute_on`], keeping every command's event when
    /// `tracing` (a recorded call).
    #[allow(clippy::too_many_arguments)]
    fn execute_with(
        &mut self,
        f: &FunctionInfo,
        io: CallIo<'_, cl_mem>,
        queue: &CommandQueue,
        mut deferred: Option<&mut Vec<PoolBuffer>>,
        lane: usize,
        tracing: bool,
    ) -> Result<bool> {
        let shapes = io.shapes_for(f, "this call path")?;
        let model = self.model.clone();
        let rt = self.rt.inner.clone();
        // Run-time specialization (`specialize`): of a function on a
        // symbolic dimension, on the first lane, for the OpenCL C.
        let applies = f.is_dynamic() && lane == 0 && self.format == Some(SourceKind::OpenClC);
        self.specializer
            .start_if_hot(&f.name, shapes, applies, &rt, &model);
        let (specialized, mut recording) = match self.specializer.plan(&f.name, shapes, applies) {
            Some(Plan::Specialized(kernels)) => (Some(kernels), None),
            Some(Plan::Record(key)) => (None, Some((key, Recording::new(self.kernels.len())))),
            Some(Plan::Generic) | None => (None, None),
        };
        let (arena, lane_constants, lane_kernels) = match lane_parts(&mut self.lane_memory, lane) {
            Some((arena, constants, kernels)) => (arena, Some(constants), kernels),
            None => (&mut self.arena, None, None),
        };
        let mut cx = CallContext {
            queue,
            deferred: deferred.as_deref_mut(),
            rt: &rt,
            artifact: model.artifact(),
            kernels: lane_kernels.or(specialized).unwrap_or(&self.kernels),
            recording: recording.as_mut().map(|(_, r)| r),
            constants: &mut self.constants,
            lane_constants,
            zero_constants: &mut self.zero_constants,
            uploaded_shared: false,
            arena,
            function: f,
            pending: &mut self.pending,
            tracing,
            numerics: self.numerics.as_ref().map(|check| (check, 0)),
            live: HashMap::new(),
            error: None,
        };
        // The artifact's handle of a caller's buffer is the cl_mem itself.
        let (in_ptrs, out_ptrs) = io.handles(|mem, bytes, owner| {
            cx.live.insert(mem as usize, Live { bytes, owner });
            mem as *mut TccBuffer
        });
        let api = api_table(&mut cx, shapes);
        // SAFETY: the entry point comes from the validated artifact; the
        // buffer arrays have the lengths its descriptor declares; `cx`
        // outlives the call.
        let status = unsafe { (f.entry)(&api, in_ptrs.as_ptr(), out_ptrs.as_ptr()) };
        let CallContext {
            live,
            error,
            uploaded_shared,
            ..
        } = cx;
        // Temporaries the artifact did not release go back to the pool: the
        // call is over, nothing can use them any more.
        let mut pool = rt.pool();
        for (_, l) in live {
            if let Owner::Temporary(b) = l.owner {
                match deferred.as_deref_mut() {
                    Some(list) => list.push(b),
                    None => pool.release(b),
                }
            }
        }
        drop(pool);
        match (status, error) {
            (0, None) => {
                if let Some((key, recording)) = recording {
                    self.specializer
                        .recorded(&model.artifact().kernel_names, key, &recording);
                }
                Ok(uploaded_shared)
            }
            (_, Some(e)) => Err(exec_error(f, e)),
            (s, None) => Err(exec_error(
                f,
                Error::ArtifactCall(format!(
                    "the entry returned status {s} without a failing runtime call"
                )),
            )),
        }
    }
}

/// Who owns a buffer the artifact holds in this call.
type Owner = crate::hal::shared::Owner<PoolBuffer>;

/// A buffer handed out in this call.
struct Live {
    /// Bytes the artifact may use (what it asked for, or the tensor size).
    bytes: u64,
    owner: Owner,
}

/// [`CallContext::acquire`] for a `queue` that is a session's own when
/// `deferring`.
fn acquire_for(
    rt: &RuntimeInner,
    queue: &CommandQueue,
    deferring: bool,
    bytes: u64,
) -> Result<PoolBuffer> {
    let b = rt.pool().acquire(&rt.context, bytes)?;
    if deferring {
        crate::async_call::wait_for_runtime_queue(rt, queue)?;
    }
    Ok(b)
}

/// State of one entry call; `tcc_runtime_api.ctx` points at it.
struct CallContext<'a> {
    /// The queue the call's work goes on (the runtime's, or the session's
    /// own for an asynchronous call, `Session::set_compute_queues`).
    queue: &'a CommandQueue,
    /// Set when `queue` is a session's own: released temporaries are
    /// collected here instead of going back to the pool.
    deferred: Option<&'a mut Vec<PoolBuffer>>,
    rt: &'a RuntimeInner,
    artifact: &'a Artifact,
    kernels: &'a [KernelSlot],
    /// The scalar arguments of each launch, in a call that a shape's
    /// specialization is built from (`specialize`).
    recording: Option<&'a mut Recording>,
    constants: &'a mut [Option<PoolBuffer>],
    /// On a compute lane past the first: its own copies of the all-zero
    /// (writable scratch) constants (`session::lane_memory`).
    lane_constants: Option<&'a mut [Option<PoolBuffer>]>,
    /// Per constant, whether it is all zeros (known once asked).
    zero_constants: &'a mut [Option<bool>],
    /// A constant shared by the lanes was uploaded in this call.
    uploaded_shared: bool,
    arena: &'a mut Arena,
    /// The function being called (its arena size and alignment).
    function: &'a FunctionInfo,
    pending: &'a mut Vec<PendingCommand>,
    /// The call's timeline is recorded: transfers and copies keep their
    /// events in `pending` too.
    tracing: bool,
    /// `Session::check_numerics`: what each kernel writes, and the
    /// launches of this call so far.
    numerics: Option<(&'a super::numerics::NumericsCheck, usize)>,
    live: HashMap<usize, Live>,
    /// The first failure of a runtime call.
    error: Option<Error>,
}

impl CallContext<'_> {
    /// A buffer from the pool for this call's queue: on a session's own
    /// queue it may still be in use by work on the runtime's queue (the
    /// pool's in-order rule), so the own queue waits for that first.
    fn acquire(&mut self, bytes: u64) -> Result<PoolBuffer> {
        acquire_for(self.rt, self.queue, self.deferred.is_some(), bytes)
    }

    fn lookup(&self, b: *mut TccBuffer, what: &str) -> Result<(cl_mem, u64)> {
        if b.is_null() {
            return Err(Error::InvalidInput(format!("{what} is NULL")));
        }
        self.live
            .get(&(b as usize))
            .map(|l| (b as cl_mem, l.bytes))
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{what} ({b:p}) is not a buffer the runtime handed out in this call"
                ))
            })
    }

    /// The `bytes` of `mem`, once the queue has finished everything before
    /// (`--check-numerics`).
    fn read_back(&self, mem: cl_mem, bytes: u64) -> Result<Vec<u8>> {
        let mut data = vec![0u8; to_usize(bytes, "buffer size")?];
        // SAFETY: `data` outlives the read: the queue finishes it below.
        unsafe { super::transfers::read_buffer(self.queue, mem, &mut data) }?;
        self.queue
            .finish()
            .map_err(|e| Error::cl("clFinish (check-numerics)", e))?;
        Ok(data)
    }
}

impl Callbacks for CallContext<'_> {
    fn alloc(&mut self, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        if self.rt.faults.take(crate::Fault::Alloc) {
            return Err(Error::OutOfDeviceMemory(format!(
                "{bytes} bytes requested: injected fault (Runtime::inject_fault)"
            )));
        }
        let b = self.acquire(bytes)?;
        let mem = b.mem();
        self.live.insert(
            mem as usize,
            Live {
                bytes,
                owner: Owner::Temporary(b),
            },
        );
        *out = mem as *mut TccBuffer;
        Ok(())
    }

    fn release(&mut self, b: *mut TccBuffer) -> Result<()> {
        let released =
            crate::hal::shared::release_temporary(&mut self.live, b, |l| l.owner, |l| &l.owner)?;
        if let Some(buf) = released {
            match self.deferred.as_deref_mut() {
                Some(list) => list.push(buf),
                None => self.rt.pool().release(buf),
            }
        }
        Ok(())
    }

    fn constant(&mut self, index: u32, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        let c = *constant_at(&self.artifact.constants, index)?;
        let i = index as usize;
        // A lane past the first has its own copy of writable scratch.
        let (slot, shared) = constant_slot(
            self.constants,
            self.lane_constants.as_deref_mut(),
            &mut self.zero_constants[i],
            &c,
            i,
        );
        if slot.is_none() {
            // Always a copy, also on a host-memory device: constants are not
            // all read-only (the split-K arrival counters are a zeroed
            // "constant" the kernels write and reset), and the artifact's
            // data is read-only memory shared by every session.
            let b = acquire_for(self.rt, self.queue, self.deferred.is_some(), c.bytes)?;
            // SAFETY: the artifact (and so the constant's memory) outlives
            // the session, and the session waits for the queue on drop.
            let data = unsafe { c.as_slice() };
            // SAFETY: as above.
            let event = unsafe {
                enqueue_write(
                    self.queue,
                    b.mem(),
                    data,
                    false,
                    &[],
                    "clEnqueueWriteBuffer",
                )
            }?;
            if self.tracing
                && let Some(event) = event
            {
                self.pending.push(PendingCommand::traced(
                    CommandKind::ConstantUpload(index),
                    Some(data.len() as u64),
                    event,
                ));
            }
            TransferCounters::add(&self.rt.transfers.bytes_to_device, data.len() as u64);
            *slot = Some(b);
            self.uploaded_shared |= shared;
        }
        let mem = slot.as_ref().map_or(ptr::null_mut(), PoolBuffer::mem);
        self.live.entry(mem as usize).or_insert(Live {
            bytes: c.bytes,
            owner: Owner::Constant(index),
        });
        *out = mem as *mut TccBuffer;
        Ok(())
    }

    fn view(&mut self, offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        check_view(self.function, offset, bytes)?;
        let (rt, queue, deferring) = (self.rt, self.queue, self.deferred.is_some());
        let mem = self
            .arena
            .view(offset, bytes, || acquire_for(rt, queue, deferring, bytes))?;
        self.live.entry(mem as usize).or_insert(Live {
            bytes,
            owner: Owner::Arena,
        });
        *out = mem as *mut TccBuffer;
        Ok(())
    }

    fn kernel_signature(&self, kernel: u32) -> Result<(&str, Option<usize>)> {
        let slot = crate::hal::shared::kernel_at(self.kernels, kernel)?;
        Ok((&slot.name, Some(slot.num_args as usize)))
    }

    fn dispatch(&mut self, kernel: u32, launch: abi::LaunchArgs<'_>) -> Result<()> {
        let slot = crate::hal::shared::kernel_at(self.kernels, kernel)?;
        let name = &slot.name;
        if self.rt.faults.take(crate::Fault::Launch) {
            return Err(Error::cl(
                format!("clEnqueueNDRangeKernel({name}) (injected fault, Runtime::inject_fault)"),
                opencl3::error_codes::ClError(opencl3::error_codes::CL_INVALID_COMMAND_QUEUE),
            ));
        }
        let args = launch.args;
        let global: Vec<usize> = launch
            .global
            .iter()
            .map(|&g| to_usize(g, "global size"))
            .collect::<Result<_>>()?;
        let local: Option<Vec<usize>> = launch
            .local
            .map(|l| l.iter().map(|&x| to_usize(x, "local size")).collect())
            .transpose()?;
        for (i, a) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: the union member read is the one `kind` names; every
            // value is passed by value to clSetKernelArg.
            let set = unsafe {
                match a.kind {
                    abi::TCC_ARG_BUFFER => {
                        let (mem, _) =
                            self.lookup(a.value.buffer, &format!("kernel `{name}` argument {i}"))?;
                        slot.kernel.set_arg(i, &mem)
                    }
                    abi::TCC_ARG_I32 => slot.kernel.set_arg(i, &a.value.i32),
                    abi::TCC_ARG_I64 => slot.kernel.set_arg(i, &a.value.i64),
                    abi::TCC_ARG_F32 => slot.kernel.set_arg(i, &a.value.f32),
                    k => {
                        return Err(Error::InvalidInput(format!(
                            "kernel `{name}` argument {i}: unknown arg kind {k}"
                        )));
                    }
                }
            };
            set.map_err(|e| {
                Error::cl(
                    format!(
                        "clSetKernelArg(kernel `{name}`, argument {i}, kind {})",
                        a.kind
                    ),
                    e,
                )
            })?;
        }
        if let Some(recording) = self.recording.as_deref_mut() {
            recording.note(kernel, args);
        }
        if global.contains(&0) {
            return Ok(()); // An empty NDRange does nothing.
        }
        // `--check-numerics`: the written float buffers before the launch.
        let check = self.numerics.as_mut().map(|(check, launches)| {
            *launches += 1;
            (*check, *launches)
        });
        let checked = match check {
            Some((check, launch)) => {
                let mut buffers = Vec::new();
                for &(index, float) in check.writes.get(kernel as usize).into_iter().flatten() {
                    let Some(arg) = args.get(index).filter(|a| a.kind == abi::TCC_ARG_BUFFER)
                    else {
                        continue;
                    };
                    // SAFETY: the kind says the union holds a buffer.
                    let (mem, bytes) =
                        self.lookup(unsafe { arg.value.buffer }, "checked buffer")?;
                    buffers.push((index, float, mem, self.read_back(mem, bytes)?));
                }
                Some((launch, buffers))
            }
            None => None,
        };
        let dims = global.len() as u32;
        // SAFETY: all arguments are set; the size arrays have `dims` entries.
        let event = unsafe {
            self.queue.enqueue_nd_range_kernel(
                slot.kernel.get(),
                dims,
                ptr::null(),
                global.as_ptr(),
                local.as_ref().map_or(ptr::null(), |l| l.as_ptr()),
                &[],
            )
        }
        .map_err(|e| {
            Error::cl(
                format!(
                    "clEnqueueNDRangeKernel(kernel `{name}`, global {global:?}, local {local:?})"
                ),
                e,
            )
        })?;
        if self.rt.profiling {
            self.pending.push(PendingCommand {
                kind: CommandKind::Kernel(kernel as usize),
                bytes: None,
                event,
                enqueued: self.tracing.then(std::time::Instant::now),
            });
        }
        if let Some((launch, buffers)) = checked {
            for (index, float, mem, before) in buffers {
                let after = self.read_back(mem, before.len() as u64)?;
                if let Some(found) = super::numerics::first_new_non_finite(&before, &after, float) {
                    return Err(super::numerics::non_finite_error(
                        name,
                        launch,
                        (index, float),
                        found,
                    ));
                }
            }
        }
        Ok(())
    }

    type Buffer = cl_mem;

    fn buffer(&self, handle: *mut TccBuffer, what: &str) -> Result<(cl_mem, u64)> {
        self.lookup(handle, what)
    }

    fn enqueue_copy(&mut self, copy: BufferCopy<cl_mem>) -> Result<()> {
        // SAFETY: both buffers are live and the ranges are checked.
        let ev = unsafe {
            opencl3::command_queue::enqueue_copy_buffer(
                self.queue.get(),
                copy.src,
                copy.dst,
                to_usize(copy.src_offset, "offset")?,
                to_usize(copy.dst_offset, "offset")?,
                to_usize(copy.bytes, "size")?,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| Error::cl("clEnqueueCopyBuffer", e.into()))?;
        if self.tracing {
            self.pending.push(PendingCommand::traced(
                CommandKind::Copy,
                Some(copy.bytes),
                Event::new(ev),
            ));
        } else {
            drop(Event::new(ev));
        }
        Ok(())
    }
}

/// Checks a `view(offset, bytes)` against function `f`'s arena: the
/// offset a multiple of its alignment, the range non-empty and inside.
pub(crate) fn check_view(f: &FunctionInfo, offset: u64, bytes: u64) -> Result<()> {
    if offset % f.arena_alignment != 0 {
        return Err(Error::InvalidInput(format!(
            "view offset {offset} is not a multiple of @{}'s arena alignment {}",
            f.name, f.arena_alignment
        )));
    }
    if bytes == 0
        || offset
            .checked_add(bytes)
            .is_none_or(|end| end > f.arena_bytes)
    {
        return Err(Error::InvalidInput(format!(
            "view of {bytes} bytes at offset {offset} is outside @{}'s {}-byte arena",
            f.name, f.arena_bytes
        )));
    }
    Ok(())
}

const STATUS_ERROR: i32 = 1;

/// The state of one entry call behind `tcc_runtime_api.ctx`, as the
/// callbacks' guard needs it: where the first failure is recorded.
pub(crate) trait CallState {
    fn first_error(&mut self) -> &mut Option<Error>;
}

impl CallState for CallContext<'_> {
    fn first_error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

/// What a callback returns to C: its status, or nothing (`release`).
pub(crate) trait Status {
    fn from_status(status: i32) -> Self;
}

impl Status for i32 {
    fn from_status(status: i32) -> i32 {
        status
    }
}

impl Status for () {
    fn from_status(_: i32) {}
}

/// Runs `op` on the call context behind `ctx` ([`status_of`]), as the
/// callback's return type.
pub(crate) fn guarded<C: CallState, S: Status>(
    ctx: *mut c_void,
    name: &str,
    op: impl FnOnce(&mut C) -> Result<()>,
) -> S {
    S::from_status(status_of(ctx, name, op))
}

/// Runs `op` on the call context behind `ctx`, turning errors and panics
/// into a recorded error and a non-zero status.
fn status_of<C: CallState>(
    ctx: *mut c_void,
    name: &str,
    op: impl FnOnce(&mut C) -> Result<()>,
) -> i32 {
    if ctx.is_null() {
        return STATUS_ERROR;
    }
    // SAFETY: `ctx` is the pointer the entry call put in the table (a `C`,
    // `execute_on`'s or the CUDA session's), valid for the duration of the
    // entry call; callbacks are not re-entered.
    let cx = unsafe { &mut *(ctx as *mut C) };
    let outcome = catch_unwind(AssertUnwindSafe(|| op(&mut *cx)));
    let err = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e.to_string(),
        Err(panic) => {
            let msg = crate::error::panic_message(panic.as_ref());
            format!("internal error (panic): {msg}")
        }
    };
    let first = cx.first_error();
    if first.is_none() {
        *first = Some(Error::ArtifactCall(format!(
            "runtime call {name}() failed: {err}"
        )));
    }
    STATUS_ERROR
}
