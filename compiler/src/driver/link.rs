//! Linking the host and weights objects into the shared library the user
//! asked for: the host back end links them in a temporary directory
//! (`back::host_llvm::HostObjects::link_library`), and this writes the
//! library to its output the way `tcc compile -o` writes every output
//! (`tcc_runtime::output_file`: atomically replaced, a symlink's target, a
//! device written through). The back end stays free of the runtime crate.

use std::path::Path;

use crate::back::CodegenError;
use crate::back::host_llvm;

impl host_llvm::HostObjects {
    /// Links the host and weights objects into the shared library
    /// `output`.
    pub fn link(&self, output: &Path) -> Result<(), CodegenError> {
        let linked = self.link_library(output, &super::environment::c_compiler())?;
        // Streamed, not read: a library of a large model's weights is
        // copied from the page cache into the output through a small
        // buffer.
        let mut library = std::fs::File::open(linked.path())
            .map_err(|e| CodegenError::new(format!("cannot read the linked library: {e}")))?;
        tcc_runtime::output_file::write_output(output, true, |out| {
            std::io::copy(&mut library, out).map(|_| ())
        })
        .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", output.display())))
    }
}
