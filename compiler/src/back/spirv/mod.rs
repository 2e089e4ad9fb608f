//! SPIR-V back end (`--emit=spirv`, `--target=vulkan`): the kernels of the
//! gpu phase through MLIR's own GPU-to-SPIR-V path, for one of two
//! environments ([`Environment`]): OpenCL (Kernel capability, OpenCL
//! memory model, 64-bit addressing; `clCreateProgramWithIL`) or Vulkan
//! (Shader capability, storage buffers in descriptor set 0, each entry
//! point's `LocalSize` from its work-group size; the runtime's Vulkan
//! driver). `--emit=spirv` writes one module per kernel; an artifact holds
//! one module with every kernel as an entry point ([`write_program`]).
//!
//! It needs the portable pipeline (`templates = false`): SPIR-V is made
//! from loop-nest kernels, not from tcc's OpenCL C templates.

mod writer;

pub use writer::{Environment, SpirvKernel, SpirvProgram, write_kernels, write_program};
