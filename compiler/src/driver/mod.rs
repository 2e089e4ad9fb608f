//! The `tcc` command line: `tcc compile` (and, as they land, `tcc run`,
//! `tcc import`). Errors are printed as located diagnostics and turn into
//! exit code 1; nothing is written unless compilation succeeds, and files
//! are written atomically.

pub mod compile;
pub mod import;
pub mod run;
pub mod session;
pub mod stats;

use std::path::Path;

use anyhow::{Context as _, Result};

/// Writes `bytes` to `path`: a regular (or new) file atomically, through a
/// temporary file beside it and a rename, so that a failure never leaves a
/// half-written output; a symlink's target, keeping the link; a device or
/// FIFO (`/dev/null`) by writing through it, never replacing it. A new
/// file's mode is 0666 (0777 for a shared library) less the umask.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    tcc_runtime::output_file::write_output_bytes(path, bytes, bytes.starts_with(b"\x7fELF"))
        .with_context(|| format!("cannot write {}", path.display()))
}
