//! The convolution op (`tcc.conv`, an op of the tcc dialect that
//! `tcc-fold-conv-inputs` makes from convolutions and poolings) and its
//! window (`#tcc.conv`, decoded by [`tcc_dialects::conv::ConvWindow`]).
//! The op has the form of a `linalg.generic` (`indexing_maps`,
//! `iterator_types`, a body ending in `linalg.yield`) and implements
//! linalg's structured-op interface; [`is_linalg_or_conv`] lets passes
//! that take linalg ops by name take it too.

use melior::ir::operation::OperationLike;

pub use tcc_dialects::conv::{ConvWindow, OP, WINDOW, WindowKind};

/// The window `op` computes, if it is a `tcc.conv`.
pub fn of<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> Option<ConvWindow> {
    ConvWindow::of_op(op)
}

/// Whether an op of this name is a linalg op or a `tcc.conv` (which is a
/// structured op of linalg's interface, though of the tcc dialect).
pub fn is_linalg_or_conv(name: &str) -> bool {
    super::util::dialect_of(name) == "linalg" || name == OP
}
