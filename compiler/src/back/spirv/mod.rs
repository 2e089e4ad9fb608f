//! SPIR-V back end (`--emit=spirv`): the kernels of the gpu phase through
//! MLIR's own SPIR-V path (Kernel capability, OpenCL memory model, 64-bit
//! addressing), one SPIR-V module per kernel.
//!
//! It needs the portable pipeline (`templates = false`): SPIR-V is made
//! from loop-nest kernels, not from tcc's OpenCL C templates.

mod writer;

pub use writer::{SpirvKernel, write_kernels};
