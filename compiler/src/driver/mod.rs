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

/// Writes `bytes` to `path` atomically: a temporary file beside it, then a
/// rename, so that a failure never leaves a half-written output.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(directory)
        .with_context(|| format!("cannot create a temporary file in {}", directory.display()))?;
    std::io::Write::write_all(&mut temp, bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // Outputs are ordinary files (tempfile creates them private).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if bytes.starts_with(b"\x7fELF") {
            0o755
        } else {
            0o644
        };
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot set permissions of {}", path.display()))?;
    }
    temp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
