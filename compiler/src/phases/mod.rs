//! The compilation pipeline as phases, IREE-style: each phase is a builder
//! that appends its passes, with typed options, to a [`Pipeline`] (built
//! in code, never as text), a named tcc-opt pipeline (`--tcc-phase-<name>`
//! runs that phase alone) and a `tcc compile --compile-to=<phase>` stop.
//!
//! Phases run in order; `pipeline_to(phase, target)` is the concatenation of
//! every phase up to and including `phase`, and [`Phase::range`] the phases
//! after a `tcc compile --compile-from=<phase>` start (IR already at that
//! phase) up to a stop.

use std::fmt;
use std::str::FromStr;

mod pipeline;

pub use pipeline::{Anchor, PassStep, Pipeline};

use crate::config::Target;
use crate::config::targets::{LaunchApi, Precision};

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

    /// The passes of this phase alone. Codegen has no MLIR passes of its
    /// own (it is the back ends), so its pipeline is empty.
    pub fn passes(self, target: Target) -> Pipeline {
        self.passes_with(target, true)
    }

    /// As [`Phase::passes`]; `templates = false` compiles every kernel as a
    /// loop nest (no tiled-GEMM or row-softmax templates), which is what
    /// back ends other than OpenCL C (SPIR-V) can translate.
    pub fn passes_with(self, target: Target, templates: bool) -> Pipeline {
        self.passes_choosing(target, templates, &GemmChoice::default())
    }

    /// As [`Phase::passes_with`], with what the command line chose (see
    /// [`GemmChoice`]): built in code, step by step.
    pub fn passes_choosing(self, target: Target, templates: bool, choice: &GemmChoice) -> Pipeline {
        let mut p = Pipeline::new();
        match self {
            Phase::Input => {
                p.add(choice.attach_target(Some(target)))
                    .pass("tcc-check-supported")
                    .pass("tcc-record-interface");
            }
            Phase::Graph => {
                // Before the inliner's canonicalization folds any cast.
                p.pass("tcc-lower-bool-casts")
                    .pass("inline")
                    .pass("canonicalize")
                    .pass("cse")
                    .add(
                        PassStep::new("tosa-layerwise-constant-fold")
                            .on_functions()
                            .flag("aggressive-reduce-constant"),
                    )
                    .func_pass("tcc-raise-composites")
                    .func_pass("tcc-raise-attention")
                    .pass("canonicalize")
                    .pass("tcc-propagate-layout")
                    .pass("canonicalize")
                    .pass("tcc-fold-constants");
                // After constant folding (the weights are constants) and
                // before BatchNorm folding (a convolution's profile tensor
                // is still its own output).
                if let Some(options) = &choice.quantize {
                    let mut step = PassStep::new("tcc-quantize-int8");
                    for (key, value) in options {
                        step = step.option(key, value);
                    }
                    p.add(step);
                }
                p.pass("tcc-fold-batch-norm")
                    // After quantization (which keeps its own products):
                    // the merged weights' concatenations fold right after.
                    .pass("tcc-merge-sibling-matmuls")
                    // After BatchNorm folding, which folds into each group:
                    // a grouped convolution as one op (ir::grouped_conv).
                    .pass("tcc-merge-grouped-convs")
                    .pass("tcc-fold-constants")
                    .pass("canonicalize")
                    .pass("cse")
                    .pass("symbol-dce");
            }
            Phase::Linalg => {
                if templates {
                    p.pass("tcc-convert-softmax-to-linalg")
                        .pass("tcc-convert-layer-norm-to-rows")
                        .pass("tcc-convert-attention-to-kernel");
                }
                p.pass("tcc-decompose-composites")
                    .pass("canonicalize")
                    .func_pass("tosa-optional-decompositions")
                    .add(
                        PassStep::new("tosa-to-linalg-named")
                            .on_functions()
                            .flag("prefer-conv2d-kernel-layout-hwcf"),
                    )
                    .func_pass("tosa-to-linalg")
                    .func_pass("tosa-to-arith")
                    .func_pass("tosa-to-tensor")
                    // Before anything reads the broadcast guards' generics.
                    .pass("tcc-fold-tied-broadcasts")
                    .pass("tcc-reduction-identities")
                    .pass("tcc-fold-constants")
                    .pass("tcc-generalize-reductions")
                    .pass("canonicalize")
                    .pass("cse")
                    .add(PassStep::new("tcc-fuse-elementwise").option(
                        "max-ops",
                        choice.max_fused_ops.unwrap_or(target.max_fused_ops()),
                    ))
                    .pass("canonicalize")
                    // After fusion, whose reshape propagation folds a
                    // flatten into the fully connected layer after it.
                    .pass("tcc-collapse-contractions")
                    .pass("canonicalize")
                    // After fusion, which puts constant exponents in the
                    // bodies.
                    .pass("tcc-simplify-math")
                    .pass("cse");
            }
            Phase::Dispatch => {
                p.pass("tcc-concat-in-place")
                    .add(
                        PassStep::new("tcc-fold-conv-inputs")
                            .option("pools", target.fold_pools_into_convs().name())
                            .option("conv-producers", target.fold_producers_into_convs())
                            .option("conv-pad-channels", target.conv_pad_channels().unwrap_or(0))
                            .option(
                                "conv-unfold-channels",
                                target.conv_unfold_channels(choice.precision).unwrap_or(0),
                            ),
                    )
                    .pass("tcc-fold-pad-slices")
                    .pass("tcc-reshape-epilogues")
                    .pass("tcc-form-dispatches");
            }
            Phase::Tile => {
                let mut configure =
                    PassStep::new("tcc-configure-kernels").option("templates", templates);
                if let Some(candidate) = choice.candidate {
                    configure = configure.option("candidate", candidate);
                }
                if let Some(windows) = choice.windows {
                    configure = configure.option("windows", windows);
                }
                if let Some(int8_gemm) = choice.int8_gemm {
                    configure = configure.option("int8-gemm", int8_gemm);
                }
                p.pass("tcc-hoist-parallel-dims")
                    .add(configure)
                    .pass("tcc-pack-weight-panels");
            }
            Phase::Buffer => {
                p.pass("tcc-unique-results").pass("tcc-read-only-inputs");
                // Intermediates chained through one shared empty tensor
                // would be bufferized into the (f32) output argument.
                if choice.storage != Storage::Fp32 {
                    p.pass("tcc-unshare-empty-tensors");
                }
                p.add(
                    PassStep::new("one-shot-bufferize")
                        .flag("bufferize-function-boundaries")
                        .option("function-boundary-type-conversion", "identity-layout-map"),
                )
                .pass("canonicalize")
                .add(
                    PassStep::new("buffer-results-to-out-params")
                        .flag("hoist-static-allocs")
                        .flag("modify-public-functions"),
                )
                .pass("canonicalize")
                .pass("cse")
                // CSE makes an in-place concat's copies self-copies
                // (`memref.copy %v, %v`), which canonicalize erases.
                .pass("canonicalize")
                .pass("tcc-elide-output-copies")
                // The attention kernel widens what it loads: a key or
                // value cast up from 16 bits is read as it is stored.
                .pass("tcc-fold-attention-casts")
                // The attention kernel reads Q, K and V and writes its
                // output through strides: their transposes become views.
                .pass("tcc-fold-attention-transposes")
                // Bufferization creates the constants' globals in an
                // order that varies between runs.
                .pass("tcc-order-globals");
            }
            Phase::Gpu => {
                // Strategies for the device ops bufferization made or
                // stripped, for the module's target.
                p.pass("tcc-configure-kernels")
                    .pass("tcc-outline-kernels")
                    .pass("tcc-attach-split-k-scratch")
                    // Only on nvidia at precision tf32 (the module's target).
                    .pass("tcc-attach-tensor-map-slots")
                    .pass("tcc-lower-kernel-loops")
                    .pass("tcc-map-loops-to-work-items")
                    .pass("lower-affine")
                    // Host extents of views on a symbolic dimension (a
                    // split's subviews read only for their sizes) become
                    // the values they were made from.
                    .pass("resolve-ranked-shaped-type-result-dims")
                    .pass("canonicalize")
                    .pass("cse");
                // Before the plan, which sizes half buffers by their storage.
                match choice.storage {
                    Storage::Fp32 => {}
                    Storage::Fp16 => {
                        p.pass("tcc-narrow-storage");
                    }
                    Storage::Bf16 => {
                        p.add(PassStep::new("tcc-narrow-storage").option("type", "bf16"));
                    }
                }
                p.pass("tcc-plan-memory")
                    // Last: kernels equal after everything above share one.
                    .pass("tcc-dedupe-kernels");
            }
            Phase::Codegen => {}
        }
        p
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

/// The whole pipeline from the input up to and including `last`.
pub fn pipeline_to(last: Phase, target: Target) -> Pipeline {
    pipeline_to_with(last, target, true)
}

/// As [`pipeline_to`], with or without kernel templates.
pub fn pipeline_to_with(last: Phase, target: Target, templates: bool) -> Pipeline {
    pipeline_to_choosing(last, target, templates, &GemmChoice::default())
}

/// What the pipeline takes from the command line instead of the target's
/// tables: GEMM configurations (`tcc compile --tuning=FILE`, `tcc tune`'s
/// rounds) and the fusion cap (`tcc compile --max-fused-ops=N`).
#[derive(Clone, Debug, Default)]
pub struct GemmChoice {
    /// A tuning record (`tcc tune`'s output) to take configurations from:
    /// the driver loads it and attaches its choices to the kernels
    /// (`tcc-apply-tuning`) between the dispatch and tile phases, so that
    /// its path never travels in the pipeline text.
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
    /// the options of `tcc-quantize-int8` (`profile`, ...) as key/value
    /// pairs, with which it then runs in the graph phase.
    pub quantize: Option<Vec<(&'static str, String)>>,
    /// The known target `--target` named (`nvidia-sm80`, `host`, ...);
    /// `None`: the family's own (`Target::name`), or, where the pipeline
    /// starts after the input phase, the module's.
    pub target_name: Option<String>,
    /// The GEMMs' arithmetic (`--precision`, where the target reaches its
    /// tensor cores), written into the module's `#tcc.target`; the tile
    /// phase copies it into each float `#tcc.gemm`, and TF32 GEMMs on
    /// nvidia get tensor-map slots for the `wgmma` body.
    pub precision: Precision,
    /// How the kernels are launched (`--backend`): with `cuda` and TF32,
    /// large products take the 256x128 tile whose wgmma body stages its
    /// operands in CUDA dynamic local memory.
    pub api: LaunchApi,
    /// The architecture instead of the target's (`--gpu-arch`).
    pub arch: Option<String>,
    /// Floats per SIMD register instead of the target's (the deprecated
    /// `TCC_CPU_VECTOR_FLOATS`).
    pub vector_width: Option<i64>,
    /// Depthwise convolutions and poolings on the window template, forced
    /// (the deprecated `TCC_WINDOWS`); `None`: the target's choice.
    pub windows: Option<crate::passes::WindowChoice>,
    /// int8 contractions on the GEMM template or not (the deprecated
    /// `TCC_INT8_GEMM`); `None`: on.
    pub int8_gemm: Option<crate::passes::Int8Gemm>,
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
    /// The `tcc-attach-target` step: the known target (`target`'s own
    /// where `--target` named none; none at all when `target` is `None`,
    /// a pipeline resuming after the input phase, which keeps the
    /// module's) and the command line's changes to it.
    fn attach_target(&self, target: Option<Target>) -> PassStep {
        let mut step = PassStep::new("tcc-attach-target");
        let name = self
            .target_name
            .clone()
            .or_else(|| target.map(|t| t.name().to_string()));
        if let Some(name) = name {
            step = step.option("target", name);
        }
        if self.precision != Precision::Fp32 {
            step = step.option("precision", self.precision);
        }
        if self.api != LaunchApi::OpenCl {
            step = step.option("api", self.api);
        }
        if let Some(arch) = &self.arch {
            step = step.option("arch", arch);
        }
        if let Some(width) = self.vector_width {
            step = step.option("vector-width", width);
        }
        step
    }
}

/// As [`pipeline_to_with`], with the GEMM configurations chosen by `choice`.
pub fn pipeline_to_choosing(
    last: Phase,
    target: Target,
    templates: bool,
    choice: &GemmChoice,
) -> Pipeline {
    pipeline_between(None, last, target, templates, choice)
}

/// The phases after `from` (all when `None`) up to and including `last`
/// (`tcc compile --compile-from`). A pipeline that starts after the input
/// phase begins with the target step: the module keeps the target it was
/// compiled for unless the command line names one.
pub fn pipeline_between(
    from: Option<Phase>,
    last: Phase,
    target: Target,
    templates: bool,
    choice: &GemmChoice,
) -> Pipeline {
    let mut pipeline = Pipeline::new();
    for phase in Phase::range(from, last) {
        pipeline.extend(phase.passes_choosing(target, templates, choice));
    }
    if from.is_some() && !pipeline.is_empty() {
        pipeline.steps.insert(0, resume_target(choice));
    }
    pipeline
}

/// The target step of a pipeline that starts after the input phase.
pub fn resume_target(choice: &GemmChoice) -> PassStep {
    choice.attach_target(None)
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
        let mut passes = phase.passes(Target::default());
        if passes.is_empty() {
            continue;
        }
        // tcc-opt's input phase keeps a module's own target.
        if phase == Phase::Input {
            passes.steps[0] = PassStep::new("tcc-attach-target");
        }
        tcc_dialects::register_pass_pipeline(
            &format!("tcc-phase-{}", phase.name()),
            phase.summary(),
            &passes.elements(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dispatch_phase_passes_the_targets_folding_choices() {
        // pocl-cpu keeps a convolution's producer as its own kernel.
        let cpu_dispatch = Phase::Dispatch.passes(Target::PoclCpu).to_string();
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
        let gpu_dispatch = Phase::Dispatch.passes(Target::Nvidia).to_string();
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
        let text = pipeline_to(Phase::Graph, Target::default()).to_string();
        assert!(
            text.starts_with(
                "builtin.module(tcc-attach-target{target=generic},tcc-check-supported,tcc-record-interface,tcc-lower-bool-casts,inline,canonicalize"
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
        )
        .to_string();
        assert!(
            text.starts_with(
                "builtin.module(tcc-attach-target,tcc-configure-kernels,tcc-outline-kernels,"
            ),
            "{text}"
        );
        assert!(!text.contains("one-shot-bufferize"), "{text}");
    }

    #[test]
    fn the_command_line_reaches_the_target_step_and_the_tile_phase() {
        let choice = GemmChoice {
            target_name: Some("nvidia-sm80".into()),
            precision: Precision::Bf16,
            api: LaunchApi::Cuda,
            windows: Some(crate::passes::WindowChoice::Off),
            candidate: Some(2),
            tuning: Some("a \"quoted\" {braced} record.json".into()),
            ..GemmChoice::default()
        };
        let input = Phase::Input
            .passes_choosing(Target::Nvidia, true, &choice)
            .to_string();
        assert!(
            input.starts_with(
                "builtin.module(tcc-attach-target{target=nvidia-sm80 precision=bf16 api=cuda},"
            ),
            "{input}"
        );
        let tile = Phase::Tile
            .passes_choosing(Target::Nvidia, true, &choice)
            .to_string();
        assert_eq!(
            tile,
            "builtin.module(tcc-hoist-parallel-dims,tcc-configure-kernels{templates=true candidate=2 windows=off},tcc-pack-weight-panels)"
        );
        // The tuning record travels as attributes, not in the pipeline.
        let whole = pipeline_to_choosing(Phase::Gpu, Target::Nvidia, true, &choice).to_string();
        assert!(!whole.contains("record.json"), "{whole}");
        // Resuming keeps the module's target unless --target names one.
        assert_eq!(
            resume_target(&GemmChoice::default()),
            PassStep::new("tcc-attach-target")
        );
    }
}
