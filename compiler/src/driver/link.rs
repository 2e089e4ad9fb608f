//! Linking a host object into the shared library the user asked for: the
//! host back end links it in a temporary directory
//! (`back::host_llvm::link_library`), and this writes it to its output the
//! way `tcc compile -o` writes every output (`tcc_runtime::output_file`:
//! atomically replaced, a symlink's target, a device written through).
//! The back end stays free of the runtime crate.

use std::path::Path;

use crate::back::CodegenError;
use crate::back::host_llvm;

/// Links an object into a shared library with the system C compiler driver
/// (`$CC`, else `cc`).
pub fn link_shared(object: &[u8], output: &Path) -> Result<(), CodegenError> {
    link_shared_objects(object, &[], output, None)
}

/// Links a host object and more objects (the weights object) for `triple`
/// (`None`: this machine) into `output`.
pub fn link_shared_objects(
    object: &[u8],
    extra: &[&Path],
    output: &Path,
    triple: Option<&str>,
) -> Result<(), CodegenError> {
    let linked = host_llvm::link_library(object, extra, output, triple)?;
    write_linked(&linked, output)
}

/// Writes the library linked in a temporary directory to `output`.
fn write_linked(linked: &host_llvm::LinkedLibrary, output: &Path) -> Result<(), CodegenError> {
    // Streamed, not read: a library of a large model's weights is copied
    // from the page cache into the output through a small buffer.
    let mut library = std::fs::File::open(linked.path())
        .map_err(|e| CodegenError::new(format!("cannot read the linked library: {e}")))?;
    tcc_runtime::output_file::write_output(output, true, |out| {
        std::io::copy(&mut library, out).map(|_| ())
    })
    .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", output.display())))
}

impl host_llvm::HostObjects {
    /// Links the host and weights objects into the shared library
    /// `output`, written as [`link_shared_objects`] writes it.
    pub fn link(&self, output: &Path) -> Result<(), CodegenError> {
        let linked = self.link_library(output)?;
        write_linked(&linked, output)
    }
}
