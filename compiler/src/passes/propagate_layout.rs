//! `tcc-propagate-layout`: one layout for the whole graph.
//!
//! TOSA's convolutions and pools are channels-last (NHWC) while ONNX models
//! are channels-first, so an importer wraps each of them in a pair of
//! transposes; between two convolutions the elementwise ops (BatchNorm's
//! scale and shift, activations, residual adds, concats) then run in NCHW
//! and every convolution costs two transpose kernels. This pass sinks
//! transposes through every op that does not care about layout
//! (`patterns::transpose`), so that the transposes of neighbouring
//! convolutions meet and cancel (TOSA canonicalization), and turns
//! transposes that only move unit dimensions into reshapes. What remains
//! is at most a transpose at each model input and output, and where a
//! layout-sensitive op without a channels-last form (a reshape that splits
//! channels, say) needs one.
//!
//! Runs on each function until nothing changes; constant operands get a
//! `tosa.transpose` that `tcc-fold-constants` folds.

use melior::ir::operation::{OperationRef, OperationRefMut};

use super::pass::{NoOptions, PassError, TccPass};
use crate::ir::util::{body_ops, ops_named};
use crate::patterns::transpose::{sink_transposes, transpose_to_reshape};

pub struct PropagateLayout;

/// A bound on sweeps over a function (each sweep moves every transpose as
/// far as it can in program order, so two or three suffice in practice).
const MAX_SWEEPS: usize = 64;

impl TccPass for PropagateLayout {
    const ARGUMENT: &'static str = "tcc-propagate-layout";
    const SUMMARY: &'static str =
        "Sink transposes through layout-agnostic ops so that channels-last holds across the graph";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = NoOptions;

    fn run<'c>(
        &self,
        context: &'c melior::Context,
        root: &mut OperationRefMut<'c, 'c>,
        _options: &NoOptions,
    ) -> Result<(), PassError<'c>> {
        let module = unsafe { OperationRef::from_raw(root.to_raw()) };
        for function in ops_named(module, "func.func") {
            for _ in 0..MAX_SWEEPS {
                let mut changed = false;
                for op in body_ops(function) {
                    changed |= sink_transposes(context, op)?;
                }
                for op in body_ops(function) {
                    changed |= transpose_to_reshape(context, op)?;
                }
                if !changed {
                    break;
                }
            }
        }
        Ok(())
    }
}
