//! `tcc-apply-tuning`: attaches a tuning record's choices to the ops they
//! are for, as IREE's `compilation_info` does: every kernel root (a
//! matmul or a convolution named by `tcc-form-dispatches`) whose kind and
//! (batch, M, N, K) the record names gets `tcc.tuning = #tcc.gemm<...>`,
//! which `tcc-configure-kernels` then takes over its target's table.
//!
//! The compile driver loads the record itself and calls [`apply`] between
//! the dispatch and tile phases, so that no file name travels inside the
//! pipeline text (any path works, quotes and braces included); tcc-opt
//! runs the pass with `record=FILE`. A record for another target family
//! than the module's `#tcc.target` is an error.

use melior::Context;
use melior::ir::operation::{OperationLike, OperationRef};

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::config::Target;
use crate::config::tuning::TuningRecord;
use crate::ir::attr_names::{KIND, TUNING};
use crate::ir::contraction::gemm_shape;
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::{collect_ops, string_value};

pub struct ApplyTuning;

/// `tcc-apply-tuning` options.
#[derive(Clone, Debug, Default)]
pub struct ApplyTuningOptions {
    /// The record (`record=FILE`); none: the pass does nothing.
    pub record: Option<TuningRecord>,
}

impl PassOptions for ApplyTuningOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[PassOptionInfo {
        name: "record",
        kind: PassOptionKind::String,
        default: "",
        description: "A tuning record (tcc tune) whose configurations are attached to the kernels of the shapes it names (empty: none)",
    }];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "record" if value.is_empty() => Ok(()),
            "record" => {
                self.record = Some(TuningRecord::load(std::path::Path::new(value))?);
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

/// Attaches `record`'s configurations to the kernel roots under `module`
/// whose shapes it names; returns how many it attached.
pub fn apply(
    context: &Context,
    module: OperationRef,
    record: &TuningRecord,
) -> Result<usize, String> {
    // SAFETY: the module and its context outlive this call.
    let module: OperationRef = unsafe { OperationRef::from_raw(module.to_raw()) };
    let target = Target::of_module(module).unwrap_or_default();
    if record.target != target.name() {
        return Err(format!(
            "the tuning record is for --target={} (measured on {}), the module for {}",
            record.target, record.device, target
        ));
    }
    let mut attached = 0;
    for op in collect_ops(module) {
        let Some(kind) = op.attribute(KIND).ok().and_then(string_value) else {
            continue;
        };
        if op.result_count() == 0 {
            continue;
        }
        let Some(shape) = gemm_shape(op) else {
            continue;
        };
        let Some(config) = record.lookup(target, &kind, [shape.batch, shape.m, shape.n, shape.k])
        else {
            continue;
        };
        let choice = KernelStrategy::Gemm {
            config,
            shape,
            precision: Default::default(),
        };
        let attribute = choice
            .to_attribute(context)
            .ok_or_else(|| format!("invalid tuned configuration {config:?}"))?;
        crate::ir::util::set_discardable_attribute(op, TUNING, attribute);
        attached += 1;
    }
    Ok(attached)
}

/// The tuning record's configuration attached to `op`, if any.
pub fn tuned(op: OperationRef) -> Option<tcc_kernels::GemmConfig> {
    match KernelStrategy::from_attribute(op.attribute(TUNING).ok()?)? {
        KernelStrategy::Gemm { config, .. } => Some(config),
        _ => None,
    }
}

impl TccPass for ApplyTuning {
    const ARGUMENT: &'static str = "tcc-apply-tuning";
    const SUMMARY: &'static str =
        "Attach a tuning record's GEMM configurations to the kernels of the shapes it names";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    /// `#tcc.gemm` is a tcc attribute.
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc"];
    type Options = ApplyTuningOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: Root<'c>,
        options: &ApplyTuningOptions,
    ) -> PassResult<'c> {
        if let Some(record) = &options.record {
            apply(context, module, record).map_err(|e| PassError::at(module.location(), e))?;
        }
        Ok(())
    }
}
