//! Rewrite patterns, kept apart from the passes that apply them.

pub mod decompose_composites;
pub mod kernel_naming;
