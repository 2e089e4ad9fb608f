//! `tcc-configure-kernels`: the tile phase's strategy step. Asks the target
//! configuration (`config/`) for each kernel's work-group size and records
//! it as `tcc.config = {workgroup_size = N}` on the kernel's root op, and
//! the target as `tcc.target` on the module, where the gpu phase's mapping
//! reads them. The mechanism never consults the target itself. A tuning
//! record (`tuning=FILE`, written by `tcc tune`) overrides the target's
//! GEMM table for the shapes it measured; `candidate=N` forces every
//! GEMM's N-th candidate configuration, for the tuner's measurements.

use melior::ir::attribute::AttributeLike;
use melior::ir::attribute::{
    DenseI64ArrayAttribute, DictionaryAttribute, IntegerAttribute, StringAttribute,
};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::r#type::IntegerType;
use melior::ir::{Identifier, TypeLike, ValueLike};

use super::form_dispatches::KIND_ATTR;
use super::pass::{PassError, PassOptionInfo, PassOptionKind, PassOptions, TccPass};
use crate::config::tuning::TuningRecord;
use crate::config::{GemmConfig, KernelKind, Target};
use crate::ir::types::StaticTensor;
use crate::ir::util::{collect_ops, string_value};

pub struct ConfigureKernels;

/// The attribute holding a kernel's configuration.
pub const CONFIG_ATTR: &str = "tcc.config";
/// The module attribute naming the target the kernels are configured for.
pub const TARGET_ATTR: &str = "tcc.target";

#[derive(Debug)]
pub struct ConfigureOptions {
    pub target: Target,
    /// Allow kernel templates (tiled GEMM, row reductions); off for back
    /// ends that translate loop nests only.
    pub templates: bool,
    /// A tuning record (`tcc tune`): its configurations replace the
    /// table's for the product shapes it names.
    pub tuning: Option<TuningRecord>,
    /// Take every GEMM's `candidate`-th configuration
    /// ([`Target::gemm_candidates`]; the table's where it has fewer):
    /// how `tcc tune` compiles each round of its measurements.
    pub candidate: Option<usize>,
}

impl Default for ConfigureOptions {
    fn default() -> Self {
        Self {
            target: Target::default(),
            templates: true,
            tuning: None,
            candidate: None,
        }
    }
}

impl PassOptions for ConfigureOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[
        PassOptionInfo {
            name: "target",
            kind: PassOptionKind::String,
            default: "generic",
            description: "The device family whose configuration tables apply: generic, nvidia or pocl-cpu",
        },
        PassOptionInfo {
            name: "templates",
            kind: PassOptionKind::Bool,
            default: "true",
            description: "Allow kernel templates (tiled GEMM, row reductions); off for back ends that translate loop nests only",
        },
        PassOptionInfo {
            name: "tuning",
            kind: PassOptionKind::String,
            default: "",
            description: "A tuning record (tcc tune) whose configurations replace the tables' (empty: none)",
        },
        PassOptionInfo {
            name: "candidate",
            kind: PassOptionKind::String,
            default: "",
            description: "Take every GEMM's N-th candidate configuration, as tcc tune does (empty: the table's choice)",
        },
    ];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "target" => {
                self.target = value.parse()?;
                Ok(())
            }
            "templates" => {
                self.templates = super::pass::parse_bool(key, value)?;
                Ok(())
            }
            "tuning" | "candidate" if value.is_empty() => Ok(()),
            "tuning" => {
                self.tuning = Some(TuningRecord::load(std::path::Path::new(
                    value.trim_matches('"'),
                ))?);
                Ok(())
            }
            "candidate" => {
                self.candidate = Some(value.parse().map_err(|_| {
                    format!("candidate must be a non-negative integer, not '{value}'")
                })?);
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

impl ConfigureOptions {
    /// The GEMM configuration for a kernel of `kind` computing a
    /// `batch x m x n x k` product: the forced candidate, else the tuning
    /// record's, else the target's table.
    fn gemm_config(&self, kind: &str, [batch, m, n, k]: [i64; 4]) -> Option<GemmConfig> {
        if let Some(index) = self.candidate {
            let candidates = self.target.gemm_candidates(batch, m, n, k);
            return candidates.get(index).or(candidates.first()).copied();
        }
        let tuned = self
            .tuning
            .as_ref()
            .and_then(|record| record.lookup(self.target, kind, [batch, m, n, k]));
        tuned.or_else(|| self.target.gemm_config(batch, m, n, k))
    }
}

fn kind_from_name(name: &str) -> KernelKind {
    match name {
        "matmul" => KernelKind::Matmul,
        "convolution" => KernelKind::Convolution,
        "reduction" => KernelKind::Reduction,
        "softmax" => KernelKind::Softmax,
        "layer_norm" => KernelKind::LayerNorm,
        _ => KernelKind::Elementwise,
    }
}

/// The key of the tiled-GEMM tile sizes in `tcc.config`:
/// `[tile_m, tile_n, tile_k, work_m, work_n, split_k]`.
pub const GEMM_KEY: &str = "gemm";

/// The key of a loop-nest kernel's largest grid in `tcc.config`, in
/// work-groups (see [`crate::config::KernelConfig::max_workgroups`]).
pub const MAX_WORKGROUPS_KEY: &str = "max_workgroups";

/// The key of the row-reduction strategy in `tcc.config`: work-items per
/// output element.
pub const ROW_REDUCE_KEY: &str = "row_reduce";

/// Config key of a split-K GEMM's scratch sizes, `array<i64: workspace
/// floats, counters>` (see `tcc-attach-split-k-scratch`).
pub const SPLIT_K_SCRATCH_KEY: &str = "split_k_scratch";

/// Combiners a row reduction can split into partials (associative and
/// commutative on floats up to rounding).
pub const ROW_COMBINERS: &[&str] = &[
    "arith.addf",
    "arith.mulf",
    "arith.maximumf",
    "arith.maxnumf",
    "arith.minimumf",
    "arith.minnumf",
];

/// A reduction the row template can run: its reduced length, and whether
/// every input it reduces along reads contiguous elements (the reduced
/// dimension is the input's innermost).
struct RowReduction {
    length: i64,
    contiguous: bool,
}

/// The row reduction `op` is, if it may run one work-group per output
/// element: a single-output f32 `linalg.generic` whose only reduction
/// dimension is the innermost, at least 128 long, initialised by a fill,
/// with a body ending in `combiner(x, acc)` where `acc` (the output) is
/// used only there.
fn row_reduction(op: OperationRef) -> Option<RowReduction> {
    use melior::ir::{BlockLike, RegionLike};
    if crate::ir::util::op_name(&op) != "linalg.generic" || op.result_count() != 1 {
        return None;
    }
    let iterators = op.attribute("iterator_types").ok()?.to_string();
    let reductions = iterators.matches("reduction").count();
    let dims = iterators.matches("parallel").count() + reductions;
    if reductions != 1
        || !iterators
            .trim_end_matches(']')
            .trim_end()
            .ends_with("reduction>")
    {
        return None;
    }
    let result = StaticTensor::of(op.result(0).ok()?.r#type())?;
    if !result.element.is_f32() {
        return None;
    }
    // The init must be a fill (the kernel starts from its value).
    let init = op.operand(op.operand_count() - 1).ok()?;
    if crate::ir::util::defining_op(init)
        .is_none_or(|d| crate::ir::util::op_name(&d) != "linalg.fill")
    {
        return None;
    }
    // The reduced length: the dimension of an input indexed by the last dim.
    let maps = melior::ir::attribute::ArrayAttribute::try_from(op.attribute("indexing_maps").ok()?)
        .ok()?;
    let mut length = None;
    let mut contiguous = true;
    for index in 0..op.operand_count() - 1 {
        let operand = StaticTensor::of(op.operand(index).ok()?.r#type())?;
        let map =
            unsafe { mlir_sys::mlirAffineMapAttrGetValue(maps.element(index).ok()?.to_raw()) };
        let results = unsafe { mlir_sys::mlirAffineMapGetNumResults(map) };
        for position in 0..results {
            let expr = unsafe { mlir_sys::mlirAffineMapGetResult(map, position) };
            if unsafe {
                mlir_sys::mlirAffineExprIsADim(expr)
                    && mlir_sys::mlirAffineDimExprGetPosition(expr) as usize == dims - 1
            } {
                length = Some(operand.shape[position as usize]);
                contiguous &= position == results - 1;
            }
        }
    }
    let length = length.filter(|l| *l >= 128)?;
    // The body: yield combiner(x, acc) with acc used once.
    let block = op.region(0).ok()?.first_block()?;
    let acc = block.argument(block.argument_count() - 1).ok()?;
    let terminator = block.terminator()?;
    let combined = crate::ir::util::defining_op(terminator.operand(0).ok()?)?;
    let uses_acc = combined
        .operands()
        .any(|v| v == melior::ir::Value::from(acc));
    (ROW_COMBINERS.contains(&crate::ir::util::op_name(&combined).as_str())
        && uses_acc
        && crate::ir::util::use_count(acc.into()) == 1)
        .then_some(RowReduction { length, contiguous })
}

/// `(batch, m, n, k)` of a contraction the GEMM template can run (a plain
/// or batched matmul, or a convolution as an implicit GEMM) with static
/// shapes.
pub fn gemm_shape(op: OperationRef) -> Option<(i64, i64, i64, i64)> {
    let name = crate::ir::util::op_name(&op);
    let (window, filter_index, _) = crate::patterns::conv_inputs::window_layout(op);
    if window == "conv_2d_nhwc_hwcf" {
        // Implicit GEMM: M = N*OH*OW, N = F, K = KH*KW*C (also for the
        // generic of `tcc-fold-conv-inputs`, whose A loads the writer
        // translates from its body).
        let output = StaticTensor::of(op.result(0).ok()?.r#type())?;
        let filter = StaticTensor::of(op.operand(filter_index).ok()?.r#type())?;
        let m = output.shape[0] * output.shape[1] * output.shape[2];
        return Some((
            1,
            m,
            output.shape[3],
            filter.shape[0] * filter.shape[1] * filter.shape[2],
        ));
    }
    if name != "linalg.matmul" && name != "linalg.batch_matmul" {
        return None;
    }
    // Only the default (row-major, untransposed) indexing.
    if let Ok(maps) = op.attribute("indexing_maps") {
        let default = if name == "linalg.matmul" {
            "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]"
        } else {
            "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]"
        };
        if maps.to_string() != default {
            return None;
        }
    }
    let a = StaticTensor::of(op.operand(0).ok()?.r#type())?;
    let b = StaticTensor::of(op.operand(1).ok()?.r#type())?;
    let (ra, rb) = (a.rank(), b.rank());
    if ra < 2 || rb < 2 {
        return None;
    }
    let batch = a.shape[..ra - 2].iter().product();
    Some((batch, a.shape[ra - 2], b.shape[rb - 1], a.shape[ra - 1]))
}

/// Parallel points of a kernel: the elements of its largest result.
fn work_items(op: OperationRef) -> i64 {
    op.results()
        .filter_map(|r| StaticTensor::of(r.r#type()).map(|t| t.num_elements()))
        .max()
        .unwrap_or(1)
}

impl TccPass for ConfigureKernels {
    const ARGUMENT: &'static str = "tcc-configure-kernels";
    const SUMMARY: &'static str =
        "Attach each kernel's work-group configuration from the target's tuning tables";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    type Options = ConfigureOptions;

    fn run<'c>(
        &self,
        context: &'c melior::Context,
        module: OperationRef<'c, 'c>,
        options: &ConfigureOptions,
    ) -> Result<(), PassError<'c>> {
        let i64_type = IntegerType::new(context, 64).into();
        for op in collect_ops(module) {
            let Some(kind) = op.attribute(KIND_ATTR).ok().and_then(string_value) else {
                continue;
            };
            let config = options
                .target
                .kernel_config(kind_from_name(&kind), work_items(op));
            let mut entries = vec![(
                Identifier::new(context, "workgroup_size"),
                IntegerAttribute::new(i64_type, config.workgroup_size).into(),
            )];
            // A template below (GEMM, row) drops it: it sizes its own grid.
            let max_workgroups = config.max_workgroups.map(|limit| {
                (
                    Identifier::new(context, MAX_WORKGROUPS_KEY),
                    IntegerAttribute::new(i64_type, limit).into(),
                )
            });
            if options.templates
                && let Some((batch, m, n, k)) = gemm_shape(op)
                && let Some(gemm) = options.gemm_config(&kind, [batch, m, n, k])
            {
                entries[0].1 = IntegerAttribute::new(i64_type, gemm.workgroup_size() as i64).into();
                let tiles = [
                    gemm.tile_m,
                    gemm.tile_n,
                    gemm.tile_k,
                    gemm.work_m,
                    gemm.work_n,
                    gemm.split_k,
                ]
                .map(i64::from);
                entries.push((
                    Identifier::new(context, GEMM_KEY),
                    DenseI64ArrayAttribute::new(context, &tiles).into(),
                ));
                if gemm.split_k > 1 {
                    let shape = tcc_kernels::GemmShape { batch, m, n, k };
                    let (workspace, counters) = gemm.split_k_scratch(&shape);
                    entries.push((
                        Identifier::new(context, SPLIT_K_SCRATCH_KEY),
                        DenseI64ArrayAttribute::new(context, &[workspace, counters]).into(),
                    ));
                }
            }
            if options.templates
                && let Some(reduction) = row_reduction(op)
                && options.target.row_reduction_template(reduction.contiguous)
            {
                let workgroup = options.target.row_workgroup(reduction.length);
                entries[0].1 = IntegerAttribute::new(i64_type, workgroup).into();
                entries.push((
                    Identifier::new(context, ROW_REDUCE_KEY),
                    IntegerAttribute::new(i64_type, workgroup).into(),
                ));
            }
            if (kind == "softmax" || kind == "layer_norm")
                && let Some(columns) = op
                    .result(0)
                    .ok()
                    .and_then(|r| StaticTensor::of(r.r#type()))
                    .and_then(|t| t.shape.last().copied())
            {
                entries[0].1 =
                    IntegerAttribute::new(i64_type, options.target.row_workgroup(columns)).into();
            }
            let templated = entries.len() > 1 || kind == "softmax" || kind == "layer_norm";
            if let Some(entry) = max_workgroups.filter(|_| !templated) {
                entries.push(entry);
            }
            let dictionary = DictionaryAttribute::new(context, &entries);
            let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            op.set_discardable_attribute(CONFIG_ATTR, dictionary.into());
        }
        crate::ir::util::set_discardable_attribute(
            module,
            TARGET_ATTR,
            StringAttribute::new(context, options.target.name()).into(),
        );
        Ok(())
    }
}
