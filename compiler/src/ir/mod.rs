//! Helpers for building and inspecting IR from Rust passes.

pub mod attr_names;
pub mod constant;
pub mod contraction;
pub mod strategy;
pub mod tosa_builder;
pub mod types;
pub mod util;
