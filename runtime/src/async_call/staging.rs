//! Pinned staging for asynchronous calls on a device that copies: host
//! buffers allocated by the driver (`CL_MEM_ALLOC_HOST_PTR`) and mapped
//! once for their life, as NVIDIA's OpenCL guide recommends for
//! full-speed DMA, kept in a runtime-wide pool by capacity.

use std::ffi::c_void;
use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE, ClMem,
};
use opencl3::types::{CL_TRUE, cl_mem};
use serde::Serialize;

use crate::RuntimeInner;
use crate::error::{Error, Result};

/// A pinned host buffer (`CL_MEM_ALLOC_HOST_PTR`), mapped for its life.
pub(crate) struct StagingBuf {
    buffer: Buffer<u8>,
    /// The mapped host pointer (as an address, so the type is `Send`).
    ptr: usize,
    capacity: usize,
}

impl StagingBuf {
    pub(super) fn ptr(&self) -> *mut u8 {
        self.ptr as *mut u8
    }
}

/// Free pinned staging buffers, by capacity (powers of two).
#[derive(Default)]
pub(crate) struct StagingPool {
    free: Vec<StagingBuf>,
    stats: StagingStats,
}

/// What the pinned staging pool holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StagingStats {
    /// Staging buffers created (`CL_MEM_ALLOC_HOST_PTR` + map).
    pub allocations: u64,
    /// Staging buffers taken from the free list.
    pub reuse_hits: u64,
    /// Bytes of every staging buffer alive (free or in use).
    pub current_bytes: u64,
    /// Staging buffers in use by calls in flight.
    pub in_use: u64,
}

/// The most bytes of free staging buffers kept for reuse.
const MAX_FREE_STAGING_BYTES: usize = 1 << 30;

impl StagingPool {
    pub(crate) fn stats(&self) -> StagingStats {
        self.stats.clone()
    }

    /// A staging buffer of at least `bytes` bytes.
    pub(super) fn take(
        &mut self,
        rt: &RuntimeInner,
        queue: &CommandQueue,
        bytes: usize,
    ) -> Result<StagingBuf> {
        let capacity = bytes.max(4096).checked_next_power_of_two().unwrap_or(bytes);
        if let Some(i) = self.free.iter().position(|b| b.capacity == capacity) {
            self.stats.reuse_hits += 1;
            self.stats.in_use += 1;
            return Ok(self.free.swap_remove(i));
        }
        // SAFETY: no host pointer is passed (the driver allocates).
        let buffer = unsafe {
            Buffer::<u8>::create(
                &rt.context,
                CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                capacity,
                ptr::null_mut(),
            )
        }
        .map_err(|e| {
            Error::cl(
                format!(
                    "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR, {capacity} bytes) for pinned staging"
                ),
                e,
            )
        })?;
        let mut mapped: cl_mem = ptr::null_mut();
        // SAFETY: a blocking map of the whole new buffer; unmapped in
        // `free_all` before the buffer is released.
        let ev = unsafe {
            opencl3::command_queue::enqueue_map_buffer(
                queue.get(),
                buffer.get(),
                CL_TRUE,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                capacity,
                &mut mapped,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| Error::cl("clEnqueueMapBuffer (pinned staging)", e.into()))?;
        drop(Event::new(ev));
        if mapped.is_null() {
            return Err(Error::Unsupported(
                "the driver mapped a pinned staging buffer at NULL".into(),
            ));
        }
        self.stats.allocations += 1;
        self.stats.in_use += 1;
        self.stats.current_bytes += capacity as u64;
        Ok(StagingBuf {
            buffer,
            ptr: mapped as usize,
            capacity,
        })
    }

    /// Gives a buffer back (its call is done with it); buffers beyond
    /// [`MAX_FREE_STAGING_BYTES`] of free ones are unmapped and freed.
    pub(super) fn give_back(&mut self, buf: StagingBuf, queue: &CommandQueue) {
        self.stats.in_use = self.stats.in_use.saturating_sub(1);
        let free_bytes: usize = self.free.iter().map(|b| b.capacity).sum();
        if free_bytes + buf.capacity > MAX_FREE_STAGING_BYTES {
            self.stats.current_bytes -= buf.capacity as u64;
            unmap_staging(buf, queue);
        } else {
            self.free.push(buf);
        }
    }

    /// Unmaps and frees every free buffer.
    pub(super) fn free_all(mut self, queue: &CommandQueue) {
        for b in self.free.drain(..) {
            unmap_staging(b, queue);
        }
        let _ = queue.finish();
    }
}

fn unmap_staging(buf: StagingBuf, queue: &CommandQueue) {
    // SAFETY: `ptr` is the pointer this buffer's map returned; nothing uses
    // the buffer any more.
    let ev = unsafe {
        opencl3::command_queue::enqueue_unmap_mem_object(
            queue.get(),
            buf.buffer.get(),
            buf.ptr as *mut c_void,
            0,
            ptr::null(),
        )
    };
    if let Ok(ev) = ev {
        let ev = Event::new(ev);
        let _ = ev.wait();
    }
    drop(buf);
}

/// Bytes from or to a staging buffer: large blocks are copied by several
/// threads (one thread's memcpy, about 10 GB/s, would otherwise bound a
/// GPU's PCIe transfers, e.g. sgemm 4096³'s 192 MiB per call).
pub(super) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    const PER_THREAD: usize = 8 << 20;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(src.len() / PER_THREAD);
    if threads <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    let chunk = src.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            scope.spawn(move || d.copy_from_slice(s));
        }
    });
}
