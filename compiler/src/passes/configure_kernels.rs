//! `tcc-configure-kernels`: the strategy step. Asks the target
//! configuration (`config/`) how each kernel is compiled and records the
//! answer once, as the kernel root op's typed strategy (`tcc.strategy =
//! #tcc.loops<...>`, `#tcc.gemm<...>`, `#tcc.row_reduce<...>`,
//! `#tcc.softmax<...>` or `#tcc.layer_norm<...>`) from the module's
//! `#tcc.target` (written by `tcc-attach-target` in the input phase): its
//! family's tables, its vector width for CPU register blocks, and its
//! precision, which a float GEMM's `#tcc.gemm` carries to the writers.
//! Outlining copies the strategy onto the kernel's `gpu.func`; the
//! mechanism never consults the target itself.
//!
//! It runs in the tile phase, on the dispatch phase's kernels, and again
//! at the start of the gpu phase for the device ops bufferization made or
//! stripped of their attributes (a `memref.copy` that becomes a kernel, a
//! bufferized `linalg.softmax`). `target=NAME` names a known target for
//! a module that states none (a tcc-opt run of this pass alone), which it
//! then gets. A tuning record (`tuning=FILE`, written by `tcc
//! tune`) overrides the target's GEMM table for the shapes it measured;
//! `candidate=N` forces every GEMM's N-th candidate configuration, for
//! the tuner's measurements. `windows=on|off|N` forces the
//! window template on (in blocks of N output columns) or off for
//! depthwise convolutions and poolings (`window.rs`), to time and test
//! it against the loop nest; `int8-gemm=off|N` does the same for int8
//! contractions (`int8.rs`). (`tcc compile` maps the deprecated
//! `TCC_WINDOWS` and `TCC_INT8_GEMM` environment variables to these.)

mod int8;
mod window;

pub use int8::Int8Gemm;
pub use window::WindowChoice;

use melior::Context;
use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef, OperationRefMut};
use melior::ir::{TypeLike, Value, ValueLike};

use super::apply_tuning::tuned;
use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::config::targets::{self, Precision, TargetDesc};
use crate::config::tuning::TuningRecord;
use crate::config::{GemmConfig, KernelKind, Target};
use crate::ir::attr_names::{KIND, TARGET};
use crate::ir::contraction::{GemmShape, gemm_shape_at};
use crate::ir::dynamic::shape_at;
use crate::ir::strategy::{self, KernelStrategy};
use crate::ir::types::{StaticTensor, static_shape};
use crate::ir::util::{collect_ops, op_name, string_value};

pub struct ConfigureKernels;

#[derive(Clone, Debug)]
pub struct ConfigureOptions {
    /// A known target for a module without `#tcc.target`; `None`: the
    /// module's, else `opencl-generic`.
    pub target: Option<String>,
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
    /// Whether depthwise convolutions and poolings take the window
    /// template: the target's choice, or forced.
    pub windows: window::WindowChoice,
    /// Large matmuls on NVIDIA take the 256x128 tile whose TF32 wgmma
    /// body stages its operands in CUDA dynamic local memory, instead of
    /// the table's 128x128 (`tcc compile --backend=cuda --precision=tf32`,
    /// whose target says `api = "cuda"` and `precision = "tf32"`).
    pub large_tf32_tiles: bool,
    /// Matmuls on NVIDIA whose sizes fit a tile of the FP16/BF16 wgmma
    /// body (128 x 128, 192 or 256: `tcc_kernels::gemm::half_tile_for`)
    /// take it instead of the table's (`tcc compile --backend=cuda
    /// --precision=fp16|bf16`, whose target says `api = "cuda"` and that
    /// precision): the table's smaller tiles suit `mma.sync`, not it.
    pub half_wgmma_tiles: bool,
    /// Whether int8 contractions take the GEMM template.
    pub int8_gemm: int8::Int8Gemm,
    /// The module's target's floats per SIMD register (set by `run`).
    vector_width: u32,
    /// The module's target's GEMM precision (set by `run`).
    precision: Precision,
    /// The extent a `?` is taken as when choosing a strategy: the largest
    /// declared maximum (`tcc.dims`; set by `run`, `None` without any).
    extent: Option<i64>,
}

impl Default for ConfigureOptions {
    fn default() -> Self {
        Self {
            target: None,
            templates: true,
            tuning: None,
            candidate: None,
            windows: window::WindowChoice::Auto,
            large_tf32_tiles: false,
            half_wgmma_tiles: false,
            int8_gemm: int8::Int8Gemm::On,
            vector_width: 4,
            precision: Precision::Fp32,
            extent: None,
        }
    }
}

impl PassOptions for ConfigureOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[
        PassOptionInfo {
            name: "target",
            kind: PassOptionKind::String,
            default: "",
            description: "A known target (tcc-attach-target's names) for a module without #tcc.target, which then gets it; a module's own target must be of the same family (empty: the module's #tcc.target, else opencl-generic)",
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
        PassOptionInfo {
            name: "windows",
            kind: PassOptionKind::String,
            default: "auto",
            description: "Depthwise convolutions and poolings on the window template: auto (the target's choice), on, off, or N (on, in blocks of N output columns)",
        },
        PassOptionInfo {
            name: "int8-gemm",
            kind: PassOptionKind::String,
            default: "on",
            description: "int8 contractions on the GEMM template's int8 form: on, off (loop nests, int32 row sums too) or N (on, with a k step of N, a multiple of 32)",
        },
        PassOptionInfo {
            name: "large-tf32-tiles",
            kind: PassOptionKind::Bool,
            default: "false",
            description: "On nvidia, matmuls the table gives 128x128 tiles take 256x128 tiles where their sizes divide, for the TF32 wgmma body in CUDA dynamic local memory (default: where the module's #tcc.target has api cuda and precision tf32, as tcc compile --backend=cuda --precision=tf32 writes it)",
        },
        PassOptionInfo {
            name: "half-wgmma-tiles",
            kind: PassOptionKind::Bool,
            default: "false",
            description: "On nvidia, matmuls whose sizes fit take a 128-row tile of the FP16/BF16 wgmma body in CUDA dynamic local memory (default: where the module's #tcc.target has api cuda and precision fp16 or bf16, as tcc compile --backend=cuda --precision=fp16 writes it)",
        },
    ];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "target" | "tuning" | "candidate" if value.is_empty() => Ok(()),
            "windows" => {
                self.windows = value.parse()?;
                Ok(())
            }
            "int8-gemm" => {
                self.int8_gemm = value.parse()?;
                Ok(())
            }
            "target" => {
                targets::known(value)?;
                self.target = Some(value.to_string());
                Ok(())
            }
            "templates" => {
                self.templates = super::pass::parse_bool(key, value)?;
                Ok(())
            }
            "large-tf32-tiles" => {
                self.large_tf32_tiles = super::pass::parse_bool(key, value)?;
                Ok(())
            }
            "half-wgmma-tiles" => {
                self.half_wgmma_tiles = super::pass::parse_bool(key, value)?;
                Ok(())
            }
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
    /// record's (`tuned`: the op's `tcc.tuning`, from `tcc-apply-tuning`;
    /// else this pass's `tuning=` record), else the target's table.
    /// With `computed_a` (a convolution whose A a folded producer
    /// computes), the target's table for that case.
    fn gemm_config(
        &self,
        target: Target,
        kind: &str,
        shape: &GemmShape,
        computed_a: bool,
        tuned: Option<GemmConfig>,
    ) -> Option<GemmConfig> {
        let GemmShape { batch, m, n, k } = *shape;
        if let Some(index) = self.candidate {
            let candidates = target.gemm_candidates_for(self.vector_width, batch, m, n, k);
            return candidates.get(index).or(candidates.first()).copied();
        }
        let tuned = tuned.or_else(|| {
            self.tuning
                .as_ref()
                .and_then(|record| record.lookup(target, kind, [batch, m, n, k]))
        });
        tuned.or_else(|| match computed_a {
            true => target.gemm_config_computed_a_for(self.vector_width, batch, m, n, k),
            false => target.gemm_config_for(self.vector_width, batch, m, n, k),
        })
    }

    /// The configuration of a float product whose rows follow a symbolic
    /// dimension (sized for its bound): the few-row form where that bound
    /// is a few rows and nothing chose otherwise, else the table's.
    fn dynamic_rows_gemm_config(
        &self,
        target: Target,
        kind: &str,
        op: OperationRef,
        shape: &GemmShape,
    ) -> Option<GemmConfig> {
        let tuned = tuned(op);
        let recorded = self.tuning.as_ref().is_some_and(|record| {
            record
                .lookup(target, kind, [shape.batch, shape.m, shape.n, shape.k])
                .is_some()
        });
        let chosen = self.candidate.is_some() || tuned.is_some() || recorded;
        if !chosen && let Some(config) = few_rows_config(target, kind, shape) {
            return Some(config);
        }
        self.gemm_config(target, kind, shape, producer_arithmetic(op), tuned)
    }

    /// [`ConfigureOptions::gemm_config`] for a product of float operands:
    /// with `large-tf32-tiles`, a matmul the nvidia table gives 128x128
    /// takes the large wgmma body's 256x128 where its sizes divide; with
    /// `half-wgmma-tiles`, a matmul whose sizes fit a half wgmma body's
    /// tile takes it, and so does a convolution that reads its image as
    /// it is (`image_input`: its channels and whether it is a plain
    /// matrix, `ir::conv_input`), whose body gathers A from the image or
    /// copies the matrix; an image's stem kept in fp32 arithmetic
    /// (`fp32_stem`) takes [`narrow_stem_tiles`]; without either option,
    /// an exact-fp32 matmul on nvidia takes
    /// `config::nvidia::fp32_matmul_tile` (a tuning record or forced
    /// candidate still wins).
    fn float_gemm_config(
        &self,
        target: Target,
        kind: &str,
        shape: &GemmShape,
        (computed_a, image_input, fp32_stem): (bool, Option<(i64, bool)>, bool),
        tuned: Option<GemmConfig>,
    ) -> Option<GemmConfig> {
        let table = self.gemm_config(target, kind, shape, computed_a, tuned);
        let chosen = self.candidate.is_some()
            || tuned.is_some()
            || self.tuning.as_ref().is_some_and(|record| {
                record
                    .lookup(target, kind, [shape.batch, shape.m, shape.n, shape.k])
                    .is_some()
            });
        if self.large_tf32_tiles
            && !chosen
            && target == Target::Nvidia
            && kind == KernelKind::Matmul.name()
            && table.is_some_and(|c| (c.tile_m, c.tile_n, c.split_k) == (128, 128, 1))
            && tcc_kernels::gemm::large_tile_fits(shape)
        {
            return Some(tcc_kernels::gemm::LARGE_TILE);
        }
        if !chosen && let Some(config) = few_rows_config(target, kind, shape) {
            return Some(config);
        }
        if self.half_wgmma_tiles
            && !chosen
            && target == Target::Nvidia
            && kind == KernelKind::Matmul.name()
            && !computed_a
            && let Some(config) = tcc_kernels::gemm::half_tile_for(shape)
        {
            return Some(config);
        }
        if self.half_wgmma_tiles
            && !chosen
            && target == Target::Nvidia
            && kind == KernelKind::Convolution.name()
            && let Some((channels, matrix)) = image_input
            && let Some(config) = tcc_kernels::gemm::half_conv_tile_for(shape, channels, matrix)
        {
            return Some(config);
        }
        if fp32_stem && !chosen {
            return table.map(|table| narrow_stem_tiles(table, shape));
        }
        // Exact fp32 (no tensor-core tiles asked for): the nvidia matmul
        // tiles of `config::nvidia::fp32_matmul_tile`.
        if !chosen
            && target == Target::Nvidia
            && kind == KernelKind::Matmul.name()
            && self.precision == Precision::Fp32
            && !self.large_tf32_tiles
            && !self.half_wgmma_tiles
            && !computed_a
        {
            return table.map(|table| crate::config::nvidia::fp32_matmul_tile(table, shape));
        }
        table
    }

    /// The strategy of a kernel of `kind` rooted at `op` (on tensors, in
    /// the tile phase), over `work_items` points.
    fn strategy(
        &self,
        target: Target,
        op: OperationRef,
        kind: &str,
        windows: window::WindowChoice,
    ) -> KernelStrategy {
        let kernel_kind = kind_from_name(kind);
        if let Some(strategy) = attention_strategy(target, op, self.precision) {
            return strategy;
        }
        let extent = self.extent;
        let loops = target.loop_config(kernel_kind, work_items(op, extent));
        // A product whose rows follow a symbolic dimension (issue 33) runs
        // a tiled body, the forms whose M bounds are run-time values
        // (`GemmSpec::m_extent`): the table's tiles and K slices for the
        // rows' bound, in the module's precision (under fp16/bf16 on
        // nvidia, mma.sync tensor cores where the tiles fit them; never
        // wgmma, whose tensor maps need a static M). Split-K stays: a
        // decode step's few rows (M = the batch) stream the weights with
        // enough work-groups only when K is split. `--specialize` gives
        // the buckets their own.
        // A float GEMM's arithmetic (an image's stem keeps fp32 under
        // fp16/bf16 on nvidia).
        let precision = gemm_precision(self.precision, target, op);
        if self.templates
            && dynamic_rows(op)
            && template_extents(op)
            && let Some(shape) = gemm_shape_at(op, extent)
            && float_operands(op)
            && let Some(config) = self.dynamic_rows_gemm_config(target, kind, op, &shape)
        {
            return KernelStrategy::Gemm {
                config,
                shape,
                precision,
            };
        }
        if self.templates
            && template_extents(op)
            && let Some(shape) = gemm_shape_at(op, extent)
            && float_operands(op)
            && let Some(config) = self.float_gemm_config(
                target,
                kind,
                &shape,
                (
                    producer_arithmetic(op),
                    crate::ir::conv_input::plain_input(op)
                        .map(|image| (image.image_shape[3], image.is_matrix())),
                    precision != self.precision,
                ),
                tuned(op),
            )
        {
            return KernelStrategy::Gemm {
                config,
                shape,
                precision,
            };
        }
        if self.templates
            && let Some(shape) = gemm_shape_at(op, extent)
            && int8::int8_operands(op)
            && let Some(config) = int8::int8_config(
                target,
                self.int8_gemm,
                self.gemm_config(target, kind, &shape, false, tuned(op)),
                &shape,
            )
        {
            return KernelStrategy::Gemm {
                config,
                shape,
                precision: Precision::Fp32,
            };
        }
        if self.templates
            && let Some(reduction) = row_reduction(op, self.int8_gemm == int8::Int8Gemm::Off)
            && target.row_reduction_template(reduction.contiguous)
        {
            return KernelStrategy::RowReduce {
                workgroup_size: target.row_workgroup(reduction.length, reduction.rows),
            };
        }
        if self.templates
            && let Some(strategy) = window::strategy(target, op, windows, self.vector_width)
        {
            return strategy;
        }
        if let Some(strategy) = row_template(target, kernel_kind, op, loops.workgroup_size, extent)
        {
            return strategy;
        }
        KernelStrategy::Loops {
            workgroup_size: loops.workgroup_size,
            max_workgroups: loops.max_workgroups,
        }
    }
}

/// Whether a contraction's symbolic extents (issue 33) are ones the GEMM
/// template's launch follows: its rows (M) or its batch of products, not
/// both, never its columns (N) nor its reduction (K): attention's
/// products over a symbolic sequence (`QK^T`'s N, `P.V`'s K) run as loop
/// nests. Static contractions qualify.
fn template_extents(op: OperationRef) -> bool {
    let shape = |index: usize| {
        op.operand(index)
            .ok()
            .and_then(|v| crate::ir::types::ranked_shape(v.r#type()))
    };
    let count = op.operand_count();
    let (Some(output), Some(lhs)) = (count.checked_sub(1).and_then(shape), shape(0)) else {
        return true;
    };
    if output.iter().chain(&lhs).all(Option::is_some) {
        return true;
    }
    let columns = output.last().is_some_and(Option::is_some);
    // K is the last axis of a named product's A; another contraction (a
    // convolution) qualifies with a leading symbolic extent only (its
    // batch), its reduction then static.
    let named = matches!(
        op_name(&op).as_str(),
        "linalg.matmul" | "linalg.batch_matmul"
    );
    let reduction = if named {
        lhs.last().is_some_and(Option::is_some)
    } else {
        op.operand(0)
            .is_ok_and(|v| crate::ir::dynamic::leading_dynamic(v.r#type()).is_ok())
    };
    let batched = op_name(&op) == "linalg.batch_matmul";
    let batch = !batched || output.first().is_some_and(Option::is_some);
    columns && reduction && (batch || !dynamic_rows(op))
}

/// Whether a contraction's output rows (M: all but its last dimension,
/// past a batched matmul's batch) have a dynamic extent.
fn dynamic_rows(op: OperationRef) -> bool {
    let Some(output) = op
        .operand_count()
        .checked_sub(1)
        .and_then(|i| op.operand(i).ok())
    else {
        return false;
    };
    let Some(shape) = crate::ir::types::ranked_shape(output.r#type()) else {
        return false;
    };
    let first = usize::from(op_name(&op) == "linalg.batch_matmul");
    shape
        .get(first..shape.len().saturating_sub(1))
        .is_some_and(|rows| rows.iter().any(Option::is_none))
}

/// The input channels below which a convolution is an image's stem (RGB):
/// under fp16/bf16 on nvidia it keeps the fp32 body ([`gemm_precision`]).
const STEM_CHANNELS: i64 = 8;

/// A half-precision model's stem on nvidia (fp32 arithmetic, [`gemm_precision`])
/// whose table tile is 128x128 over at most 32 output channels: 32x32
/// tiles of 2x2 outputs per work-item, where the 128-wide tile computes
/// three quarters of its columns past N. At batch 32 on the H200 (fp16
/// models, in turns): MobileNetV2's 3x3 stem 94.6 -> 88.6 us,
/// EfficientNet-B0's (with its SiLU) 116.6 -> 95.0. ResNet-50's 64
/// channels keep the 128x128 tiles: 64x64 ones took 326 us against 314.
fn narrow_stem_tiles(table: GemmConfig, shape: &GemmShape) -> GemmConfig {
    if (table.tile_m, table.tile_n, table.split_k) != (128, 128, 1) || shape.n > 32 {
        return table;
    }
    crate::config::TILES_32X32
}

/// The arithmetic of a float GEMM kernel: the module's precision, but for
/// a half-precision `tcc.conv` (a convolution with its input's padding
/// folded into its loads) over fewer than 8 input channels on nvidia (an
/// image's stem: RGB), which keeps the fp32 body: its K is a few dozen
/// taps, and the tensor-core body, which stages such an A element by
/// element through registers, took 1.4-1.6x as long (batch 32 on the
/// H200: ResNet-50's 7x7 stem 517 against 325 us, MobileNetV2's and
/// EfficientNet-B0's 3x3 145 / 103 and 185 / 132; ConvNeXt-T's unpadded
/// 4x4 patches, a plain convolution, ran faster on tensor cores, 71
/// against 98). The phase pipeline unfolds such convolutions into
/// columns first (`TargetConfig::conv_unfold_channels`); this keeps the
/// ones it leaves (a filter that is not a constant) and pipelines run
/// without that option.
fn gemm_precision(precision: Precision, target: Target, op: OperationRef) -> Precision {
    let stem = op_name(&op) == crate::ir::conv::OP
        && crate::ir::filter_panels::hwcf_filter_shape(op, 0)
            .is_some_and(|filter| filter[2] < STEM_CHANNELS);
    match precision {
        Precision::Fp16 | Precision::Bf16 if stem && target == Target::Nvidia => Precision::Fp32,
        _ => precision,
    }
}

/// The softmax and layer norm templates: one work-group per row of the
/// output (the last operand), sized for the row.
fn row_template(
    target: Target,
    kind: KernelKind,
    op: OperationRef,
    default_size: i64,
    extent: Option<i64>,
) -> Option<KernelStrategy> {
    let shape = op
        .operand(op.operand_count().checked_sub(1)?)
        .ok()
        .and_then(|v| shape_at(v.r#type(), extent));
    let split = shape.as_deref().and_then(|shape| shape.split_last());
    let workgroup_size = split.map_or(default_size, |(&columns, rows)| {
        target.row_workgroup(columns, rows.iter().product())
    });
    match kind {
        KernelKind::Softmax => Some(KernelStrategy::Softmax { workgroup_size }),
        // Several rows a work-group for a static shape only: a symbolic
        // row count launches one group a row.
        KernelKind::LayerNorm => Some(match split {
            Some((&columns, rows)) if extent.is_none() => {
                let (workgroup_size, rows) = target.layer_norm_rows(columns, rows.iter().product());
                KernelStrategy::LayerNorm {
                    workgroup_size,
                    rows,
                }
            }
            _ => KernelStrategy::LayerNorm {
                workgroup_size,
                rows: 1,
            },
        }),
        _ => None,
    }
}

/// The flash-attention template for a `tcc.flash_attention` (the only way
/// it compiles): the target's blocking for its head dimension and query
/// rows, in the module's precision (whose fp16/bf16 PTX form multiplies on
/// tensor cores).
fn attention_strategy(
    target: Target,
    op: OperationRef,
    precision: Precision,
) -> Option<KernelStrategy> {
    if crate::ir::util::op_name(&op) != "tcc.flash_attention" {
        return None;
    }
    let query = op.operand(0).ok().and_then(|v| static_shape(v.r#type()))?;
    let (&head_dim, &q_len) = (query.last()?, query.get(2)?);
    let heads = query.first()? * query.get(1)?;
    let config = target.attention(
        head_dim,
        q_len,
        heads,
        precision.attention_tensor_cores().is_some(),
    );
    Some(KernelStrategy::Attention {
        block_q: config.block_q,
        block_k: config.block_k,
        key_lanes: config.key_lanes,
    })
}

/// Whether every shaped operand (tensor or buffer) of a contraction holds
/// f32 (the GEMM template's fp32 arithmetic; int8 products with int32
/// sums take its int8 form, see `int8`).
/// The few-row form for a matmul or convolution of float operands on
/// nvidia with at most a few rows (`config::nvidia::few_rows`).
fn few_rows_config(target: Target, kind: &str, shape: &GemmShape) -> Option<GemmConfig> {
    let kind = kind_from_name(kind);
    (target == Target::Nvidia && matches!(kind, KernelKind::Matmul | KernelKind::Convolution))
        .then(|| crate::config::nvidia::few_rows(shape.batch, shape.m, shape.n, shape.k))
        .flatten()
}

fn float_operands(op: OperationRef) -> bool {
    op.operands().all(|v| {
        let ty = v.r#type().to_raw();
        !unsafe { mlir_sys::mlirTypeIsAShaped(ty) }
            || unsafe { mlir_sys::mlirTypeIsAF32(mlir_sys::mlirShapedTypeGetElementType(ty)) }
    })
}

/// Whether `op` is a convolution whose A a folded producer computes with
/// float arithmetic (`tcc-fold-conv-inputs`: a `tcc.conv` whose
/// body holds more float operations than its own multiply-accumulate, the
/// pad's select aside: a BatchNorm + ReLU, an unrolled pool).
fn producer_arithmetic(op: OperationRef) -> bool {
    if crate::ir::conv::of(&op).is_none() {
        return false;
    }
    let float_ops = crate::ir::util::body_ops(op)
        .into_iter()
        .filter(|body_op| {
            let name = crate::ir::util::op_name(body_op);
            name.starts_with("arith.")
                && name != "arith.select"
                && name != "arith.constant"
                && body_op
                    .result(0)
                    .is_ok_and(|r| Value::from(r).r#type().is_f32())
        })
        .count();
    float_ops > 2
}

fn kind_from_name(name: &str) -> KernelKind {
    match name {
        "matmul" => KernelKind::Matmul,
        "convolution" => KernelKind::Convolution,
        "reduction" => KernelKind::Reduction,
        "softmax" => KernelKind::Softmax,
        "layer_norm" => KernelKind::LayerNorm,
        "attention" => KernelKind::Attention,
        _ => KernelKind::Elementwise,
    }
}

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
    /// Output elements: one row each.
    rows: i64,
}

/// The shortest strided row of several reduced dimensions that
/// [`row_reduction`] gives the row-reduction template.
const MIN_STRIDED_POOL_ROW: i64 = 2048;

/// The row reduction `op` is, if it may run one work-group per output
/// element: a single-output f32 (or int32 sum) `linalg.generic` whose
/// reduction dimensions are the innermost, together at least 128 long
/// (strided ones [`MIN_STRIDED_POOL_ROW`] where there are several),
/// initialised by a fill, with a body ending in `combiner(x, acc)` where
/// `acc` (the output) is used only there, and reading neither
/// `linalg.index` nor `tensor.extract`. With `int8_off` (`int8-gemm=off`)
/// int32 sums stay loop nests.
fn row_reduction(op: OperationRef, int8_off: bool) -> Option<RowReduction> {
    use melior::ir::{BlockLike, RegionLike};
    if op_name(&op) != "linalg.generic" || op.result_count() != 1 {
        return None;
    }
    use crate::ir::affine::IteratorType;
    let iterators = crate::ir::affine::iterator_types(op)?;
    let dims = iterators.len();
    // The reduced dimensions trail the parallel ones (a global pool's rows
    // and columns: one row of their product per output element).
    let first_reduced = iterators
        .iter()
        .position(|t| *t == IteratorType::Reduction)?;
    if iterators[first_reduced..]
        .iter()
        .any(|t| *t != IteratorType::Reduction)
    {
        return None;
    }
    let reduced = dims - first_reduced;
    // f32 results with a float combiner, or int32 sums (an int8
    // matrix-vector product of `tcc-quantize-int8`: ResNet-50's classifier
    // at batch 1), which are exact in any order.
    let result = StaticTensor::of(op.result(0).ok()?.r#type())?;
    let integer_sum = unsafe {
        mlir_sys::mlirTypeIsAInteger(result.element.to_raw())
            && mlir_sys::mlirIntegerTypeGetWidth(result.element.to_raw()) == 32
    };
    if !result.element.is_f32() && (!integer_sum || int8_off) {
        return None;
    }
    // The init must be a fill (the kernel starts from its value).
    let init = op.operand(op.operand_count() - 1).ok()?;
    if crate::ir::util::defining_op(init)
        .is_none_or(|d| crate::ir::util::op_name(&d) != "linalg.fill")
    {
        return None;
    }
    // The reduced length: the product of the reduced dimensions' extents,
    // read off the inputs that index them; the row is contiguous where
    // every input holds the reduced dimensions last, in order.
    let maps = melior::ir::attribute::ArrayAttribute::try_from(op.attribute("indexing_maps").ok()?)
        .ok()?;
    let mut extents: Vec<Option<i64>> = vec![None; reduced];
    let mut contiguous = true;
    for index in 0..op.operand_count() - 1 {
        let operand = StaticTensor::of(op.operand(index).ok()?.r#type())?;
        let map =
            unsafe { mlir_sys::mlirAffineMapAttrGetValue(maps.element(index).ok()?.to_raw()) };
        let results = unsafe { mlir_sys::mlirAffineMapGetNumResults(map) } as usize;
        for position in 0..results {
            let expr = unsafe { mlir_sys::mlirAffineMapGetResult(map, position as isize) };
            if !unsafe { mlir_sys::mlirAffineExprIsADim(expr) } {
                continue;
            }
            let dim = unsafe { mlir_sys::mlirAffineDimExprGetPosition(expr) } as usize;
            if dim >= first_reduced {
                extents[dim - first_reduced] = Some(operand.shape[position]);
                contiguous &= position + dims == results + dim;
            }
        }
    }
    let length = extents
        .into_iter()
        .try_fold(1i64, |length, extent| Some(length * extent?))
        .filter(|l| *l >= 128)?;
    // Several reduced dimensions over strided rows (a global pool over a
    // channels-last image: one row a channel) take the template only when
    // the rows are long: the loop nest's work-item per output reads its
    // row in order, coalesced across channels, and long rows are what it
    // waits on. EfficientNet-B0 at batch 32 (fp16, H200): its
    // squeeze-and-excitation pools over 112x112 and 56x56 pixels 658 ->
    // 40 and 114 -> 56-80 us as the template; over 28x28 and 14x14 (784
    // and 196 pixels, 7680-21504 channels of the batch) 8-20 -> 14-37 us.
    if reduced > 1 && !contiguous && length < MIN_STRIDED_POOL_ROW {
        return None;
    }
    // The body: yield combiner(x, acc) with acc used once. The template
    // computes the body per element of a strided row and has no iteration
    // indices, so a body that reads them (`linalg.index`: CumSum's and
    // TopK's position tests) or reads a tensor at computed coordinates
    // (`tensor.extract`) runs as a loop nest.
    let block = op.region(0).ok()?.first_block()?;
    let mut next = block.first_operation();
    while let Some(inner) = next {
        if matches!(
            crate::ir::util::op_name(&inner).as_str(),
            "linalg.index" | "tensor.extract"
        ) {
            return None;
        }
        next = inner.next_in_block();
    }
    let acc = block.argument(block.argument_count() - 1).ok()?;
    let terminator = block.terminator()?;
    let combined = crate::ir::util::defining_op(terminator.operand(0).ok()?)?;
    let uses_acc = combined
        .operands()
        .any(|v| v == melior::ir::Value::from(acc));
    let combiner = crate::ir::util::op_name(&combined);
    let combines = if integer_sum {
        combiner == "arith.addi"
    } else {
        ROW_COMBINERS.contains(&combiner.as_str())
    };
    (combines && uses_acc && crate::ir::util::use_count(acc.into()) == 1).then_some(RowReduction {
        length,
        contiguous,
        rows: result.shape.iter().product(),
    })
}

/// Parallel points of a kernel: the elements of its largest result, a
/// `?` taken as `extent`.
fn work_items(op: OperationRef, extent: Option<i64>) -> i64 {
    op.results()
        .filter_map(|r| shape_at(r.r#type(), extent).map(|shape| shape.iter().product()))
        .max()
        .unwrap_or(1)
}

/// Elements of the largest buffer a device op on buffers writes, a `?`
/// taken as `extent` (static buffers only without one).
pub(super) fn written_elements_at(op: OperationRef, extent: Option<i64>) -> i64 {
    let written: Vec<Value> = if op_name(&op) == "memref.copy" {
        op.operand(1).into_iter().collect()
    } else {
        super::form_dispatches::init_operands(op)
    };
    written
        .into_iter()
        .filter_map(|v| shape_at(v.r#type(), extent))
        .map(|shape| shape.iter().product())
        .max()
        .unwrap_or(1)
}

/// A device op on buffers without a strategy: made by bufferization (a
/// copy that runs as a kernel) or stripped of its attributes by it
/// (`linalg.softmax`), or an op of a fused kernel that outlining may run
/// alone; in a function body, where outlining looks for kernels.
fn unconfigured_device_op(op: OperationRef) -> bool {
    // Outlining groups the ops of function bodies and of their kernels.
    op.result_count() == 0
        && op.parent_operation().is_some_and(|parent| {
            let parent = op_name(&parent);
            parent == "func.func" || parent == crate::ir::dispatch::OP
        })
        && super::outline_kernels::is_kernel_op(op)
        && !super::outline_kernels::is_host_copy(op)
}

/// The strategy of a device op on buffers that no strategy reached: a
/// row template for a softmax or layer norm, else loops with one
/// work-item per point.
fn buffer_strategy(target: Target, op: OperationRef, extent: Option<i64>) -> KernelStrategy {
    let kind = super::form_dispatches::kind_of(op);
    let workgroup_size = target
        .loop_config(kind, written_elements_at(op, extent))
        .workgroup_size;
    row_template(target, kind, op, workgroup_size, extent).unwrap_or(KernelStrategy::Loops {
        workgroup_size,
        max_workgroups: None,
    })
}

impl TccPass for ConfigureKernels {
    const ARGUMENT: &'static str = "tcc-configure-kernels";
    const SUMMARY: &'static str =
        "Attach each kernel's typed strategy from the target's tuning tables";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    /// The strategies and `#tcc.target` are tcc attributes.
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc"];
    type Options = ConfigureOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: Root<'c>,
        options: &ConfigureOptions,
    ) -> PassResult<'c> {
        let desc = module_target(context, module, options.target.as_deref())?;
        let target = targets::family(&desc).map_err(|e| PassError::at(module.location(), e))?;
        let mut options = options.clone();
        options.vector_width = u32::try_from(desc.vector_width).unwrap_or(4);
        options.precision = desc.precision;
        // A symbolic dimension (issue 33) is taken at the largest declared
        // maximum: tiles, work-groups and loop sizes then suit every extent
        // in range, and the kernels keep their bounds guards where the
        // extent is dynamic.
        options.extent =
            crate::ir::dynamic::strategy_extent(&crate::ir::dynamic::module_dims(module));
        options.large_tf32_tiles |= desc.api == targets::LaunchApi::Cuda
            && desc.precision == Precision::Tf32
            && target == Target::Nvidia;
        options.half_wgmma_tiles |= desc.api == targets::LaunchApi::Cuda
            && matches!(desc.precision, Precision::Fp16 | Precision::Bf16)
            && target == Target::Nvidia;
        let windows = options.windows;
        for op in collect_ops(module) {
            if strategy::has(&op) {
                continue;
            }
            let strategy = match op.attribute(KIND).ok().and_then(string_value) {
                Some(kind) if op.result_count() > 0 => options.strategy(target, op, &kind, windows),
                _ if unconfigured_device_op(op) => buffer_strategy(target, op, options.extent),
                _ => continue,
            };
            let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            strategy::set(context, &mut op, &strategy)
                .map_err(|e| PassError::at(op.location(), e))?;
        }
        Ok(())
    }
}

/// The module's `#tcc.target`; a module without one gets `option`'s
/// known target (else `opencl-generic`) written on it. A module's own
/// target must be of the family `option` names.
fn module_target<'c>(
    context: &'c Context,
    module: Root<'c>,
    option: Option<&str>,
) -> Result<TargetDesc, PassError<'c>> {
    let fail = |message: String| PassError::at(module.location(), message);
    if let Ok(attribute) = module.attribute(TARGET) {
        let desc = TargetDesc::from_attribute(attribute).ok_or_else(|| {
            fail(format!(
                "the module's tcc.target ({attribute}) is not a #tcc.target attribute: state the target as tcc-attach-target writes it"
            ))
        })?;
        if let Some(name) = option {
            let wanted = targets::known(name).map_err(fail)?;
            if wanted.family != desc.family {
                return Err(fail(format!(
                    "target={name} contradicts the module's target {} (family {})",
                    desc.name, desc.family
                )));
            }
        }
        return Ok(desc);
    }
    let desc = targets::known(option.unwrap_or("opencl-generic")).map_err(fail)?;
    let attribute = desc
        .to_attribute(context)
        .ok_or_else(|| fail(format!("invalid target {desc:?}")))?;
    crate::ir::util::set_discardable_attribute(module, TARGET, attribute);
    Ok(desc)
}
