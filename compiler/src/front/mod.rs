//! Front ends: importers that turn other model formats into the
//! TOSA-level MLIR that the input phase takes.
//!
//! - [`onnx`]: ONNX models (`.onnx`) to TOSA plus tcc composites, recorded
//!   as typed ops;
//! - [`build`]: the recorded import built as MLIR ops (melior).
//!
//! (`tcc onnx-test`, which runs the ONNX backend test cases end to end
//! through the driver and the runtime, is `driver::scoreboard`.)

pub mod build;
pub mod onnx;
