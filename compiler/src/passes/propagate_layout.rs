//! `tcc-propagate-layout`: one layout for the whole graph.
//!
//! TOSA's convolutions and pools are channels-last (NHWC) while ONNX models
//! are channels-first, so an importer wraps each of them in a pair of
//! transposes; between two convolutions the elementwise ops (BatchNorm's
//! scale and shift, activations, residual adds, concats) then run in NCHW
//! and every convolution costs two transpose kernels. This pass sinks
//! transposes through every op that does not care about layout
//! (`patterns::propagate_layout`), so that the transposes of neighbouring
//! convolutions meet and cancel (TOSA canonicalization), sinks a transpose
//! through a whole cluster of such ops where no single op can go first but
//! the cluster as a whole removes transposes (a local response
//! normalization in primitive ops), and turns
//! transposes that only move unit dimensions into reshapes. What remains
//! is at most a transpose at each model input and output, and where a
//! layout-sensitive op without a channels-last form (a reshape that splits
//! channels, say) needs one.
//!
//! Sequence-major attention blocks (`nn.MultiheadAttention`: tokens as
//! `[S, B, E]`) add two more kinds: a chain of reshapes and transposes is
//! collapsed into one reshape, one transpose and one reshape (the head
//! split of Q, K and V becomes the transpose the attention kernel reads
//! through strides), and a matmul whose rows arrive permuted multiplies
//! them in their source order and permutes its product instead (where the
//! permutation then cancels against the one after the projection).
//!
//! Runs on each function until nothing changes: each sweep moves row
//! permutations past matmuls, sinks, then composes transposes of
//! transposes and folds transposes of constants (so that operands meeting
//! at an op agree again), collapses chains of reshapes and transposes,
//! then turns unit-dim transposes into reshapes.

use melior::Context;
use melior::ir::operation::OperationRef;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::{body_ops, ops_named};
use crate::patterns::fold_constants::fold;
use crate::patterns::propagate_layout::{
    collapse_view_chains, compose_transposes, sink_cluster, sink_row_permutations, sink_transposes,
    slice_before_split, transpose_to_reshape,
};

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

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for function in ops_named(module, "func.func") {
            for _ in 0..MAX_SWEEPS {
                let mut changed = false;
                // Constant subexpressions (a reshape of a weight blob, say)
                // first, so they count as constants below.
                for op in body_ops(function) {
                    changed |= fold(context, op)?;
                }
                for op in body_ops(function) {
                    changed |= sink_row_permutations(context, op)?;
                }
                for op in body_ops(function) {
                    changed |= sink_transposes(context, op)?;
                }
                if !changed {
                    // Clusters that only pay off as a whole, once the
                    // op-by-op rule is stuck (one per sweep: it rewrites
                    // many ops).
                    for op in body_ops(function) {
                        if sink_cluster(context, op)? {
                            changed = true;
                            break;
                        }
                    }
                }
                for op in body_ops(function) {
                    changed |= compose_transposes(context, op)?;
                }
                erase_dead_views(function);
                for op in body_ops(function) {
                    changed |= slice_before_split(context, op)?;
                }
                for op in body_ops(function) {
                    changed |= collapse_view_chains(context, op)?;
                }
                for op in body_ops(function) {
                    changed |= transpose_to_reshape(context, op)?;
                }
                erase_dead_views(function);
                if !changed {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Erases transposes, reshapes and constants left without users by the
/// rewrites (they would count as users and block further sinking).
fn erase_dead_views(function: OperationRef) {
    for op in body_ops(function).into_iter().rev() {
        let name = crate::ir::util::op_name(&op);
        if !matches!(
            name.as_str(),
            "tosa.transpose" | "tosa.reshape" | "tosa.const" | "tosa.const_shape"
        ) {
            continue;
        }
        let Ok(result) = op.result(0) else { continue };
        if crate::ir::util::use_count(result.into()) == 0 {
            crate::ir::util::erase_op(op);
        }
    }
}
