//! Front ends: importers that turn other model formats into the
//! TOSA-level MLIR that the input phase takes.
//!
//! - [`onnx`]: ONNX models (`.onnx`) to TOSA plus tcc composites;
//! - [`scoreboard`]: `tcc onnx-test`, the ONNX backend test cases end to end.

pub mod onnx;
pub mod scoreboard;
