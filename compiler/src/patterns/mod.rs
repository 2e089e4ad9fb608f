//! Rewrite patterns, kept apart from the passes that apply them.

pub mod batch_norm;
pub mod concat;
pub mod constant_fold;
pub mod conv_inputs;
pub mod copy;
pub mod decompose_composites;
pub mod kernel_naming;
pub mod layer_norm_to_rows;
pub mod output_copy;
pub mod raise_composites;
pub mod softmax_to_linalg;
pub mod transpose;
