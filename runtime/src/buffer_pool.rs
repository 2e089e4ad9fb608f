//! A pool of OpenCL buffers reused across kernels and calls.
//!
//! Requests are rounded up to a size class (the next power of two, at least
//! `MIN_SIZE_CLASS` bytes, capped at the device's maximum allocation) and a
//! released buffer waits in its class's free list for the next request of
//! that class. Handing a released buffer to the next user without waiting
//! is safe because every user enqueues on the runtime's single in-order
//! queue: later commands run after the earlier ones that used the buffer.

use std::collections::BTreeMap;

use opencl3::context::Context;
use opencl3::error_codes::{
    CL_INVALID_BUFFER_SIZE, CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY,
    CL_OUT_OF_RESOURCES,
};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::cl_mem;
use serde::Serialize;

use crate::error::{Error, Result};

/// Smallest size class, in bytes.
pub const MIN_SIZE_CLASS: u64 = 256;

/// The size class serving a request of `bytes`: the next power of two of
/// at least `MIN_SIZE_CLASS`, or `None` if that overflows.
pub fn size_class(bytes: u64) -> Option<u64> {
    bytes.max(MIN_SIZE_CLASS).checked_next_power_of_two()
}

/// Pool counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolStats {
    /// Buffers created with the driver (`clCreateBuffer`).
    pub allocations: u64,
    /// Requests served from a free list.
    pub reuse_hits: u64,
    /// Bytes of device memory held by the pool now (in use + free lists).
    pub current_bytes: u64,
    /// The most `current_bytes` has been.
    pub peak_bytes: u64,
    /// Bytes handed out and not yet released.
    pub in_use_bytes: u64,
    /// The most `in_use_bytes` has been.
    pub peak_in_use_bytes: u64,
}

/// A buffer from the pool; give it back with `BufferPool::release`.
/// Dropping it instead frees the device memory.
#[derive(Debug)]
pub struct PoolBuffer {
    buffer: Buffer<u8>,
    class: u64,
}

impl PoolBuffer {
    /// The OpenCL handle.
    pub fn mem(&self) -> cl_mem {
        self.buffer.get()
    }

    /// Usable size in bytes (the size class).
    pub fn capacity(&self) -> u64 {
        self.class
    }

    /// The bytes `[offset, offset + bytes)` as an OpenCL sub-buffer; the
    /// error is the OpenCL status (`CL_MISALIGNED_SUB_BUFFER_OFFSET` when
    /// `offset` is not a multiple of the device's base address alignment).
    pub fn sub_buffer(&self, offset: u64, bytes: u64) -> std::result::Result<Buffer<u8>, i32> {
        let (origin, count) = match (usize::try_from(offset), usize::try_from(bytes)) {
            (Ok(o), Ok(c)) if offset.checked_add(bytes).is_some_and(|e| e <= self.class) => (o, c),
            _ => return Err(CL_INVALID_BUFFER_SIZE),
        };
        // SAFETY: the region lies inside this buffer (checked above).
        unsafe {
            self.buffer
                .create_sub_buffer(CL_MEM_READ_WRITE, origin, count)
        }
        .map_err(|e| e.0)
    }
}

/// The pool. Not synchronised itself: the runtime keeps it in a mutex.
#[derive(Debug)]
pub struct BufferPool {
    free: BTreeMap<u64, Vec<Buffer<u8>>>,
    max_alloc: u64,
    stats: PoolStats,
}

impl BufferPool {
    /// `max_alloc` is the device's `CL_DEVICE_MAX_MEM_ALLOC_SIZE`.
    pub fn new(max_alloc: u64) -> Self {
        BufferPool {
            free: BTreeMap::new(),
            max_alloc,
            stats: PoolStats::default(),
        }
    }

    /// The size class used for a request of `bytes` on this device.
    pub fn class_for(&self, bytes: u64) -> Result<u64> {
        if bytes > self.max_alloc {
            return Err(Error::OutOfDeviceMemory(format!(
                "a buffer of {bytes} bytes exceeds the device's largest allocation \
                 (CL_DEVICE_MAX_MEM_ALLOC_SIZE = {} bytes)",
                self.max_alloc
            )));
        }
        Ok(size_class(bytes).map_or(self.max_alloc, |c| c.min(self.max_alloc)))
    }

    /// A buffer of at least `bytes` bytes: reused if one of its class is
    /// free, else newly created. On allocation failure the free lists are
    /// dropped and the allocation is tried once more.
    pub fn acquire(&mut self, context: &Context, bytes: u64) -> Result<PoolBuffer> {
        let class = self.class_for(bytes)?;
        self.take_or_create(context, bytes, class)
    }

    /// A buffer of exactly `bytes` bytes (a session's arena), reused from
    /// the free list of that size when there is one. Released like any
    /// other buffer.
    pub fn acquire_exact(&mut self, context: &Context, bytes: u64) -> Result<PoolBuffer> {
        let class = bytes.max(1);
        self.class_for(class)?;
        self.take_or_create(context, bytes, class)
    }

    fn take_or_create(&mut self, context: &Context, bytes: u64, class: u64) -> Result<PoolBuffer> {
        if let Some(buffer) = self.free.get_mut(&class).and_then(Vec::pop) {
            self.stats.reuse_hits += 1;
            self.account_in_use(class as i128);
            return Ok(PoolBuffer { buffer, class });
        }
        let buffer = match Self::create(context, class) {
            Ok(b) => b,
            Err(code) if is_out_of_memory(code) => {
                self.trim();
                Self::create(context, class).map_err(|code| self.oom_error(bytes, class, code))?
            }
            Err(code) => {
                return Err(Error::cl(
                    format!("clCreateBuffer({class} bytes)"),
                    code.into(),
                ));
            }
        };
        self.stats.allocations += 1;
        self.stats.current_bytes += class;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.current_bytes);
        self.account_in_use(class as i128);
        Ok(PoolBuffer { buffer, class })
    }

    /// Returns a buffer to its free list.
    pub fn release(&mut self, buffer: PoolBuffer) {
        self.account_in_use(-(buffer.class as i128));
        self.free
            .entry(buffer.class)
            .or_default()
            .push(buffer.buffer);
    }

    /// Frees every buffer waiting in a free list.
    pub fn trim(&mut self) {
        let freed: u64 = self
            .free
            .iter()
            .map(|(class, v)| class * v.len() as u64)
            .sum();
        self.free.clear();
        self.stats.current_bytes -= freed;
    }

    pub fn stats(&self) -> PoolStats {
        self.stats.clone()
    }

    fn account_in_use(&mut self, delta: i128) {
        self.stats.in_use_bytes = (self.stats.in_use_bytes as i128 + delta).max(0) as u64;
        self.stats.peak_in_use_bytes = self.stats.peak_in_use_bytes.max(self.stats.in_use_bytes);
    }

    fn create(context: &Context, class: u64) -> std::result::Result<Buffer<u8>, i32> {
        let size = usize::try_from(class).map_err(|_| CL_INVALID_BUFFER_SIZE)?;
        // SAFETY: no host pointer is passed, so the driver owns the memory.
        unsafe { Buffer::<u8>::create(context, CL_MEM_READ_WRITE, size, std::ptr::null_mut()) }
            .map_err(|e| e.0)
    }

    fn oom_error(&self, bytes: u64, class: u64, code: i32) -> Error {
        Error::OutOfDeviceMemory(format!(
            "allocating {bytes} bytes (size class {class}) failed with {} while {} bytes are in use \
             and {} held by the pool",
            opencl3::error_codes::ClError(code),
            self.stats.in_use_bytes,
            self.stats.current_bytes
        ))
    }
}

/// Whether an OpenCL error code means the device ran out of memory.
pub fn is_out_of_memory(code: i32) -> bool {
    matches!(
        code,
        CL_MEM_OBJECT_ALLOCATION_FAILURE
            | CL_OUT_OF_RESOURCES
            | CL_OUT_OF_HOST_MEMORY
            | CL_INVALID_BUFFER_SIZE
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes() {
        assert_eq!(size_class(0), Some(256));
        assert_eq!(size_class(1), Some(256));
        assert_eq!(size_class(256), Some(256));
        assert_eq!(size_class(257), Some(512));
        assert_eq!(size_class(4000), Some(4096));
        assert_eq!(size_class(1 << 30), Some(1 << 30));
        assert_eq!(size_class((1 << 30) + 1), Some(1 << 31));
        assert_eq!(size_class(u64::MAX), None);
    }

    #[test]
    fn classes_capped_by_device_limit() {
        let pool = BufferPool::new(3000);
        assert_eq!(pool.class_for(100).unwrap(), 256);
        assert_eq!(pool.class_for(2100).unwrap(), 3000);
        let e = pool.class_for(3001).unwrap_err().to_string();
        assert!(
            e.contains("out of device memory") && e.contains("3001 bytes"),
            "{e}"
        );
    }
}
