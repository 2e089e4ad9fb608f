//! The arena of a model's static memory plan (ABI 2): one device buffer,
//! as large as the largest `arena_bytes` of the model's functions,
//! allocated when the session is created and reused by every call (the
//! queue is in order, so a call's kernels run after the previous call's).
//!
//! A `view(offset, bytes)` of it is an OpenCL sub-buffer, created on first
//! use and kept for the session. When the device needs more alignment for
//! sub-buffers (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`) than a plan guarantees,
//! or the arena exceeds the largest allocation, each distinct view gets
//! its own pool buffer instead, kept for the session: two views alive at
//! the same time never share an (offset, bytes) pair, so that is still
//! correct, only larger.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use opencl3::memory::{Buffer, ClMem};
use opencl3::types::cl_mem;
use serde::Serialize;

use crate::RuntimeInner;
use crate::artifact::Artifact;
use crate::buffer_pool::{BufferPool, PoolBuffer};
use crate::error::{Error, Result};

/// One view of the arena.
enum ArenaView {
    /// A sub-buffer of the arena.
    Sub(Buffer<u8>),
    /// A buffer of its own (the fallback).
    Own(PoolBuffer),
}

impl ArenaView {
    fn mem(&self) -> cl_mem {
        match self {
            ArenaView::Sub(b) => b.get(),
            ArenaView::Own(b) => b.mem(),
        }
    }
}

/// The session's arena and the views handed out so far.
pub(super) struct Arena {
    /// The arena buffer; `None` when the model has no plan or the session
    /// uses the fallback.
    base: Option<PoolBuffer>,
    /// Bytes the model's largest plan needs.
    bytes: u64,
    views: HashMap<(u64, u64), ArenaView>,
}

/// What the session's arena looks like.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ArenaStats {
    /// The largest `arena_bytes` of the model's functions.
    pub plan_bytes: u64,
    /// Device bytes of the arena buffer (0 when not used).
    pub arena_bytes: u64,
    /// Whether views are sub-buffers of the arena (`false`: the fallback,
    /// one buffer per distinct view).
    pub sub_buffers: bool,
    /// Distinct views created so far.
    pub views: usize,
}

impl Arena {
    /// The arena for `art`'s functions on `rt`'s device: one buffer when
    /// sub-buffers can serve every plan, else none (the fallback).
    pub(super) fn new(rt: &RuntimeInner, art: &Artifact) -> Result<Arena> {
        // Sub-buffers need every plan's offsets to be multiples of the
        // device's base address alignment.
        let plan_bytes = art.arena_bytes();
        let aligned = art
            .functions
            .iter()
            .filter(|f| f.arena_bytes > 0)
            .all(|f| f.arena_alignment % rt.device.base_align_bytes == 0);
        let fits = plan_bytes <= rt.device.max_alloc_bytes;
        // NVIDIA's OpenCL (driver 580, H100) crashes in clReleaseMemObject
        // on some of a buffer's overlapping sub-buffers (a segfault when a
        // session is dropped, measured with tcc-run on ResNet-50 and
        // SqueezeNet); there every view gets its own buffer, created once
        // per session and reused across calls like the arena.
        // TCC_ARENA_SUB_BUFFERS=0 forces the fallback (to test it anywhere).
        let subs_release_safely = !rt.device.platform_name.contains("NVIDIA")
            && std::env::var("TCC_ARENA_SUB_BUFFERS").map_or(true, |v| v != "0");
        let base = if plan_bytes > 0 && aligned && fits && subs_release_safely {
            Some(rt.pool().acquire_exact(&rt.context, plan_bytes)?)
        } else {
            None
        };
        Ok(Arena {
            base,
            bytes: plan_bytes,
            views: HashMap::new(),
        })
    }

    pub(super) fn stats(&self) -> ArenaStats {
        ArenaStats {
            plan_bytes: self.bytes,
            arena_bytes: self.base.as_ref().map_or(0, PoolBuffer::capacity),
            sub_buffers: self.base.is_some(),
            views: self.views.len(),
        }
    }

    /// The buffer of the view (`offset`, `bytes`), which the caller has
    /// checked against the function's plan: a sub-buffer of the arena, or
    /// in the fallback a buffer from `own`; created on first use.
    pub(super) fn view(
        &mut self,
        offset: u64,
        bytes: u64,
        own: impl FnOnce() -> Result<PoolBuffer>,
    ) -> Result<cl_mem> {
        let slot = match self.views.entry((offset, bytes)) {
            Entry::Occupied(v) => return Ok(v.get().mem()),
            Entry::Vacant(slot) => slot,
        };
        let view = match &self.base {
            Some(base) => match base.sub_buffer(offset, bytes) {
                Ok(sub) => ArenaView::Sub(sub),
                Err(code) => {
                    return Err(Error::cl(
                        format!("clCreateSubBuffer(offset {offset}, {bytes} bytes)"),
                        code.into(),
                    ));
                }
            },
            None => ArenaView::Own(own()?),
        };
        Ok(slot.insert(view).mem())
    }

    /// Gives the views' and the arena's buffers back to `pool`, sub-buffers
    /// before the arena they belong to.
    pub(super) fn release(&mut self, pool: &mut BufferPool) {
        for (_, view) in self.views.drain() {
            if let ArenaView::Own(b) = view {
                pool.release(b);
            }
        }
        if let Some(base) = self.base.take() {
            pool.release(base);
        }
    }
}
