//! The device memory a session keeps per compute queue ("lane", see
//! `async_call::lanes`) past the first: calls on different lanes run at
//! the same time, so each lane needs intermediate buffers of its own.
//!
//! - An **arena** of its own (the static memory plan's buffer and views).
//! - **Kernel objects** of its own (`clCreateKernel` again from the same
//!   program): a kernel's arguments are set on the object before each
//!   launch, and a driver may order launches of one object on different
//!   queues; `TCC_LANE_KERNELS=0` shares the session's instead (to
//!   measure the difference).
//! - Its own copy of every **all-zero constant**. Constants are shared by
//!   the lanes (uploaded once per session), except the writable ones:
//!   tcc's only writable global is scratch that starts at zero (the
//!   split-K arrival counters, which a kernel counts up and leaves at zero
//!   again), and two calls running that kernel at once must not share it.
//!   A constant whose bytes are all zero gets a copy per lane, which is
//!   always correct and costs little (such constants are small or rare).
//!
//! Lane 0 (and the runtime's queue) use the session's own arena and
//! constants; the memory of lane `i` is `LaneMemory` `i - 1`. It is created
//! on the lane's first call and given back when the session is dropped,
//! after its kernels (NVIDIA's OpenCL touches a kernel's last arguments
//! when the kernel is released).

use opencl3::program::Program;

use super::arena::Arena;
use super::program::{KernelSlot, kernel_slots};
use crate::RuntimeInner;
use crate::artifact::{Artifact, ConstantRef};
use crate::buffer_pool::{BufferPool, PoolBuffer};
use crate::error::Result;

/// One lane's own buffers.
pub(super) struct LaneMemory {
    pub(super) arena: Arena,
    /// Its kernel objects (`None`: it uses the session's).
    pub(super) kernels: Option<Vec<KernelSlot>>,
    /// Its copies of the all-zero constants, by constant index.
    pub(super) zero_constants: Vec<Option<PoolBuffer>>,
}

impl LaneMemory {
    pub(super) fn new(
        rt: &RuntimeInner,
        art: &Artifact,
        program: Option<&Program>,
    ) -> Result<LaneMemory> {
        let own_kernels = std::env::var("TCC_LANE_KERNELS").map_or(true, |v| v != "0");
        let kernels = match program {
            Some(p) if own_kernels => Some(kernel_slots(p, art)?),
            _ => None,
        };
        Ok(LaneMemory {
            arena: Arena::new(rt, art)?,
            kernels,
            zero_constants: art.constants.iter().map(|_| None).collect(),
        })
    }

    /// Gives its buffers back, its kernels first (see the module doc).
    pub(super) fn release(&mut self, pool: &mut BufferPool) {
        self.kernels = None;
        for c in self.zero_constants.drain(..).flatten() {
            pool.release(c);
        }
        self.arena.release(pool);
    }
}

/// A lane's arena, its copies of the all-zero constants, and its kernel
/// objects (`None`: the session's).
pub(super) type LaneParts<'a> = (
    &'a mut Arena,
    &'a mut [Option<PoolBuffer>],
    Option<&'a [KernelSlot]>,
);

/// Lane `lane`'s arena, all-zero constant copies and kernel objects (its
/// own, or `None`: the session's); `None` for lane 0, which uses the
/// session's.
pub(super) fn lane_parts(lanes: &mut [LaneMemory], lane: usize) -> Option<LaneParts<'_>> {
    let m = lanes.get_mut(lane.checked_sub(1)?)?;
    Some((&mut m.arena, &mut m.zero_constants, m.kernels.as_deref()))
}

/// The slot of constant `index` for a call: the lane's own copy when the
/// call runs on a lane past the first (`lane` holds its copies) and the
/// constant is all zeros (`known` caches that), else the session's shared
/// one; and whether it is the shared one.
pub(super) fn constant_slot<'a>(
    shared: &'a mut [Option<PoolBuffer>],
    lane: Option<&'a mut [Option<PoolBuffer>]>,
    known: &mut Option<bool>,
    c: &ConstantRef,
    index: usize,
) -> (&'a mut Option<PoolBuffer>, bool) {
    match lane {
        Some(own) if is_zero_constant(known, c) => (&mut own[index], false),
        _ => (&mut shared[index], true),
    }
}

/// Whether constant `c` is all zeros, cached in `known`.
fn is_zero_constant(known: &mut Option<bool>, c: &ConstantRef) -> bool {
    *known.get_or_insert_with(|| {
        // SAFETY: the artifact (and so the constant's memory) outlives the
        // session that asks.
        unsafe { c.as_slice() }.iter().all(|&b| b == 0)
    })
}
