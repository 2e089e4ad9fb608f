//! The error a rewrite reports: a message and where in the IR it applies.
//!
//! It lives in `ir/` because patterns (`patterns/`) and IR builders
//! (`ir::tosa_builder`) return it as well as passes, and those layers sit
//! below `passes/`; `passes::PassError` re-exports it, and the pass
//! plumbing (`passes/pass.rs`) turns it into an MLIR diagnostic.

use melior::ir::Location;

/// An error that a pass or pattern reports: a message, and where in the
/// IR it applies.
#[derive(Debug)]
pub struct PassError<'c> {
    pub location: Option<Location<'c>>,
    pub message: String,
}

impl<'c> PassError<'c> {
    pub fn at(location: Location<'c>, message: impl Into<String>) -> Self {
        Self {
            location: Some(location),
            message: message.into(),
        }
    }
}

impl<'c> From<crate::ir::operand::IrError<'c>> for PassError<'c> {
    fn from(error: crate::ir::operand::IrError<'c>) -> Self {
        Self::at(error.location, error.message)
    }
}
