//! tcc's own passes, one per file, each registered in MLIR's pass registry
//! under its `tcc-*` argument by [`register_all`].

mod decompose_composites;
mod pass;

pub use decompose_composites::DecomposeComposites;
pub use pass::{NoOptions, PassError, PassOptions, TccPass, parse_bool, parse_options, split_options};

/// Every tcc pass: (argument, summary), in registration order. Kept in step
/// with docs/passes.md by a test.
pub const ALL: &[(&str, &str)] = &[(DecomposeComposites::ARGUMENT, DecomposeComposites::SUMMARY)];

/// Registers every upstream pass and every tcc pass. Idempotent.
pub fn register_all() {
    tcc_dialects::register_all_passes();
    pass::register(&DecomposeComposites);
}
