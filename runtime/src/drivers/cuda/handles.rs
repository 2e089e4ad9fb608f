//! The `tcc_buffer *` handles of one entry call on the CUDA backend.
//!
//! The artifact never sees a device pointer: a view of the arena starts
//! at the arena's own address (`base + 0`), so raw pointers could not tell
//! a view from its parent, nor the release of one from the other. Each
//! buffer handed out gets an opaque handle from a counter the session
//! keeps across calls (so a handle kept from an earlier call is never
//! valid again), and every handle the artifact passes back is looked up
//! in this call's table, which knows its device pointer, its size and who
//! owns it. The checks and messages are the OpenCL path's
//! (`session/callbacks.rs`).

use std::collections::HashMap;

use super::driver::CuDevicePtr;
use super::memory::DeviceMemory;
use crate::abi::TccBuffer;
use crate::error::{Error, Result};

/// Who owns a buffer the artifact holds in this call.
pub(crate) type Owner = crate::hal::shared::Owner<DeviceMemory>;

/// The same buffer asked for again in one call gets the same handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Shared {
    Constant(u32),
    View { offset: u64, bytes: u64 },
}

struct Entry {
    ptr: CuDevicePtr,
    bytes: u64,
    owner: Owner,
}

/// The handles of one call.
pub(crate) struct HandleTable<'a> {
    /// The session's handle counter: the next handle is `(*next + 1) * 16`.
    next: &'a mut u64,
    live: HashMap<usize, Entry>,
    shared: HashMap<Shared, usize>,
}

impl<'a> HandleTable<'a> {
    pub(crate) fn new(next: &'a mut u64) -> Self {
        HandleTable {
            next,
            live: HashMap::new(),
            shared: HashMap::new(),
        }
    }

    /// A new handle for `bytes` bytes at `ptr`, owned by `owner`.
    pub(crate) fn issue(&mut self, ptr: CuDevicePtr, bytes: u64, owner: Owner) -> *mut TccBuffer {
        *self.next = self.next.wrapping_add(1).max(1);
        // Non-null and pointer-aligned; never dereferenced by anyone.
        let handle = (*self.next as usize).wrapping_mul(16).max(16);
        self.live.insert(handle, Entry { ptr, bytes, owner });
        handle as *mut TccBuffer
    }

    /// The handle of `key` issued earlier in this call, if any.
    pub(crate) fn shared(&self, key: Shared) -> Option<*mut TccBuffer> {
        self.shared.get(&key).map(|&h| h as *mut TccBuffer)
    }

    /// [`Self::issue`] for a buffer that later requests of `key` share.
    pub(crate) fn issue_shared(
        &mut self,
        key: Shared,
        ptr: CuDevicePtr,
        bytes: u64,
        owner: Owner,
    ) -> *mut TccBuffer {
        let handle = self.issue(ptr, bytes, owner);
        self.shared.insert(key, handle as usize);
        handle
    }

    /// The device pointer and size behind `handle`; `what` names it in the
    /// error ("copy source").
    pub(crate) fn lookup(&self, handle: *mut TccBuffer, what: &str) -> Result<(CuDevicePtr, u64)> {
        if handle.is_null() {
            return Err(Error::InvalidInput(format!("{what} is NULL")));
        }
        self.live
            .get(&(handle as usize))
            .map(|e| (e.ptr, e.bytes))
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{what} ({handle:p}) is not a buffer the runtime handed out in this call"
                ))
            })
    }

    /// Takes back a temporary: its memory, for the pool. NULL is allowed
    /// (nothing); anything but a live temporary is refused.
    pub(crate) fn release(&mut self, handle: *mut TccBuffer) -> Result<Option<DeviceMemory>> {
        crate::hal::shared::release_temporary(&mut self.live, handle, |e| e.owner, |e| &e.owner)
    }

    /// The temporaries the artifact did not release (the call is over).
    pub(crate) fn into_temporaries(self) -> Vec<DeviceMemory> {
        self.live
            .into_values()
            .filter_map(|e| match e.owner {
                Owner::Temporary(m) => Some(m),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_and_their_arena_get_distinct_handles() {
        let mut next = 0;
        let mut table = HandleTable::new(&mut next);
        let whole = table.issue_shared(
            Shared::View {
                offset: 0,
                bytes: 8192,
            },
            0x7000_0000,
            8192,
            Owner::Arena,
        );
        let first = table.issue_shared(
            Shared::View {
                offset: 0,
                bytes: 4096,
            },
            0x7000_0000,
            4096,
            Owner::Arena,
        );
        assert_ne!(whole, first);
        assert_eq!(table.lookup(whole, "a").unwrap(), (0x7000_0000, 8192));
        assert_eq!(table.lookup(first, "b").unwrap(), (0x7000_0000, 4096));
        assert_eq!(
            table.shared(Shared::View {
                offset: 0,
                bytes: 4096
            }),
            Some(first)
        );
        assert!(!whole.is_null() && !first.is_null());
    }

    #[test]
    fn only_handles_of_this_call_are_valid() {
        let mut next = 0;
        let old = {
            let mut table = HandleTable::new(&mut next);
            table.issue(0x1000, 4, Owner::Io("input 0".into()))
        };
        let mut table = HandleTable::new(&mut next);
        let new = table.issue(0x1000, 4, Owner::Io("input 0".into()));
        assert_ne!(old, new, "handles are not reused across calls");
        let e = table
            .lookup(old, "kernel `k` argument 0")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("kernel `k` argument 0 (0x")
                && e.ends_with("is not a buffer the runtime handed out in this call"),
            "{e}"
        );
        let e = table
            .lookup(0x1000 as *mut TccBuffer, "copy source")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a buffer the runtime handed out"), "{e}");
        let e = table
            .lookup(std::ptr::null_mut(), "copy destination")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "copy destination is NULL");
    }

    #[test]
    fn only_temporaries_can_be_released() {
        let mut next = 0;
        let mut table = HandleTable::new(&mut next);
        let input = table.issue(0x1000, 4, Owner::Io("input 0".into()));
        let constant = table.issue(0x2000, 4, Owner::Constant(3));
        let view = table.issue(0x3000, 4, Owner::Arena);
        let temp = table.issue(
            0x4000,
            4,
            Owner::Temporary(DeviceMemory::for_test(0x4000, 256)),
        );
        for (handle, what) in [
            (input, "input 0"),
            (constant, "constant 3"),
            (view, "a view of the arena"),
        ] {
            let e = table.release(handle).unwrap_err().to_string();
            assert!(
                e.ends_with(&format!(
                    "is {what}; only buffers from alloc() may be released"
                )),
                "{e}"
            );
        }
        assert!(table.release(std::ptr::null_mut()).unwrap().is_none());
        let memory = table
            .release(temp)
            .unwrap()
            .expect("the temporary's memory");
        assert_eq!(memory.ptr(), 0x4000);
        let e = table.release(temp).unwrap_err().to_string();
        assert!(
            e.contains("was not handed out by alloc() in this call"),
            "{e}"
        );
        assert!(
            table.lookup(temp, "x").is_err(),
            "a released handle is dead"
        );
        let kept = table.issue(
            0x5000,
            4,
            Owner::Temporary(DeviceMemory::for_test(0x5000, 256)),
        );
        assert!(table.lookup(kept, "x").is_ok());
        let left: Vec<u64> = table.into_temporaries().iter().map(|m| m.ptr()).collect();
        assert_eq!(left, vec![0x5000]);
    }
}
