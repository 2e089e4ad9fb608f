//! The `tcc_runtime_api` callback table, once for every driver: a driver's
//! call context implements [`Callbacks`] (the ABI's callbacks on its own
//! buffers; a launch's pointers are read and checked here, the driver
//! dispatches the checked launch), and [`api_table`] makes the table the
//! artifact's host code calls, whose entries turn each callback's error or
//! panic into a recorded error and a non-zero status (`session::guarded`).
//! [`out_slot`] is every driver's check of the slot a buffer is handed
//! out through.

use std::ffi::c_void;

use crate::abi::{self, TccArg, TccBuffer, TccRuntimeApi};
use crate::error::Result;
use crate::session::CallState;

/// The callbacks of one entry call on a driver (see `abi::runtime_callbacks`).
pub(crate) trait Callbacks: CallState {
    fn alloc(&mut self, bytes: u64, out: *mut *mut TccBuffer) -> Result<()>;
    fn release(&mut self, buffer: *mut TccBuffer) -> Result<()>;
    fn constant(&mut self, index: u32, out: *mut *mut TccBuffer) -> Result<()>;
    /// Kernel `kernel`'s name and how many arguments a launch of it takes
    /// (`None`: as many as the launch gives), or the out-of-range error
    /// (`hal::shared::kernel_at`).
    fn kernel_signature(&self, kernel: u32) -> Result<(&str, Option<usize>)>;
    /// Enqueues kernel `kernel` with the launch's sizes and arguments, read
    /// and checked by the core (`launch`).
    fn dispatch(&mut self, kernel: u32, launch: abi::LaunchArgs<'_>) -> Result<()>;
    /// The ABI's `launch`, once for every driver: the kernel looked up,
    /// the pointers read and checked (dimensions, sizes, the argument
    /// count), then [`Callbacks::dispatch`].
    fn launch(
        &mut self,
        kernel: u32,
        dims: u32,
        global: *const u64,
        local: *const u64,
        num_args: u32,
        args: *const TccArg,
    ) -> Result<()> {
        let launch = {
            let (name, expected) = self.kernel_signature(kernel)?;
            let expected = expected.unwrap_or(num_args as usize);
            // SAFETY: the artifact passes the pointers as the ABI says.
            unsafe { abi::launch_args(name, dims, global, local, num_args, args, expected)? }
        };
        self.dispatch(kernel, launch)
    }
    /// What a driver copies between: its buffer behind `handle` (one of
    /// this call's), with the bytes it holds; the error names `what`.
    type Buffer;
    fn buffer(&self, handle: *mut TccBuffer, what: &str) -> Result<(Self::Buffer, u64)>;
    /// Enqueues a device-to-device copy whose ranges the core checked
    /// (never empty), ordered after the call's earlier work.
    fn enqueue_copy(&mut self, copy: BufferCopy<Self::Buffer>) -> Result<()>;
    /// The ABI's `copy`, once for every driver: both buffers looked up,
    /// the ranges checked, then [`Callbacks::enqueue_copy`].
    fn copy(
        &mut self,
        dst: *mut TccBuffer,
        dst_offset: u64,
        src: *mut TccBuffer,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let (dst, dst_len) = self.buffer(dst, "copy destination")?;
        let (src, src_len) = self.buffer(src, "copy source")?;
        check_copy(dst_offset, dst_len, src_offset, src_len, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        self.enqueue_copy(BufferCopy {
            dst,
            dst_offset,
            src,
            src_offset,
            bytes,
        })
    }
    fn view(&mut self, offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> Result<()>;
}

/// A checked `copy`: `bytes` (> 0) from `src` at `src_offset` to `dst`
/// at `dst_offset`, both ranges inside their buffers.
pub(crate) struct BufferCopy<B> {
    pub(crate) dst: B,
    pub(crate) dst_offset: u64,
    pub(crate) src: B,
    pub(crate) src_offset: u64,
    pub(crate) bytes: u64,
}

/// Checks a `copy` of `bytes` bytes against both buffers' sizes.
fn check_copy(
    dst_offset: u64,
    dst_len: u64,
    src_offset: u64,
    src_len: u64,
    bytes: u64,
) -> Result<()> {
    for (what, off, len) in [
        ("destination", dst_offset, dst_len),
        ("source", src_offset, src_len),
    ] {
        if off.checked_add(bytes).is_none_or(|end| end > len) {
            return Err(crate::Error::InvalidInput(format!(
                "copy of {bytes} bytes at {what} offset {off} overruns the {len}-byte {what} buffer"
            )));
        }
    }
    Ok(())
}

/// The artifact's `out` slot of an `alloc`, `constant` or `view` call,
/// or the error every driver gives for NULL.
pub(crate) fn out_slot<'a>(out: *mut *mut TccBuffer) -> Result<&'a mut *mut TccBuffer> {
    // SAFETY: a non-null `out` points at the artifact's slot, valid for
    // the callback (the ABI's contract).
    unsafe { out.as_mut() }
        .ok_or_else(|| crate::Error::InvalidInput("output pointer is NULL".into()))
}

/// The callback table over `cx`, valid while `cx` is, giving the entry
/// the call's `shapes` (every input's extents, then every output's;
/// empty for a static function: NULL).
pub(crate) fn api_table<C: Callbacks>(cx: &mut C, shapes: &[i64]) -> TccRuntimeApi {
    TccRuntimeApi {
        abi_version: abi::TCC_ABI_VERSION,
        reserved: 0,
        ctx: cx as *mut C as *mut c_void,
        alloc: Some(entry::alloc::<C>),
        release: Some(entry::release::<C>),
        constant: Some(entry::constant::<C>),
        launch: Some(entry::launch::<C>),
        copy: Some(entry::copy::<C>),
        view: Some(entry::view::<C>),
        shapes: if shapes.is_empty() {
            std::ptr::null()
        } else {
            shapes.as_ptr()
        },
    }
}

mod entry {
    use std::ffi::c_void;

    use super::Callbacks;
    use crate::abi::{TccArg, TccBuffer, runtime_callbacks};
    use crate::session::guarded;

    macro_rules! entries {
        ($($(#[$doc:meta])* $field:ident: $type:ident($($arg:ident: $ty:ty),*) $(-> $status:ty)?;)*) => {
            $($(#[$doc])* pub(super) unsafe extern "C" fn $field<C: Callbacks>(ctx: *mut c_void, $($arg: $ty),*) $(-> $status)? {
                guarded(ctx, stringify!($field), |cx: &mut C| cx.$field($($arg),*))
            })*
        };
    }
    runtime_callbacks!(entries);
}
