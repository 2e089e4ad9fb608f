//! tcc-compiler: lowers TOSA/linalg models to OpenCL kernels and a host
//! program.
//!
//! - [`phases`]: the pipeline as ordered phases (`--compile-to=` stops);
//! - [`passes`]: tcc's own passes, registered in MLIR's pass registry;
//! - [`patterns`]: rewrites the passes apply;
//! - [`config`]: per-target kernel configuration (strategy);
//! - [`driver`]: the `tcc` command line.

pub mod back;
pub mod config;
pub mod diagnostics;
pub mod driver;
pub mod front;
pub mod ir;
pub mod passes;
pub mod patterns;
pub mod phases;
/// The reference oracle (`driver::reference`), at its old path.
pub use driver::reference;
