//! The byte storage of a [`HostTensor`](crate::HostTensor): either a `Vec<u8>`
//! handed in by the caller, or a block the runtime allocated itself aligned
//! to [`HOST_ALIGN`] bytes.
//!
//! The alignment is what lets a device whose memory is host memory (a CPU
//! OpenCL device such as PoCL) use the bytes in place: OpenCL's
//! `CL_MEM_USE_HOST_PTR` wants pointers aligned to the device's
//! `CL_DEVICE_MEM_BASE_ADDR_ALIGN` (128 bytes on PoCL), and a `Vec<u8>` is
//! only aligned to whatever `malloc` returns (16 bytes, at an offset of 16
//! into a page for large blocks). Tensors the runtime creates (call
//! outputs, `.npy` files it reads) are aligned; a `Vec<u8>` from the caller
//! is kept as it is and used in place when it happens to be aligned.
//!
//! `HostBytes` dereferences to `[u8]`, so code that reads or writes
//! `tensor.bytes` as a slice works with either kind.

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The alignment of blocks the runtime allocates for host tensors: a page,
/// which covers every device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN` we know of
/// (PoCL 128 B, NVIDIA 512 B, Intel's zero-copy rule 4096 B).
pub const HOST_ALIGN: usize = 4096;

/// Owned bytes of a host tensor (see the module documentation).
pub struct HostBytes(Storage);

enum Storage {
    /// The caller's vector, unchanged.
    Vec(Vec<u8>),
    /// `len` bytes at `ptr`, allocated with `Layout(len, HOST_ALIGN)`
    /// (never empty: an empty tensor is an empty `Vec`).
    Aligned { ptr: NonNull<u8>, len: usize },
    /// `len` bytes a driver allocated (CUDA's page-locked host memory,
    /// which its copies move by DMA without waiting), given back to the
    /// driver by `free` when dropped.
    Driver {
        ptr: NonNull<u8>,
        len: usize,
        free: Box<dyn Fn(*mut u8) + Send + Sync>,
    },
}

// SAFETY: `Aligned` owns its block exclusively, like a `Vec<u8>`.
unsafe impl Send for HostBytes {}
// SAFETY: shared access only reads.
unsafe impl Sync for HostBytes {}

impl HostBytes {
    /// `len` zero bytes, aligned to [`HOST_ALIGN`]. Large blocks come
    /// straight from the kernel as zero pages, so this costs no writes.
    pub fn zeroed(len: usize) -> Self {
        if len == 0 {
            return HostBytes(Storage::Vec(Vec::new()));
        }
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size; the block is zeroed.
        let ptr = unsafe { alloc_zeroed(layout) };
        match NonNull::new(ptr) {
            Some(ptr) => HostBytes(Storage::Aligned { ptr, len }),
            None => std::alloc::handle_alloc_error(layout),
        }
    }

    /// A copy of `bytes`, aligned to [`HOST_ALIGN`].
    pub fn copy_aligned(bytes: &[u8]) -> Self {
        let len = bytes.len();
        if len == 0 {
            return HostBytes(Storage::Vec(Vec::new()));
        }
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size; every byte of the block is
        // written before it is used.
        let ptr = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: both ranges are `len` bytes and distinct allocations.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.as_ptr(), len) };
        HostBytes(Storage::Aligned { ptr, len })
    }

    /// `len` bytes at `ptr` that a driver allocated, aligned to
    /// [`HOST_ALIGN`] and pinned (page-locked); `free(ptr)` gives them back
    /// when the bytes are dropped.
    ///
    /// # Safety
    /// `ptr` must point to `len` (> 0) initialised bytes, aligned to
    /// [`HOST_ALIGN`], owned by the result until `free` is called with it.
    pub(crate) unsafe fn from_driver(
        ptr: NonNull<u8>,
        len: usize,
        free: Box<dyn Fn(*mut u8) + Send + Sync>,
    ) -> Self {
        debug_assert!(len > 0 && (ptr.as_ptr() as usize).is_multiple_of(HOST_ALIGN));
        HostBytes(Storage::Driver { ptr, len, free })
    }

    /// Whether the bytes are a driver's page-locked memory (see
    /// [`crate::hal::Device::staging`]): its copies from and to them need
    /// no staging of their own.
    pub fn is_pinned(&self) -> bool {
        matches!(self.0, Storage::Driver { .. })
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, HOST_ALIGN).expect("a tensor larger than the address space")
    }

    /// Whether the bytes start at a multiple of `align` (a power of two).
    pub fn is_aligned_to(&self, align: usize) -> bool {
        (self.as_ptr() as usize) % align.max(1) == 0
    }

    /// Whether the runtime allocated these bytes itself, aligned to
    /// [`HOST_ALIGN`] (`false`: the caller's `Vec`).
    pub fn is_runtime_allocated(&self) -> bool {
        matches!(self.0, Storage::Aligned { .. } | Storage::Driver { .. })
    }

    /// The bytes as a `Vec<u8>`: the caller's vector back, or a copy of an
    /// aligned block.
    pub fn into_vec(mut self) -> Vec<u8> {
        match &mut self.0 {
            Storage::Vec(v) => std::mem::take(v),
            Storage::Aligned { .. } | Storage::Driver { .. } => self.to_vec(),
        }
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        match &self.0 {
            // SAFETY: allocated in `allocate` with exactly this layout.
            Storage::Aligned { ptr, len } => unsafe { dealloc(ptr.as_ptr(), Self::layout(*len)) },
            Storage::Driver { ptr, free, .. } => free(ptr.as_ptr()),
            Storage::Vec(_) => {}
        }
    }
}

impl Deref for HostBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Storage::Vec(v) => v,
            // SAFETY: `len` initialised bytes owned by `self`.
            Storage::Aligned { ptr, len } | Storage::Driver { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl DerefMut for HostBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Storage::Vec(v) => v,
            // SAFETY: as in `deref`, and `&mut self` is exclusive.
            Storage::Aligned { ptr, len } | Storage::Driver { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

impl Clone for HostBytes {
    /// Clones keep the alignment of runtime-allocated bytes (a clone of
    /// pinned bytes is ordinary aligned memory).
    fn clone(&self) -> Self {
        match &self.0 {
            Storage::Vec(v) => HostBytes(Storage::Vec(v.clone())),
            Storage::Aligned { .. } | Storage::Driver { .. } => Self::copy_aligned(self),
        }
    }
}

impl From<Vec<u8>> for HostBytes {
    fn from(v: Vec<u8>) -> Self {
        HostBytes(Storage::Vec(v))
    }
}

impl From<HostBytes> for Vec<u8> {
    fn from(b: HostBytes) -> Self {
        b.into_vec()
    }
}

impl fmt::Debug for HostBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for HostBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for HostBytes {}

impl PartialEq<[u8]> for HostBytes {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<&[u8]> for HostBytes {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl PartialEq<Vec<u8>> for HostBytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for HostBytes {
    fn eq(&self, other: &[u8; N]) -> bool {
        **self == other[..]
    }
}

impl PartialEq<HostBytes> for Vec<u8> {
    fn eq(&self, other: &HostBytes) -> bool {
        **self == **other
    }
}

impl PartialEq<HostBytes> for [u8] {
    fn eq(&self, other: &HostBytes) -> bool {
        *self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_blocks_are_aligned_and_behave_like_vectors() {
        let z = HostBytes::zeroed(1000);
        assert!(z.is_aligned_to(HOST_ALIGN) && z.is_runtime_allocated());
        assert_eq!(z.len(), 1000);
        assert!(z.iter().all(|&b| b == 0));
        let mut c = HostBytes::copy_aligned(&[1, 2, 3]);
        assert!(c.is_aligned_to(HOST_ALIGN));
        c[1] = 9;
        assert_eq!(c, vec![1, 9, 3]);
        assert_eq!(c, [1u8, 9, 3]);
        let d = c.clone();
        assert!(d.is_aligned_to(HOST_ALIGN) && d == c);
        assert_eq!(d.into_vec(), vec![1, 9, 3]);
        assert_eq!(format!("{c:?}"), "[1, 9, 3]");
        let e = HostBytes::zeroed(0);
        assert!(e.is_empty());
    }

    #[test]
    fn vectors_are_kept_as_they_are() {
        let v = vec![5u8; 10];
        let p = v.as_ptr();
        let b = HostBytes::from(v);
        assert!(!b.is_runtime_allocated());
        assert_eq!(b.as_ptr(), p);
        let back = b.into_vec();
        assert_eq!(back.as_ptr(), p, "into_vec gives the same vector back");
    }

    #[test]
    fn driver_memory_is_given_back_once_and_clones_are_ordinary() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let layout = Layout::from_size_align(100, HOST_ALIGN).unwrap();
        // SAFETY: a non-empty layout; the block is zeroed.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).unwrap();
        let freed = Arc::new(AtomicUsize::new(0));
        let counter = freed.clone();
        let free = Box::new(move |p| {
            counter.fetch_add(1, Ordering::SeqCst);
            // SAFETY: the block allocated above, with its layout.
            unsafe { dealloc(p, layout) };
        });
        // SAFETY: 100 zeroed bytes aligned to HOST_ALIGN, freed by `free`.
        let mut b = unsafe { HostBytes::from_driver(ptr, 100, free) };
        assert!(b.is_pinned() && b.is_runtime_allocated() && b.len() == 100);
        b[7] = 3;
        let c = b.clone();
        assert!(!c.is_pinned() && c == b);
        assert_eq!(b.clone().into_vec()[7], 3);
        drop(b);
        assert_eq!(freed.load(Ordering::SeqCst), 1);
        drop(c);
        assert_eq!(freed.load(Ordering::SeqCst), 1);
    }
}

/// Output blocks a caller handed back (`Session::recycle`,
/// `CudaSession::recycle`), reused by later calls' outputs of the same
/// size instead of fresh memory. Every byte of an output is written by the
/// call, so a recycled block serves as well as fresh zeroed memory, and
/// its pages are already mapped (a fresh 8 MiB block costs 2048 page
/// faults on its first write).
#[derive(Default)]
pub(crate) struct SpareOutputs(Vec<HostBytes>);

impl SpareOutputs {
    /// The most blocks kept.
    const MAX: usize = 16;

    /// A block of `size` bytes: a recycled one when there is, else fresh.
    pub(crate) fn take(&mut self, size: usize) -> HostBytes {
        match self.0.iter().position(|b| b.len() == size) {
            Some(index) => self.0.swap_remove(index),
            None => HostBytes::zeroed(size),
        }
    }

    /// Keeps the runtime-allocated blocks of `outputs`, up to a few.
    pub(crate) fn recycle(&mut self, outputs: Vec<crate::HostTensor>) {
        for tensor in outputs {
            if self.0.len() < Self::MAX
                && tensor.bytes.is_runtime_allocated()
                && !tensor.bytes.is_empty()
            {
                self.0.push(tensor.bytes);
            }
        }
    }
}
