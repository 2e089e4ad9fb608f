//! Helpers for building and inspecting IR from Rust passes.

pub mod constant;
pub mod tosa_builder;
pub mod types;
pub mod util;
