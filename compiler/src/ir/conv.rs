//! Reading an op's convolution window (`tcc.conv`, the typed attribute of
//! the tcc dialect decoded by [`tcc_dialects::conv::ConvWindow`]) that
//! `tcc-fold-conv-inputs` writes on the generics it makes from
//! convolutions and poolings.

use melior::ir::operation::OperationLike;

pub use tcc_dialects::conv::{ConvWindow, WindowKind};

use super::attr_names::CONV;

/// The window `op` computes, if it is a `tcc.conv` generic.
pub fn of<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> Option<ConvWindow> {
    op.attribute(CONV).ok().and_then(ConvWindow::from_attribute)
}
