//! Models that do not come from a file: one held in memory (downloaded,
//! decrypted, or `include_bytes!`-ed), and one linked into the program
//! (`tcc compile --emit=obj|staticlib --name=NAME`, whose symbols are
//! `NAME_tcc_artifact_v1` and friends).
//!
//! A model in memory is checked (`elf::check_bytes`: a truncated or
//! foreign blob is an error, not a loader crash), copied into an anonymous
//! in-memory file (`memfd_create`) and opened by the dynamic loader through
//! `/proc/self/fd`: nothing is written to or read from the filesystem. A
//! linked-in model needs no loader at all: its description functions are
//! called directly ([`linked_model!`](crate::linked_model)).

use std::io::Write as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;

use crate::Model;
use crate::artifact::{Artifact, LinkedSymbols};
use crate::error::{Error, Result};

impl Model {
    /// Loads a model held in memory (the bytes of a `model.so`). `label`
    /// names it in messages (e.g. "mlp.so (embedded)"). The bytes are
    /// copied; they need not outlive the call.
    pub fn load_bytes(bytes: &[u8], label: &str) -> Result<Self> {
        let path = PathBuf::from(label);
        let load_err = |reason: String| Error::ArtifactLoad {
            path: path.clone(),
            reason,
        };
        crate::elf::check_bytes(bytes).map_err(load_err)?;
        // SAFETY: plain system call; the name is NUL-terminated.
        let fd = unsafe { libc::memfd_create(c"tcc-model".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(load_err(format!(
                "memfd_create failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: a fresh descriptor that we own.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.write_all(bytes)
            .map_err(|e| load_err(format!("cannot fill the in-memory file: {e}")))?;
        let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
        // SAFETY: as `Model::load`: loading runs the library's initialisers.
        let library = unsafe { Library::new(&proc_path) }.map_err(|e| {
            load_err(if Path::new("/proc/self/fd").exists() {
                e.to_string()
            } else {
                format!("{e} (loading from memory needs /proc mounted)")
            })
        })?;
        // The descriptor stays open as long as the library is loaded: the
        // loader knows the library by the name /proc/self/fd/N, and a later
        // load through a reused N would get this library back.
        let mut artifact = Artifact::from_library(&path, library, "")?;
        artifact.memfd = Some(file);
        Ok(Model {
            inner: Arc::new(artifact),
        })
    }

    /// A model linked into this program. Use [`linked_model!`](crate::linked_model)
    /// rather than calling this directly.
    ///
    /// # Safety
    /// The functions must be a tcc artifact's (`NAME_tcc_artifact_v1`, ...),
    /// linked into the program, so that they and their data live forever.
    pub unsafe fn from_linked(name: &str, symbols: LinkedSymbols) -> Result<Self> {
        let path = PathBuf::from(format!("{name} (linked in)"));
        Ok(Model {
            // SAFETY: forwarded.
            inner: Arc::new(unsafe { Artifact::from_symbols(&path, symbols, None) }?),
        })
    }

    /// The compiler's JSON description of the artifact (`tcc_metadata_v1`),
    /// when it carries one.
    pub fn metadata(&self) -> Option<&str> {
        self.inner.metadata.as_deref()
    }

    /// The ABI version of the artifact's table (tcc_abi.h).
    pub fn abi_version(&self) -> u32 {
        self.inner.abi_version
    }

    /// Whether the artifact carries its kernels as PTX too.
    pub fn has_ptx(&self) -> bool {
        self.inner.ptx.is_some()
    }

    /// The bytes of each constant (weights), in order.
    pub fn constant_bytes(&self) -> Vec<u64> {
        self.inner.constants.iter().map(|c| c.bytes).collect()
    }
}

/// Loads a model linked into the program by `tcc compile --emit=staticlib
/// --name=NAME` (or `--emit=obj`): `linked_model!(mlp)` declares the
/// symbols `mlp_tcc_artifact_v1`, ... and returns `Result<Model>`. The
/// library (`libmlp.a`) must be linked, e.g. from build.rs with
/// `cargo:rustc-link-lib=static=mlp`.
#[macro_export]
macro_rules! linked_model {
    ($name:ident) => {{ $crate::__paste_linked!($name) }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __paste_linked {
    ($name:ident) => {{
        unsafe extern "C" {
            #[link_name = concat!(stringify!($name), "_tcc_artifact_v1")]
            fn describe() -> *const $crate::abi::TccArtifact;
            #[link_name = concat!(stringify!($name), "_tcc_kernel_ptx_v1")]
            fn ptx() -> *const ::std::ffi::c_char;
            #[link_name = concat!(stringify!($name), "_tcc_metadata_v1")]
            fn metadata() -> *const ::std::ffi::c_char;
            #[link_name = concat!(stringify!($name), "_tcc_description_v1")]
            static description: u8;
        }
        // SAFETY: the symbols are a tcc artifact's, linked into the program.
        unsafe {
            $crate::Model::from_linked(
                stringify!($name),
                $crate::artifact::LinkedSymbols {
                    describe,
                    ptx: Some(ptx),
                    metadata: Some(metadata),
                    description: Some(&raw const description),
                },
            )
        }
    }};
}
