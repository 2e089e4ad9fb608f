//! `tcc-pack-weight-panels`: packs the constant filters of convolutions,
//! and the constant B of matmuls, that run on the register-blocked GEMM
//! into panels of output channels (`patterns::pack_weight_panels`), where
//! the target asks for it
//! (`TargetConfig::weight_panel`: pocl-cpu's register blocks of whole
//! panels), so that the
//! kernel reads its weights in order instead of one row of N per k.
//!
//! Runs in the tile phase after `tcc-configure-kernels`, whose GEMM
//! configuration (the register block) the decision needs; the filter is
//! still a tensor constant there, and bufferization makes the packed
//! constant the artifact's weight. The OpenCL C writer reads the panel
//! layout off the filter's indexing map (`ir::filter_panels`).

use melior::Context;

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::config::Target;
use crate::ir::strategy::{self, KernelStrategy};
use crate::ir::util::collect_ops;
use crate::patterns::pack_weight_panels::{PackedFilters, pack_filter};

pub struct PackWeightPanels;

impl TccPass for PackWeightPanels {
    const ARGUMENT: &'static str = "tcc-pack-weight-panels";
    const SUMMARY: &'static str = "Pack the constant weights of register-blocked GEMMs (convolution filters, a matmul's B) into panels of output channels, where the target asks for it";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["arith", "linalg"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let Some(target) = Target::of_module(module) else {
            return Ok(());
        };
        // The candidates first: a rewrite erases a named convolution, and
        // with it the ops of its body that a walk would still hold.
        let candidates: Vec<_> = collect_ops(module)
            .into_iter()
            .filter_map(|op| match strategy::of(&op) {
                Some(KernelStrategy::Gemm { config, shape, .. }) => target
                    .weight_panel(&config, &shape)
                    .map(|panel| (op, panel)),
                _ => None,
            })
            .collect();
        let mut done = PackedFilters::default();
        for (op, panel) in candidates {
            pack_filter(context, op, panel, &mut done)?;
        }
        done.erase_unused();
        Ok(())
    }
}
