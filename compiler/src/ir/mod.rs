//! Helpers for building and inspecting IR from Rust passes.

pub mod affine;
pub mod attr_names;
pub mod constant;
pub mod contraction;
pub mod conv;
pub mod conv_input;
pub mod dense;
pub mod dispatch;
pub mod dynamic;
pub mod element_type;
pub mod error;
pub mod filter_panels;
pub mod grouped_conv;
pub mod memref;
pub mod operand;
pub mod storage;
pub mod strategy;
#[cfg(test)]
pub mod testing;
pub mod tosa_builder;
pub mod types;
pub mod util;
