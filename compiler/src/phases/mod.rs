//! The compilation pipeline as phases, IREE-style: each phase is a builder
//! that appends its passes to a textual pipeline, a named tcc-opt pipeline
//! (`--tcc-phase-<name>` runs that phase alone) and a `tcc compile
//! --compile-to=<phase>` stop.
//!
//! Phases run in order; `pipeline_to(phase, target)` is the concatenation of
//! every phase up to and including `phase`, and [`Phase::range`] the phases
//! after a `tcc compile --compile-from=<phase>` start (IR already at that
//! phase) up to a stop.

use std::fmt;
use std::str::FromStr;

use crate::config::Target;

/// The phases of `tcc compile`, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Verify the input and reject unsupported ops.
    Input,
    /// Graph clean-up: canonicalize, CSE, constant folding, DCE, transpose
    /// and reshape chain cancellation; softmax and layer norm spelled in
    /// primitive ops raised to the tcc composites.
    Graph,
    /// TOSA → linalg on tensors, composite expansion, elementwise fusion.
    Linalg,
    /// Group ops into kernels (one per fusion group) and name them.
    Dispatch,
    /// Attach each kernel's work-group configuration from the target config.
    Tile,
    /// Bufferize; outputs become caller-provided buffers.
    Buffer,
    /// Outline kernels into a gpu.module, map loops onto work-items, leave
    /// the host function launching them.
    Gpu,
    /// Kernels → OpenCL C; host → LLVM IR → object → shared library.
    Codegen,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::Input,
        Phase::Graph,
        Phase::Linalg,
        Phase::Dispatch,
        Phase::Tile,
        Phase::Buffer,
        Phase::Gpu,
        Phase::Codegen,
    ];

    /// The phases after `from` (every phase when `None`) up to and
    /// including `last`, in order.
    pub fn range(from: Option<Phase>, last: Phase) -> Vec<Phase> {
        Phase::ALL
            .into_iter()
            .filter(|p| from.is_none_or(|from| *p > from) && *p <= last)
            .collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            Phase::Input => "input",
            Phase::Graph => "graph",
            Phase::Linalg => "linalg",
            Phase::Dispatch => "dispatch",
            Phase::Tile => "tile",
            Phase::Buffer => "buffer",
            Phase::Gpu => "gpu",
            Phase::Codegen => "codegen",
        }
    }

    pub fn summary(self) -> &'static str {
        match self {
            Phase::Input => "tcc phase 1: verify the input and reject unsupported ops",
            Phase::Graph => {
                "tcc phase 2: inline calls, canonicalize, CSE, raise softmax/layer norm/attention to composites, one channels-last layout, fold constants and BatchNorms, DCE"
            }
            Phase::Linalg => {
                "tcc phase 3: expand composites, TOSA to linalg on tensors, reductions as generics, fuse elementwise ops, merge flattened contractions back into matmuls, strength-reduce math"
            }
            Phase::Dispatch => {
                "tcc phase 4: fold pads, producers and pools into their consumers' loads, group ops into kernels and name them"
            }
            Phase::Tile => {
                "tcc phase 5: put parallel dimensions outermost and attach per-target work-group configuration"
            }
            Phase::Buffer => {
                "tcc phase 6: bufferize; results become caller-provided output buffers"
            }
            Phase::Gpu => {
                "tcc phase 7: outline kernels into gpu.module, map loops onto work-items, plan intermediate memory"
            }
            Phase::Codegen => "tcc phase 8: emit kernels (OpenCL C) and the host program",
        }
    }

    /// The passes of this phase alone, as textual pipeline elements anchored
    /// on `builtin.module`. Codegen has no MLIR passes of its own (it is the
    /// back ends), so its pipeline is empty.
    pub fn passes(self, target: Target) -> String {
        self.passes_with(target, true)
    }

    /// As [`Phase::passes`]; `templates = false` compiles every kernel as a
    /// loop nest (no tiled-GEMM or row-softmax templates), which is what
    /// back ends other than OpenCL C (SPIR-V) can translate.
    pub fn passes_with(self, target: Target, templates: bool) -> String {
        self.passes_choosing(target, templates, &GemmChoice::default())
    }

    /// As [`Phase::passes_with`], with the tile phase's GEMM
    /// configurations taken from a tuning record or forced to one
    /// candidate (see [`GemmChoice`]).
    pub fn passes_choosing(self, target: Target, templates: bool, choice: &GemmChoice) -> String {
        match self {
            Phase::Input => "tcc-check-supported,tcc-record-interface".into(),
            Phase::Graph => {
                // After constant folding (the weights are constants) and
                // before BatchNorm folding (a convolution's profile tensor
                // is still its own output).
                let quantize = choice
                    .quantize
                    .as_ref()
                    .map(|options| format!("tcc-quantize-int8{{{options}}}"));
                [
                    "inline",
                    "canonicalize",
                    "cse",
                    "func.func(tosa-layerwise-constant-fold{aggressive-reduce-constant})",
                    "func.func(tcc-raise-composites)",
                    "func.func(tcc-raise-attention)",
                    "canonicalize",
                    "tcc-propagate-layout",
                    "canonicalize",
                    "tcc-fold-constants",
                    quantize.as_deref().unwrap_or_default(),
                    "tcc-fold-batch-norm",
                    "canonicalize",
                    "cse",
                    "symbol-dce",
                ]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(",")
            }
            Phase::Linalg => {
                let fuse = format!(
                    "tcc-fuse-elementwise{{max-ops={}}}",
                    choice.max_fused_ops.unwrap_or(target.max_fused_ops())
                );
                [
                if templates { "tcc-convert-softmax-to-linalg" } else { "" },
                if templates { "tcc-convert-layer-norm-to-rows" } else { "" },
                if templates { "tcc-convert-attention-to-kernel" } else { "" },
                "tcc-decompose-composites",
                "canonicalize",
                "func.func(tosa-optional-decompositions,tosa-to-linalg-named{prefer-conv2d-kernel-layout-hwcf},tosa-to-linalg,tosa-to-arith,tosa-to-tensor)",
                "tcc-reduction-identities",
                "tcc-fold-constants",
                "tcc-generalize-reductions",
                "canonicalize",
                "cse",
                fuse.as_str(),
                "canonicalize",
                // After fusion, whose reshape propagation folds a flatten
                // into the fully connected layer after it.
                "tcc-collapse-contractions",
                "canonicalize",
                // After fusion, which puts constant exponents in the bodies.
                "tcc-simplify-math",
                "cse",
            ]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(",")
            }
            Phase::Dispatch => format!(
                "tcc-concat-in-place,tcc-fold-conv-inputs{{pools={} conv-producers={} conv-pad-channels={}}},tcc-fold-pad-slices,tcc-form-dispatches",
                target.fold_pools_into_convs().name(),
                target.fold_producers_into_convs(),
                target.conv_pad_channels().unwrap_or(0)
            ),
            Phase::Tile => format!(
                "tcc-hoist-parallel-dims,tcc-configure-kernels{{target={} templates={templates}{}}},tcc-pack-weight-panels",
                target.name(),
                choice.options()
            ),
            Phase::Buffer => [
                "tcc-unique-results",
                "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}",
                "canonicalize",
                "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}",
                "canonicalize",
                "cse",
                // CSE makes an in-place concat's copies self-copies
                // (`memref.copy %v, %v`), which canonicalize erases.
                "canonicalize",
                "tcc-elide-output-copies",
                // Bufferization creates the constants' globals in an order
                // that varies between runs.
                "tcc-order-globals",
            ]
            .join(","),
            Phase::Gpu => [
                // Strategies for the device ops bufferization made or
                // stripped, for the module's target.
                "tcc-configure-kernels",
                "tcc-outline-kernels",
                "tcc-attach-split-k-scratch",
                if choice.tensor_map_slots { "tcc-attach-tensor-map-slots" } else { "" },
                "tcc-lower-kernel-loops",
                "tcc-map-loops-to-work-items",
                "lower-affine",
                "canonicalize",
                "cse",
                // Before the plan, which sizes half buffers by their storage.
                match choice.storage {
                    Storage::Fp32 => "",
                    Storage::Fp16 => "tcc-narrow-storage",
                    Storage::Bf16 => "tcc-narrow-storage{type=bf16}",
                },
                "tcc-plan-memory",
                // Last: kernels equal after everything above share one.
                "tcc-dedupe-kernels",
            ]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(","),
            Phase::Codegen => String::new(),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Phase {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Phase::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| {
                let names: Vec<_> = Phase::ALL.iter().map(|p| p.name()).collect();
                format!("unknown phase '{text}' (phases: {})", names.join(", "))
            })
    }
}

/// The whole pipeline from the input up to and including `last`, as a
/// `builtin.module(...)` textual pipeline.
pub fn pipeline_to(last: Phase, target: Target) -> String {
    pipeline_to_with(last, target, true)
}

/// As [`pipeline_to`], with or without kernel templates.
pub fn pipeline_to_with(last: Phase, target: Target, templates: bool) -> String {
    pipeline_to_choosing(last, target, templates, &GemmChoice::default())
}

/// What the pipeline takes from the command line instead of the target's
/// tables: GEMM configurations (`tcc compile --tuning=FILE`, `tcc tune`'s
/// rounds) and the fusion cap (`tcc compile --max-fused-ops=N`).
#[derive(Clone, Debug, Default)]
pub struct GemmChoice {
    /// A tuning record (`tcc tune`'s output) to take configurations from.
    pub tuning: Option<std::path::PathBuf>,
    /// Force every GEMM's `candidate`-th configuration.
    pub candidate: Option<usize>,
    /// The most operations in one fused elementwise body, instead of
    /// `Target::max_fused_ops` (0: no cap).
    pub max_fused_ops: Option<i64>,
    /// How weights and intermediate activations are held in device memory
    /// (`tcc compile --storage`).
    pub storage: Storage,
    /// Post-training int8 quantization (`tcc compile --quantize=int8`):
    /// the options of `tcc-quantize-int8` (`profile=FILE ...`), which then
    /// runs in the graph phase.
    pub quantize: Option<String>,
    /// GEMMs may take the TF32 `wgmma` body (`tcc compile
    /// --precision=tf32`), which builds its tensor maps in slots that
    /// `tcc-attach-tensor-map-slots` passes in the gpu phase.
    pub tensor_map_slots: bool,
    /// The kernels are launched through the CUDA driver (`tcc compile
    /// --backend=cuda --precision=tf32`): large TF32 products take the
    /// 256x128 tile (`tcc-configure-kernels{large-tf32-tiles}`) whose
    /// wgmma body stages its operands in CUDA dynamic local memory.
    pub dynamic_local: bool,
}

/// The element type weights and intermediate activations are stored in
/// (`tcc compile --storage`, and `--precision=fp16|bf16`); kernels compute
/// in f32 registers either way, and the model's inputs and outputs keep
/// their types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Storage {
    /// As the model says (f32).
    #[default]
    Fp32,
    /// IEEE half: `tcc-narrow-storage` in the gpu phase.
    Fp16,
    /// bfloat16: `tcc-narrow-storage{type=bf16}` in the gpu phase.
    Bf16,
}

impl GemmChoice {
    /// The options of `tcc-configure-kernels` that say this (with a
    /// leading space), or nothing.
    fn options(&self) -> String {
        let mut text = String::new();
        if let Some(path) = &self.tuning {
            text.push_str(&format!(" tuning=\"{}\"", path.display()));
        }
        if let Some(candidate) = self.candidate {
            text.push_str(&format!(" candidate={candidate}"));
        }
        if self.dynamic_local {
            text.push_str(" large-tf32-tiles=true");
        }
        text
    }

    /// Checks that a record's path can travel in a textual pipeline.
    pub fn check(&self) -> Result<(), String> {
        if let Some(path) = &self.tuning {
            let text = path.display().to_string();
            if text.contains(['"', '{', '}']) {
                return Err(format!(
                    "the tuning record's path {text} contains a quote or a brace"
                ));
            }
        }
        Ok(())
    }
}

/// As [`pipeline_to_with`], with the GEMM configurations chosen by `choice`.
pub fn pipeline_to_choosing(
    last: Phase,
    target: Target,
    templates: bool,
    choice: &GemmChoice,
) -> String {
    pipeline_between(None, last, target, templates, choice)
}

/// The phases after `from` (all when `None`) up to and including `last`,
/// as a `builtin.module(...)` textual pipeline (`tcc compile
/// --compile-from`).
pub fn pipeline_between(
    from: Option<Phase>,
    last: Phase,
    target: Target,
    templates: bool,
    choice: &GemmChoice,
) -> String {
    let elements: Vec<String> = Phase::range(from, last)
        .into_iter()
        .map(|p| p.passes_choosing(target, templates, choice))
        .filter(|p| !p.is_empty())
        .collect();
    format!("builtin.module({})", elements.join(","))
}

/// Registers every pass ([`crate::passes::register_all`]) and the phase
/// pipelines that name them: what a tool calls before it parses a pipeline.
/// Idempotent.
pub fn register_all() {
    crate::passes::register_all();
    register_phase_pipelines();
}

/// Registers `tcc-phase-<name>` pipelines (for the default target) so that
/// tcc-opt can run one phase at a time.
pub fn register_phase_pipelines() {
    for phase in Phase::ALL {
        let passes = phase.passes(Target::default());
        if passes.is_empty() {
            continue;
        }
        tcc_dialects::register_pass_pipeline(
            &format!("tcc-phase-{}", phase.name()),
            phase.summary(),
            &passes,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dispatch_phase_passes_the_targets_folding_choices() {
        // pocl-cpu keeps a convolution's producer as its own kernel.
        let cpu_dispatch = Phase::Dispatch.passes(Target::PoclCpu);
        assert!(
            cpu_dispatch.contains("conv-producers=false"),
            "{cpu_dispatch}"
        );
        // Nor pools (unrolled into a 1x1 convolution's k loop), nor the
        // pads of convolutions past a stem's few channels.
        assert!(cpu_dispatch.contains("pools=none"), "{cpu_dispatch}");
        assert!(
            cpu_dispatch.contains("conv-pad-channels=8"),
            "{cpu_dispatch}"
        );
        let gpu_dispatch = Phase::Dispatch.passes(Target::Nvidia);
        assert!(
            gpu_dispatch.contains("pools=strided conv-producers=true conv-pad-channels=0"),
            "{gpu_dispatch}"
        );
    }

    #[test]
    fn phases_parse_by_name_and_reject_unknown() {
        for phase in Phase::ALL {
            assert_eq!(phase.name().parse::<Phase>().unwrap(), phase);
        }
        let error = "tiles".parse::<Phase>().unwrap_err();
        assert!(error.contains("unknown phase 'tiles'"), "{error}");
    }

    #[test]
    fn pipeline_to_graph_stops_before_linalg() {
        let text = pipeline_to(Phase::Graph, Target::default());
        assert!(
            text.starts_with(
                "builtin.module(tcc-check-supported,tcc-record-interface,inline,canonicalize"
            ),
            "{text}"
        );
        assert!(!text.contains("tosa-to-linalg"), "{text}");
    }

    #[test]
    fn a_range_starts_after_its_first_phase() {
        assert_eq!(
            Phase::range(Some(Phase::Buffer), Phase::Codegen),
            [Phase::Gpu, Phase::Codegen]
        );
        assert_eq!(Phase::range(Some(Phase::Gpu), Phase::Gpu), []);
        assert_eq!(
            Phase::range(None, Phase::Graph),
            [Phase::Input, Phase::Graph]
        );
        let text = pipeline_between(
            Some(Phase::Buffer),
            Phase::Gpu,
            Target::default(),
            true,
            &GemmChoice::default(),
        );
        assert!(
            text.starts_with("builtin.module(tcc-configure-kernels,tcc-outline-kernels,"),
            "{text}"
        );
        assert!(!text.contains("one-shot-bufferize"), "{text}");
    }
}
