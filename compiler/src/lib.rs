//! tcc-compiler: lowers TOSA/linalg models to OpenCL kernels and a host
//! program. `passes` holds tcc's own passes (registered in MLIR's pass
//! registry so `tcc-opt` and textual pipelines reach them).

pub mod ir;
pub mod passes;
pub mod patterns;
