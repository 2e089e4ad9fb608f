//! Rewrite patterns, kept apart from the passes that apply them.

pub mod conv_inputs;
pub mod copy;
pub mod decompose_composites;
pub mod kernel_naming;
pub mod softmax_to_linalg;
