//! The `tcc` command line: `tcc compile`, `tcc run`, `tcc import`,
//! `tcc tune`, `tcc inspect`, `tcc profile`, `tcc onnx-test` (`scoreboard`).
//! Errors are printed as located diagnostics and turn into
//! exit code 1; nothing is written unless compilation succeeds, and files
//! are written atomically.

pub mod compile;
pub mod environment;
pub mod import;
pub mod inspect;
pub mod limits;
pub mod link;
pub mod pipeline;
pub mod prepare;
pub mod profile;
pub mod profile_report;
pub mod progress;
pub mod quantize;
pub mod reference;
pub mod run;
pub mod scoreboard;
pub mod session;
pub mod specialize;
pub mod stats;
pub mod tune;

use std::path::Path;

use anyhow::{Context as _, Result};

/// An error as every tcc tool prints it: `error: MESSAGE`, except that a
/// message that already is a located diagnostic (`file:1:2: error: ...`)
/// keeps its own `error:` rather than getting a second one.
pub fn error_text(error: &anyhow::Error) -> String {
    let text = format!("{error:#}");
    let first = text.lines().next().unwrap_or_default();
    if first.starts_with("error: ") || first.contains(": error: ") {
        text
    } else {
        format!("error: {text}")
    }
}

/// Writes `text` to standard output. A closed pipe (`tcc ... | head -1`,
/// `| true`) is an error with a message and exit code 1, not a panic:
/// `print!` panics when stdout is gone.
pub fn write_stdout(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")
}

/// Writes `bytes` to `path`: a regular (or new) file atomically, through a
/// temporary file beside it and a rename, so that a failure never leaves a
/// half-written output; a symlink's target, keeping the link; a device or
/// FIFO (`/dev/null`) by writing through it, never replacing it. A new
/// file's mode is 0666 (0777 for a shared library) less the umask.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    tcc_runtime::output_file::write_output_bytes(path, bytes, bytes.starts_with(b"\x7fELF"))
        .with_context(|| format!("cannot write {}", path.display()))
}
