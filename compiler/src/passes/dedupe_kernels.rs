//! `tcc-dedupe-kernels`: merges kernels that are equal but for their names.
//!
//! Outlining makes one kernel per device op, so the repeated blocks of a
//! network (ResNet-50's bottlenecks within a stage, DenseNet's dense
//! layers) become many kernels with the same body. Each distinct kernel
//! costs the driver a compile on a model's first call (NVIDIA's OpenCL
//! runs ptxas on every PTX entry, and builds programs one at a time even
//! from several threads) and bytes in the artifact. This pass keeps the
//! first of each set of equal kernels (equal attributes, signature and
//! body; locations aside), points the others' launches at it, and erases
//! them. Launches keep their own operands, so each still reads and writes
//! its own buffers (split-K scratch included).
//!
//! Runs last in the gpu phase, after every pass that edits kernels.

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};

pub struct DedupeKernels;

impl TccPass for DedupeKernels {
    const ARGUMENT: &'static str = "tcc-dedupe-kernels";
    const SUMMARY: &'static str =
        "Merge kernels equal but for their names: erase the later ones and launch the first";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["gpu"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // SAFETY: the pass manager hands this pass the module alone.
        unsafe { tcc_dialects::dedupe_kernels(root.to_raw()) };
        Ok(())
    }
}
