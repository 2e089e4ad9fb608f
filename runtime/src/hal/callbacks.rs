//! The `tcc_runtime_api` callback table, once for every driver: a driver's
//! call context implements [`Callbacks`] (the six callbacks of the ABI on
//! its own buffers), and [`api_table`] makes the table the artifact's host
//! code calls, whose entries turn each callback's error or panic into a
//! recorded error and a non-zero status (`session::guarded`).

use std::ffi::c_void;

use crate::abi::{self, TccArg, TccBuffer, TccRuntimeApi};
use crate::error::Result;
use crate::session::CallState;

/// The callbacks of one entry call on a driver (see `abi::runtime_callbacks`).
pub(crate) trait Callbacks: CallState {
    fn alloc(&mut self, bytes: u64, out: *mut *mut TccBuffer) -> Result<()>;
    fn release(&mut self, buffer: *mut TccBuffer) -> Result<()>;
    fn constant(&mut self, index: u32, out: *mut *mut TccBuffer) -> Result<()>;
    fn launch(
        &mut self,
        kernel: u32,
        dims: u32,
        global: *const u64,
        local: *const u64,
        num_args: u32,
        args: *const TccArg,
    ) -> Result<()>;
    fn copy(
        &mut self,
        dst: *mut TccBuffer,
        dst_offset: u64,
        src: *mut TccBuffer,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()>;
    fn view(&mut self, offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> Result<()>;
}

/// The callback table over `cx`, valid while `cx` is.
pub(crate) fn api_table<C: Callbacks>(cx: &mut C) -> TccRuntimeApi {
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
