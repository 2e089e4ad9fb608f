//! Code generation back ends, naga-style: one folder per output format with
//! `mod.rs` (options and API) and `writer.rs` (the translation).
//!
//! - [`opencl_c`]: kernels (`gpu.func`) → OpenCL C 1.2 source;
//! - [`host_llvm`]: the host function → LLVM IR → native object, plus the
//!   artifact's self-description (`tcc_artifact_v1`);
//! - [`spirv`]: kernels → SPIR-V through MLIR's own conversion;
//! - [`ptx`]: the OpenCL C program → PTX for NVIDIA (clang + NVPTX).

pub mod host_llvm;
pub mod opencl_c;
pub mod ptx;
pub mod spirv;

use std::fmt;

/// A code generation failure: what could not be translated, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodegenError {
    /// `file:line:col` of the offending op, when known.
    pub location: Option<String>,
    pub message: String,
}

impl CodegenError {
    pub fn at<'c: 'a, 'a>(
        op: &impl melior::ir::operation::OperationLike<'c, 'a>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            location: crate::diagnostics::location_string(op.location().to_raw()),
            message: message.into(),
        }
    }

    pub fn new(message: impl Into<String>) -> Self {
        Self {
            location: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(location) => write!(f, "{location}: error: {}", self.message),
            None => write!(f, "error: {}", self.message),
        }
    }
}

impl std::error::Error for CodegenError {}

/// The refusal of a back end that does not compile a symbolic dimension
/// yet (issue 33), `writer` naming it: the first launch (or op) still
/// computing on a dynamically shaped type, its ONNX node and the declared
/// dimensions, so that nothing compiles to a wrong result and nothing is
/// written.
pub fn refuse_dynamic(module: &melior::ir::Module, writer: &str) -> Result<(), CodegenError> {
    let root =
        unsafe { melior::ir::operation::OperationRef::from_raw(module.as_operation().to_raw()) };
    let Some((op, ty)) = crate::ir::dynamic::first_dynamic(root) else {
        return Ok(());
    };
    Err(CodegenError::at(
        &op,
        format!(
            "'{}'{} computes on the dynamically shaped type '{}' (dynamic dimension {}): dynamic dimension not supported yet by {writer} (codegen); compile one shape with --input-shape",
            crate::ir::util::op_name(&op),
            crate::ir::dynamic::node_name(&op).map_or(String::new(), |n| format!(" (node '{n}')")),
            crate::diagnostics::truncate_for_message(&ty.to_string()),
            crate::ir::dynamic::describe_dims(&crate::ir::dynamic::module_dims(op)),
        ),
    ))
}

/// `result.at(&op)?`: a failure reading the IR (a missing operand, result,
/// region or attribute) as a [`CodegenError`] at `op`.
pub trait ErrorAt<T> {
    fn at<'c: 'a, 'a>(
        self,
        op: &impl melior::ir::operation::OperationLike<'c, 'a>,
    ) -> Result<T, CodegenError>;
}

impl<T, E: fmt::Display> ErrorAt<T> for Result<T, E> {
    fn at<'c: 'a, 'a>(
        self,
        op: &impl melior::ir::operation::OperationLike<'c, 'a>,
    ) -> Result<T, CodegenError> {
        self.map_err(|e| CodegenError::at(op, e.to_string()))
    }
}

impl From<crate::ir::operand::IrError<'_>> for CodegenError {
    fn from(error: crate::ir::operand::IrError<'_>) -> Self {
        Self {
            location: crate::diagnostics::location_string(error.location.to_raw()),
            message: error.message,
        }
    }
}
