//! Device memory of a CUDA session: `cuMemAlloc` blocks kept in free
//! lists by size and reused across kernels and calls; and the runtime's
//! pool of [`crate::CudaTensor`] memory ([`TensorPool`]).
//!
//! Every allocation is rounded up to 256 bytes and kept by that size
//! class; a session's calls ask for the same sizes every time, so after
//! the first call nothing is allocated. All of a session's work is on its
//! one stream, in order, so a block released during a call can serve the
//! next request at once (the work that used it runs before the work that
//! reuses it), as with OpenCL's in-order queue. The pool belongs to one
//! session and is freed when the session is dropped.

use std::collections::HashMap;

use super::driver::{CuDevicePtr, Driver};
use crate::buffer_pool::PoolStats;
use crate::error::Result;

/// Allocation granularity of the pool.
const GRANULE: u64 = 256;

/// One block of device memory, from [`MemoryPool::acquire`]. It has no
/// destructor (freeing needs the driver and the context): every path
/// gives it back with [`MemoryPool::release`], and the pool frees what it
/// holds when the session goes.
#[derive(Debug)]
pub(crate) struct DeviceMemory {
    ptr: CuDevicePtr,
    capacity: u64,
}

impl DeviceMemory {
    pub(crate) fn ptr(&self) -> CuDevicePtr {
        self.ptr
    }

    #[cfg(test)]
    pub(crate) fn for_test(ptr: CuDevicePtr, capacity: u64) -> Self {
        DeviceMemory { ptr, capacity }
    }
}

/// Free lists of device memory by size class, with counters.
#[derive(Default)]
pub(crate) struct MemoryPool {
    free: HashMap<u64, Vec<CuDevicePtr>>,
    stats: PoolStats,
}

impl MemoryPool {
    /// A block of at least `bytes` bytes (at least one granule).
    pub(crate) fn acquire(&mut self, driver: &Driver, bytes: u64) -> Result<DeviceMemory> {
        let capacity = size_class(bytes).ok_or_else(|| {
            crate::Error::OutOfDeviceMemory(format!("{bytes} bytes requested: too large"))
        })?;
        let ptr = match self.free.get_mut(&capacity).and_then(Vec::pop) {
            Some(ptr) => {
                self.stats.reuse_hits += 1;
                ptr
            }
            None => {
                let size = usize::try_from(capacity).map_err(|_| {
                    crate::Error::OutOfDeviceMemory(format!("{bytes} bytes requested: too large"))
                })?;
                let mut ptr: CuDevicePtr = 0;
                // SAFETY: the driver writes the new allocation's address.
                let status = unsafe { (driver.api.mem_alloc)(&mut ptr, size) };
                driver.check(status, || format!("cuMemAlloc({capacity} bytes)"))?;
                self.stats.allocations += 1;
                self.stats.current_bytes += capacity;
                self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.current_bytes);
                ptr
            }
        };
        self.stats.in_use_bytes += capacity;
        self.stats.peak_in_use_bytes = self.stats.peak_in_use_bytes.max(self.stats.in_use_bytes);
        Ok(DeviceMemory { ptr, capacity })
    }

    /// Whether a request of `bytes` would be served from a free list.
    pub(crate) fn has_free(&self, bytes: u64) -> bool {
        size_class(bytes).is_some_and(|c| self.free.get(&c).is_some_and(|l| !l.is_empty()))
    }

    /// Frees a block in use at once (`cuMemFree`) instead of keeping it.
    pub(crate) fn free_now(&mut self, driver: &Driver, memory: DeviceMemory) {
        // SAFETY: the block came from cuMemAlloc and its user is done.
        unsafe { (driver.api.mem_free)(memory.ptr) };
        self.stats.in_use_bytes = self.stats.in_use_bytes.saturating_sub(memory.capacity);
        self.stats.current_bytes = self.stats.current_bytes.saturating_sub(memory.capacity);
    }

    /// Gives a block back for later requests of its size class.
    pub(crate) fn release(&mut self, memory: DeviceMemory) {
        self.stats.in_use_bytes = self.stats.in_use_bytes.saturating_sub(memory.capacity);
        self.free
            .entry(memory.capacity)
            .or_default()
            .push(memory.ptr);
    }

    pub(crate) fn stats(&self) -> PoolStats {
        self.stats.clone()
    }

    /// Frees every block on the free lists (the session's context must be
    /// current and its stream idle).
    pub(crate) fn free_all(&mut self, driver: &Driver) {
        for (capacity, list) in self.free.drain() {
            for ptr in list {
                // SAFETY: `ptr` came from cuMemAlloc and is not in use.
                unsafe { (driver.api.mem_free)(ptr) };
                self.stats.current_bytes = self.stats.current_bytes.saturating_sub(capacity);
            }
        }
    }
}

/// The memory of a runtime's [`crate::CudaTensor`]s (calls' outputs,
/// uploads, copies): a dropped tensor's block is kept by size class for
/// the next tensor of that size, so that a loop of calls on device memory
/// (a decoder's steps, each handing its cache to the next as inputs and
/// getting a new one back) stops calling `cuMemAlloc` and `cuMemFree`
/// after its first steps. Both cost tens to hundreds of microseconds for
/// tensors of megabytes, and `cuMemFree` waits for the device: GPT-2
/// small's one-token step at batch 8 (24 cache tensors of 3 MiB) spent
/// more time in them than in its kernels.
///
/// Unlike a session's blocks, a tensor outlives the call that made it and
/// its address is the caller's to use (a DLPack consumer's kernels on its
/// own streams), so a block given back is reused only once the context
/// has been synchronized since (`cuCtxSynchronize`, once per run of reuses
/// after any give-back): the guarantee `cuMemFree`'s implicit
/// synchronization gave. When `cuMemAlloc` runs out of memory, the free
/// blocks are freed and it is tried once more. The runtime frees what the
/// pool holds when it is dropped, or on
/// [`crate::CudaRuntime::release_cached_memory`].
#[derive(Default)]
pub(crate) struct TensorPool {
    blocks: MemoryPool,
    /// A block was given back since the context was last synchronized.
    unsynchronized: bool,
}

impl TensorPool {
    /// A block of at least `bytes` bytes (the context must be current).
    pub(crate) fn acquire(&mut self, driver: &Driver, bytes: u64) -> Result<DeviceMemory> {
        if self.blocks.has_free(bytes) {
            self.synchronize(driver)?;
        }
        match self.blocks.acquire(driver, bytes) {
            Err(crate::Error::OutOfDeviceMemory(_)) if self.holds_free_blocks() => {
                self.free_all(driver)?;
                self.blocks.acquire(driver, bytes)
            }
            other => other,
        }
    }

    /// Gives a tensor's block back, for a later tensor of its size class.
    pub(crate) fn release(&mut self, memory: DeviceMemory) {
        self.blocks.release(memory);
        self.unsynchronized = true;
    }

    /// Frees a tensor's block at once (`cuMemFree`, which waits for the
    /// device): one whose address left tcc's hands (an exported DLPack
    /// tensor, which its consumer deletes).
    pub(crate) fn free(&mut self, driver: &Driver, memory: DeviceMemory) {
        self.blocks.free_now(driver, memory);
    }

    fn holds_free_blocks(&self) -> bool {
        let stats = self.blocks.stats();
        stats.current_bytes > stats.in_use_bytes
    }

    fn synchronize(&mut self, driver: &Driver) -> Result<()> {
        if self.unsynchronized {
            // SAFETY: the context is current (every caller makes it so).
            let status = unsafe { (driver.api.ctx_synchronize)() };
            driver.check(status, || "cuCtxSynchronize".into())?;
            self.unsynchronized = false;
        }
        Ok(())
    }

    /// Frees every free block (the context must be current), after
    /// synchronizing it if a block came back since it last was.
    pub(crate) fn free_all(&mut self, driver: &Driver) -> Result<()> {
        if self.holds_free_blocks() {
            self.synchronize(driver)?;
            self.blocks.free_all(driver);
        }
        Ok(())
    }

    pub(crate) fn stats(&self) -> PoolStats {
        self.blocks.stats()
    }
}

/// `bytes` rounded up to the granule (at least one); `None` on overflow.
fn size_class(bytes: u64) -> Option<u64> {
    Some(bytes.max(1).checked_add(GRANULE - 1)? / GRANULE * GRANULE)
}

#[cfg(test)]
mod tests {
    #[test]
    fn size_classes_round_up_to_the_granule() {
        use super::size_class;
        // Whole granules, not powers of two (4097 bytes take 4352, not 8192).
        let cases = [
            (0, Some(256)),
            (1, Some(256)),
            (256, Some(256)),
            (257, Some(512)),
            (4097, Some(4352)),
            (u64::MAX, None),
        ];
        for (bytes, class) in cases {
            assert_eq!(size_class(bytes), class, "{bytes} bytes");
        }
    }
}
