//! The `tcc_runtime_api` callbacks of the CUDA backend and
//! `CudaSession::execute`, which calls an artifact entry with them.
//!
//! They do what the OpenCL callbacks (`session/callbacks.rs`) do, with the
//! same checks and messages, on `CUdeviceptr`s: `alloc`/`release` take
//! temporaries from the session's pool, `constant` uploads a constant on
//! its first use in the session (all-zero constants, the writable scratch
//! of split-K counters, are set with `cuMemsetD8Async` instead of
//! copied), `view` is the arena's address plus the offset, `launch` is
//! `cuLaunchKernel` on the session's stream (grid and block from
//! `launch`, the dynamic shared memory of the kernel's marker), `copy` is
//! `cuMemcpyDtoDAsync`. Every buffer the artifact holds is an opaque
//! handle of this call (`handles`). A failing callback records its error
//! and returns a non-zero status; panics are caught (`session::guarded`).

use std::ffi::c_void;

use super::driver::{CuDevicePtr, CuEvent, CuStream, Driver};
use super::handles::{HandleTable, Owner, Shared};
use super::launch::geometry;
use super::memory::{DeviceMemory, MemoryPool};
use super::session::{CudaKernel, CudaSession, TracedCommand};
use crate::abi::{self, TccBuffer};
use crate::artifact::{Artifact, FunctionInfo};
use crate::error::{Error, Result};
use crate::hal::callbacks::{BufferCopy, Callbacks, api_table, out_slot};
use crate::hal::shared::{CallIo, constant_at};
use crate::session::{CallState, check_view, exec_error};
use crate::timeline::{CommandKind, PendingTime};

impl CudaSession {
    /// Calls the artifact's entry for `f` on the given (device pointer,
    /// bytes) pairs; the work is on the session's stream when it returns.
    pub(super) fn execute(&mut self, f: &FunctionInfo, io: CallIo<'_, CuDevicePtr>) -> Result<()> {
        let shapes = io.shapes_for(f, "the CUDA driver")?;
        let model = self.model().clone();
        let inner = self.rt.inner.clone();
        let tracing = self.tracing();
        let mut cx = CudaCall {
            driver: inner.driver,
            stream: self.stream,
            profiling: inner.profiling,
            artifact: model.artifact(),
            function: f,
            kernels: &self.kernels,
            constants: &mut self.constants,
            arena: self.arena.as_ref().map(DeviceMemory::ptr),
            pool: &mut self.pool,
            spare_events: &mut self.spare_events,
            pending: &mut self.pending,
            traced: if tracing {
                Some(&mut self.traced)
            } else {
                None
            },
            table: HandleTable::new(&mut self.next_handle),
            error: None,
        };
        let (in_handles, out_handles) =
            io.handles(|ptr, bytes, owner| cx.table.issue(ptr, bytes, owner));
        let api = api_table(&mut cx, shapes);
        // SAFETY: the entry point comes from the validated artifact; the
        // handle arrays have the lengths its descriptor declares; `cx`
        // outlives the call.
        let status = unsafe { (f.entry)(&api, in_handles.as_ptr(), out_handles.as_ptr()) };
        let CudaCall {
            table, error, pool, ..
        } = cx;
        // Temporaries the artifact did not release go back to the pool:
        // the call is over, and later work on the stream runs after it.
        for memory in table.into_temporaries() {
            pool.release(memory);
        }
        match (status, error) {
            (0, None) => Ok(()),
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

/// State of one entry call; `tcc_runtime_api.ctx` points at it.
struct CudaCall<'a> {
    driver: &'static Driver,
    stream: CuStream,
    profiling: bool,
    artifact: &'a Artifact,
    /// The function being called (its arena size and alignment).
    function: &'a FunctionInfo,
    kernels: &'a [CudaKernel],
    constants: &'a mut [Option<DeviceMemory>],
    /// The session's arena (`None`: the model has no plan).
    arena: Option<CuDevicePtr>,
    pool: &'a mut MemoryPool,
    spare_events: &'a mut Vec<CuEvent>,
    pending: &'a mut Vec<(usize, CuEvent, CuEvent)>,
    /// The recorded call's commands other than kernels (`None`: the call
    /// is not recorded).
    traced: Option<&'a mut Vec<TracedCommand>>,
    table: HandleTable<'a>,
    /// The first failure of a runtime call.
    error: Option<Error>,
}

impl CallState for CudaCall<'_> {
    fn first_error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

impl Callbacks for CudaCall<'_> {
    fn alloc(&mut self, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        let memory = self.pool.acquire(self.driver, bytes)?;
        let ptr = memory.ptr();
        let handle = self.table.issue(ptr, bytes, Owner::Temporary(memory));
        *out = handle;
        Ok(())
    }

    fn release(&mut self, b: *mut TccBuffer) -> Result<()> {
        if let Some(memory) = self.table.release(b)? {
            self.pool.release(memory);
        }
        Ok(())
    }

    fn constant(&mut self, index: u32, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        let c = *constant_at(&self.artifact.constants, index)?;
        if let Some(handle) = self.table.shared(Shared::Constant(index)) {
            *out = handle;
            return Ok(());
        }
        if self.constants[index as usize].is_none() {
            let memory = self.pool.acquire(self.driver, c.bytes)?;
            // SAFETY: the artifact (and so the constant's memory) outlives
            // the session.
            let data = unsafe { c.as_slice() };
            let (driver, ptr) = (self.driver, memory.ptr());
            let bytes = Some(data.len() as u64);
            let written = if data.is_empty() {
                Ok(())
            } else if data.iter().all(|&b| b == 0) {
                // Writable scratch that starts at zero: no host copy.
                self.bracketed(CommandKind::Fill, bytes, |stream| {
                    // SAFETY: the block holds at least `data.len()` bytes.
                    let status =
                        unsafe { (driver.api.memset_d8_async)(ptr, 0, data.len(), stream) };
                    driver.check(status, || format!("cuMemsetD8Async(constant {index})"))
                })
            } else {
                let started = std::time::Instant::now();
                // SAFETY: as above; the copy reads the artifact's memory
                // before it returns (pageable memory).
                let status = unsafe {
                    (driver.api.memcpy_htod)(ptr, data.as_ptr() as *const c_void, data.len())
                };
                let done = driver.check(status, || {
                    format!("cuMemcpyHtoD(constant {index}, {} bytes)", data.len())
                });
                if done.is_ok()
                    && let Some(traced) = self.traced.as_deref_mut()
                {
                    traced.push(TracedCommand {
                        kind: CommandKind::ConstantUpload(index),
                        bytes,
                        time: PendingTime::Host(started, std::time::Instant::now()),
                    });
                }
                done
            };
            if let Err(e) = written {
                self.pool.release(memory);
                return Err(e);
            }
            self.constants[index as usize] = Some(memory);
        }
        let ptr = self.constants[index as usize]
            .as_ref()
            .map_or(0, DeviceMemory::ptr);
        let handle = self.table.issue_shared(
            Shared::Constant(index),
            ptr,
            c.bytes,
            Owner::Constant(index),
        );
        *out = handle;
        Ok(())
    }

    fn view(&mut self, offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        check_view(self.function, offset, bytes)?;
        let key = Shared::View { offset, bytes };
        if let Some(handle) = self.table.shared(key) {
            *out = handle;
            return Ok(());
        }
        // A view inside a non-empty plan: the session has the arena.
        let base = self
            .arena
            .ok_or_else(|| Error::InvalidInput(format!("@{} has no arena", self.function.name)))?;
        let handle = self
            .table
            .issue_shared(key, base + offset, bytes, Owner::Arena);
        *out = handle;
        Ok(())
    }

    fn kernel_signature(&self, kernel: u32) -> Result<(&str, Option<usize>)> {
        let k = crate::hal::shared::kernel_at(self.kernels, kernel)?;
        Ok((&k.name, Some(k.params.len())))
    }

    fn dispatch(&mut self, kernel: u32, launch: abi::LaunchArgs<'_>) -> Result<()> {
        let k = crate::hal::shared::kernel_at(self.kernels, kernel)?;
        let name = &k.name;
        let abi::LaunchArgs {
            global,
            local,
            args,
        } = launch;
        // One 8-byte slot per argument, its value in the first bytes.
        let mut slots: Vec<u64> = Vec::with_capacity(args.len());
        for (i, (a, &size)) in args.iter().zip(&k.params).enumerate() {
            // SAFETY: the union member read is the one `kind` names.
            let (value, what, bytes): (u64, &str, u32) = unsafe {
                match a.kind {
                    abi::TCC_ARG_BUFFER => {
                        let (ptr, _) = self
                            .table
                            .lookup(a.value.buffer, &format!("kernel `{name}` argument {i}"))?;
                        (ptr, "a buffer", 8)
                    }
                    abi::TCC_ARG_I32 => (slot_of(&a.value.i32.to_ne_bytes()), "an i32", 4),
                    abi::TCC_ARG_I64 => (slot_of(&a.value.i64.to_ne_bytes()), "an i64", 8),
                    abi::TCC_ARG_F32 => (slot_of(&a.value.f32.to_ne_bytes()), "an f32", 4),
                    other => {
                        return Err(Error::InvalidInput(format!(
                            "kernel `{name}` argument {i}: unknown arg kind {other}"
                        )));
                    }
                }
            };
            if bytes != size {
                return Err(Error::InvalidInput(format!(
                    "kernel `{name}` argument {i} is {what} ({bytes} bytes) but the PTX parameter has {size} bytes"
                )));
            }
            slots.push(value);
        }
        let Some(g) = geometry(name, global, local)? else {
            return Ok(()); // An empty NDRange does nothing.
        };
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| s as *mut u64 as *mut c_void)
            .collect();
        let events = if self.profiling {
            let start = take_event(self.driver, self.spare_events)?;
            let end = match take_event(self.driver, self.spare_events) {
                Ok(e) => e,
                Err(e) => {
                    self.spare_events.push(start);
                    return Err(e);
                }
            };
            Some((start, end))
        } else {
            None
        };
        let driver = self.driver;
        let recorded = |event: CuEvent| {
            // SAFETY: an event of this session, on its stream.
            let status = unsafe { (driver.api.event_record)(event, self.stream) };
            driver.check(status, || "cuEventRecord".into())
        };
        let launched = (|| {
            if let Some((start, _)) = events {
                recorded(start)?;
            }
            // SAFETY: `params` has one pointer per PTX parameter, each to
            // a slot holding a value of that parameter's size; the grid and
            // block are within CUDA's limits (`geometry`).
            let status = unsafe {
                (driver.api.launch_kernel)(
                    k.function,
                    g.grid[0],
                    g.grid[1],
                    g.grid[2],
                    g.block[0],
                    g.block[1],
                    g.block[2],
                    k.shared_bytes,
                    self.stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            driver.check(status, || {
                format!(
                    "cuLaunchKernel(kernel `{name}`, grid {:?}, block {:?}, {} bytes of dynamic shared memory)",
                    g.grid, g.block, k.shared_bytes
                )
            })?;
            if let Some((_, end)) = events {
                recorded(end)?;
            }
            Ok(())
        })();
        match (launched, events) {
            (Ok(()), Some((start, end))) => self.pending.push((kernel as usize, start, end)),
            (Err(e), events) => {
                if let Some((start, end)) = events {
                    self.spare_events.extend([start, end]);
                }
                return Err(e);
            }
            (Ok(()), None) => {}
        }
        Ok(())
    }

    type Buffer = CuDevicePtr;

    fn buffer(&self, handle: *mut TccBuffer, what: &str) -> Result<(CuDevicePtr, u64)> {
        self.table.lookup(handle, what)
    }

    fn enqueue_copy(&mut self, copy: BufferCopy<CuDevicePtr>) -> Result<()> {
        let BufferCopy {
            dst: dst_ptr,
            dst_offset,
            src: src_ptr,
            src_offset,
            bytes,
        } = copy;
        let size = usize::try_from(bytes)
            .map_err(|_| Error::InvalidInput(format!("copy of {bytes} bytes is too large")))?;
        let driver = self.driver;
        self.bracketed(CommandKind::Copy, Some(bytes), |stream| {
            // SAFETY: both buffers are live and the ranges are checked.
            let status = unsafe {
                (driver.api.memcpy_dtod_async)(
                    dst_ptr + dst_offset,
                    src_ptr + src_offset,
                    size,
                    stream,
                )
            };
            driver.check(status, || format!("cuMemcpyDtoDAsync({bytes} bytes)"))
        })
    }
}

impl CudaCall<'_> {
    /// Runs `enqueue` (work on the stream) and, when the call is recorded,
    /// brackets it with a pair of events kept as a command of `kind`.
    fn bracketed(
        &mut self,
        kind: CommandKind,
        bytes: Option<u64>,
        enqueue: impl FnOnce(CuStream) -> Result<()>,
    ) -> Result<()> {
        let Some(traced) = self.traced.as_deref_mut() else {
            return enqueue(self.stream);
        };
        let (driver, stream) = (self.driver, self.stream);
        let start = take_event(driver, self.spare_events)?;
        let end = match take_event(driver, self.spare_events) {
            Ok(e) => e,
            Err(e) => {
                self.spare_events.push(start);
                return Err(e);
            }
        };
        let record = |event: CuEvent| {
            // SAFETY: an event of this session, on its stream.
            let status = unsafe { (driver.api.event_record)(event, stream) };
            driver.check(status, || "cuEventRecord".into())
        };
        let done = record(start)
            .and_then(|()| enqueue(stream))
            .and_then(|()| record(end));
        match done {
            Ok(()) => {
                traced.push(TracedCommand {
                    kind,
                    bytes,
                    time: PendingTime::Device((start, end)),
                });
                Ok(())
            }
            Err(e) => {
                self.spare_events.extend([start, end]);
                Err(e)
            }
        }
    }
}

/// A kernel argument slot holding `bytes` (at most 8) in its first bytes.
fn slot_of(bytes: &[u8]) -> u64 {
    let mut slot = [0u8; 8];
    slot[..bytes.len()].copy_from_slice(bytes);
    u64::from_ne_bytes(slot)
}

/// An event for profiling: a spare one, or a new one.
pub(super) fn take_event(driver: &Driver, spare: &mut Vec<CuEvent>) -> Result<CuEvent> {
    if let Some(e) = spare.pop() {
        return Ok(e);
    }
    let mut event: CuEvent = std::ptr::null_mut();
    // SAFETY: the driver writes the new event's handle.
    let status = unsafe { (driver.api.event_create)(&mut event, super::driver::EVENT_DEFAULT) };
    driver.check(status, || "cuEventCreate".into())?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    #[test]
    fn argument_slots_hold_the_value_first() {
        let slot = super::slot_of(&7i32.to_ne_bytes());
        let bytes = slot.to_ne_bytes();
        assert_eq!(i32::from_ne_bytes(bytes[..4].try_into().unwrap()), 7);
        assert_eq!(&bytes[4..], &[0; 4]);
        let slot = super::slot_of(&(-2.5f32).to_ne_bytes());
        assert_eq!(
            f32::from_ne_bytes(slot.to_ne_bytes()[..4].try_into().unwrap()),
            -2.5
        );
    }
}
