//! The Hopper FP16/BF16 GEMM body (`--precision=fp16|bf16`, sm_90a, for
//! kernels the runtime launches through the CUDA driver: `tcc compile
//! --backend=cuda`): warpgroup `wgmma` with both operands read from
//! dynamic local memory through matrix descriptors, copied there by the
//! tensor memory accelerator, fp32 accumulation.
//!
//! Why: the `mma.sync` body (`tensor_cores`) that half products took
//! before runs 128x128 tiles out of 48 KiB of local memory, loading every
//! fragment with its own local loads; on the H200 that left BERT's fp16
//! GEMMs at a fraction of cuBLAS (docs/benchmarks.md, issue 31). `wgmma`
//! reads both operands from shared memory itself, and the TMA copies
//! them without work-items in between.
//!
//! Unlike TF32 (`wgmma`, `wgmma_large`), 16-bit `wgmma` reads B in either
//! major order, so the product runs as it is, `C = A B`: wgmma's M is C's
//! rows (64 per warpgroup, two warpgroups: 128), its N the tile's 128
//! columns. A's k tile (128 rows x 64 halves, 128 bytes a row) is K-major,
//! B's (64 k rows x 128 columns, as two boxes of 64 columns) is MN-major
//! (`imm-trans-b` 1); the TMA writes both in the 128-byte swizzle. The
//! descriptors (PTX ISA, "Matrix Descriptor"; the canonical layouts of
//! CUTLASS's `make_gmma_desc`): K-major A with the stride byte offset 1024
//! between 8-row atoms, a k step of 16 advancing the start by 32 bytes
//! inside the swizzled row; MN-major B with the leading byte offset between
//! its 64-column boxes (8 KiB) and the stride byte offset between 8-k-row
//! atoms (1024), a k step of 16 advancing the start by 2 atoms.
//!
//! An implicit-GEMM convolution over an image of a multiple of 64
//! channels (`GemmSpec::a_image`) takes the body too: A's k tile of 64 is
//! then 64 channels of one filter tap, 128 contiguous bytes of one input
//! pixel per output pixel, which the work-items copy themselves by
//! `cp.async` (16 bytes each, zero-filled outside the image) into the same
//! 128-byte swizzle, while the TMA copies B (the filter, a K x N matrix).
//! Each work-item keeps its four rows' window origins; a stage's copies
//! form one `cp.async` group, and before the stage's `wgmma`s each
//! work-item waits for its group and fences it for the async proxy that
//! `wgmma` reads through, and the barrier makes everyone's visible. A
//! pointwise convolution with stride 1 and no padding is a plain matrix:
//! the TMA copies it as A.
//!
//! Each stage holds both k tiles with one mbarrier counting their bytes.
//! Once a step's `wgmma`s are issued, each warpgroup waits for the
//! previous step's (one group stays in flight, `wgmma.wait_group 1`), a
//! barrier frees that stage and work-item 0 refills it, so `stages - 1`
//! k tiles are copied ahead of the one computed: as many stages as fit
//! where a work-group has its SM to itself, three in a 128-wide tile
//! whose smaller footprint lets two work-groups share an SM instead
//! ([`stages_for`]). The implicit-GEMM gather refills the stage read two
//! k tiles back before the step's products instead.

use std::fmt::Write as _;

use super::tma_stage::{TmaStage, copy_stage_from};
use super::wgmma::{
    TENSOR_MAP_BYTES, build_typed_tensor_map, descriptor, landed_wait, map_slot, tensor_map_fences,
};
use super::wgmma_large::dynamic_local_marker;
use super::{ConvImage, GemmConfig, GemmShape, GemmSpec, TensorCores};
use crate::Storage;

/// Rows of C per work-group: two warpgroups of 64 (wgmma's M).
const ROWS: u32 = 128;
/// The widths of C a work-group's tile may have (wgmma's N), widest first:
/// `tcc-configure-kernels` picks one per product ([`half_tile_for`]).
const WIDTHS: [u32; 3] = [256, 192, 128];
/// The widths a convolution's tile may have ([`half_conv_tile_for`]): 64
/// too, the output channels of the first stages of CNNs (ResNet's 64).
const CONV_WIDTHS: [u32; 4] = [256, 192, 128, 64];
/// The k of one stage (one 128-byte swizzled row of halves).
const STAGE_K: u32 = 64;
/// The most stages of a tile that has an SM to itself: as many of its
/// stages as fit [`LOCAL_MEMORY_PER_WORK_GROUP`] with the alignment, at
/// most this many (`stages - 1` k tiles in flight ahead of the one
/// computed): 4 at 256 columns (48 KiB a stage), 5 at 192, 6 at 128.
const MAX_STAGES: u32 = 6;
/// The stages of a 64-wide tile: two work-groups an SM (24 KiB a stage).
const SHARED_STAGES: u32 = 4;
/// The stages of a 128-column tile launched as more work-groups than SMs:
/// 3 x 32 KiB (plus the alignment) lets two work-groups share an SM, one's
/// pipeline fill and epilogue overlapping the other's products
/// ([`stages_for`]).
const NARROW_STAGES: u32 = 3;
/// The dynamic local memory one work-group may take on the H100 and H200
/// (227 KiB), less 1 KiB for the static local memory (the mbarriers).
const LOCAL_MEMORY_PER_WORK_GROUP: u32 = 226 * 1024;
/// k per `wgmma` (16-bit inputs).
const WGMMA_K: u32 = 16;
/// Work-items per work-group: two warpgroups.
const THREADS: u32 = 256;
/// Bytes of one half.
const HALF: u32 = 2;
/// Bytes of A's k tile and of one of B's boxes (64 columns of the stage's
/// k rows).
const A_TILE_BYTES: u32 = ROWS * STAGE_K * HALF;
const B_BOX_COLUMNS: u32 = 64;
const B_BOX_BYTES: u32 = B_BOX_COLUMNS * STAGE_K * HALF;
/// Streaming multiprocessors of the H100 and H200 the tile choice fills.
const SMS: i64 = 132;
/// The widths of a tile whose work-groups split K. The tile choice never
/// takes one ([`half_tile_for`] says why); a tuning record may.
const SPLIT_WIDTHS: [u32; 2] = [128, 64];
/// The most slices of K a split tile takes.
const MAX_SPLIT: u32 = 16;

/// The stages of a product of `config` over `shape`: [`NARROW_STAGES`]
/// for a 128-wide tile launched as more work-groups than SMs
/// ([`shares_sms`]), [`SHARED_STAGES`] for a 64-wide one, else as many
/// as fit ([`alone_stages`]). On the H200 (fp16, kernel alone, 3 stages
/// against 4, when two k tiles were in flight with four): 4096 x 3072 x
/// 768 44.2 against 48.4 us, 6304 x 3072 x 768 70.8 / 78.2, 4096 x 768
/// x 768 15.7 / 16.9, a 3x3 convolution of 128 channels at 32 x 28 x 28
/// 24.2 / 29.9; but with fewer work-groups than SMs, where none shares
/// its SM, the fourth stage's depth counts (3x3, 256 channels at 32 x 14
/// x 14, 98 work-groups: 28.2 / 24.6).
pub(super) fn stages_for(config: &GemmConfig, shape: &GemmShape) -> u32 {
    if shares_sms(config, shape) {
        NARROW_STAGES
    } else {
        width_stages(config.tile_n)
    }
}

/// The stages of a tile `columns` wide unless it shares its SM as a
/// 128-wide tile: [`SHARED_STAGES`] at 64 columns, else as many as fit
/// ([`alone_stages`]).
const fn width_stages(columns: u32) -> u32 {
    if columns == 64 {
        SHARED_STAGES
    } else {
        alone_stages(columns)
    }
}

/// The stages of a tile `columns` wide with an SM to itself.
const fn alone_stages(columns: u32) -> u32 {
    let fit = (LOCAL_MEMORY_PER_WORK_GROUP - 1024) / stage_bytes(columns);
    if fit < MAX_STAGES { fit } else { MAX_STAGES }
}

/// Whether a product of `config` over `shape` runs two work-groups an SM:
/// a 128-wide tile (three stages fit twice in an SM's local memory)
/// launched as more work-groups than SMs.
fn shares_sms(config: &GemmConfig, shape: &GemmShape) -> bool {
    config.tile_n == 128 && work_groups(config, shape) > SMS
}

/// The work-groups of a product of `config` over `shape`.
fn work_groups(config: &GemmConfig, shape: &GemmShape) -> i64 {
    shape.batch.max(1) * row_tiles(shape) * column_tiles(shape, config) * config.split_k as i64
}

/// Bytes of one stage of a tile `columns` wide.
const fn stage_bytes(columns: u32) -> u32 {
    A_TILE_BYTES + columns * STAGE_K * HALF
}

/// The most dynamic local memory the body takes for a tile `columns`
/// wide: its stages when it has an SM to itself, and 1024 bytes to align
/// them to the 1024-byte atoms of the 128-byte swizzle.
pub fn half_dynamic_local_bytes(columns: u32) -> u32 {
    width_stages(columns) * stage_bytes(columns) + 1024
}

/// The dynamic local memory a product of `config` over `shape` takes:
/// the stages its k tiles use (at most [`stages_for`]; a short K fills fewer,
/// so that more work-groups fit an SM), and at least the staged
/// epilogue's tile ([`WgmmaHalf::staged_epilogue`]) when K is not split.
fn dynamic_local_bytes_for(config: &GemmConfig, shape: &GemmShape) -> u32 {
    let k = if config.split_k > 1 {
        config.split_k_slice(shape.k)
    } else {
        shape.k
    };
    let k_tiles = ((k + STAGE_K as i64 - 1) / STAGE_K as i64)
        .clamp(1, stages_for(config, shape) as i64) as u32;
    let stages = k_tiles * stage_bytes(config.tile_n);
    let epilogue = if config.split_k > 1 {
        0
    } else {
        staged_epilogue_bytes(config.tile_n)
    };
    stages.max(epilogue) + 1024
}

/// Bytes of the staged epilogue's fp32 tile (rows padded by 8 floats).
fn staged_epilogue_bytes(columns: u32) -> u32 {
    ROWS * (columns + 8) * 4
}

/// The tile `128 x columns` of 256 work-items (8 x columns / 16 outputs
/// each in the fallbacks).
const fn tile(columns: u32) -> GemmConfig {
    GemmConfig {
        tile_m: ROWS,
        tile_n: columns,
        tile_k: 16,
        work_m: 8,
        work_n: columns / 16,
        split_k: 1,
        k_lanes: 1,
    }
}

/// Whether a product of `config` over `shape` may take this body whatever
/// its operands: a `128 x width` tile of 256 work-items, unsplit (of the
/// [`WIDTHS`]) or split in K (of the [`SPLIT_WIDTHS`], every slice the
/// same whole number of stages), N a multiple of the tile's width, and K
/// of the stage's k where split; unsplit, K any multiple of 8 (rows of
/// whole 16-byte octets, as the TMA wants its strides): the last k tile
/// hangs past K and the TMA fills A's and B's elements there with zeros,
/// which add nothing (any M likewise: [`row_tiles`]). Where the choice
/// allows it ([`tails_allowed`]), the last column tile may hang past N
/// too, its B columns zeros and its stores guarded.
/// With `tails`, an unsplit tile's last column tile may hang past N (N
/// any multiple of 8).
pub(super) fn fits_with(config: &GemmConfig, shape: &GemmShape, tails: bool) -> bool {
    let split = config.split_k;
    let widths: &[u32] = if split == 1 {
        &CONV_WIDTHS
    } else {
        &SPLIT_WIDTHS
    };
    widths.contains(&config.tile_n)
        && split >= 1
        && split <= MAX_SPLIT
        && *config == split_tile(config.tile_n, split)
        && config.workgroup_size() == THREADS
        && shape.m > 0
        && shape.n > 0
        && shape.k > 0
        && if split == 1 {
            shape.k % K_ALIGNMENT == 0
                && if tails {
                    shape.n % K_ALIGNMENT == 0
                } else {
                    shape.n % config.tile_n as i64 == 0
                }
        } else {
            shape.n % config.tile_n as i64 == 0 && shape.k % (STAGE_K * split) as i64 == 0
        }
}

/// The tiles along N: unsplit, the last may hang past N (the TMA fills
/// B's columns there with zeros, and the epilogue stores columns below N
/// only).
fn column_tiles(shape: &GemmShape, config: &GemmConfig) -> i64 {
    (shape.n + config.tile_n as i64 - 1) / config.tile_n as i64
}

/// Whether the tile choice lets `config`'s last column tile hang past N:
/// a convolution's where the tiles cover at most three times N
/// ([`conv_tail_allowed`]), a matmul's only on [`small_tile_for`]'s
/// 64-wide tiles of a small product (the table's tiles of a larger one,
/// which the emitter sees too, keep the `mma.sync` body there).
fn tails_allowed(config: &GemmConfig, shape: &GemmShape, convolution: bool) -> bool {
    if convolution {
        conv_tail_allowed(shape, config.tile_n)
    } else {
        config.tile_n == 64 && shape.batch.max(1) * shape.m * shape.n < SMS * (ROWS * ROWS) as i64
    }
}

/// A convolution's column tiles of `width` may hang past N by up to two
/// thirds of a tile: EfficientNet-B0's projections to 24 channels in 64
/// ran 33 -> 24 us at batch 32 on the H200, those to 16 channels 25 -> 43
/// (the `mma.sync` body's 64x16 tiles keep them).
fn conv_tail_allowed(shape: &GemmShape, width: u32) -> bool {
    let padded = (shape.n + width as i64 - 1) / width as i64 * width as i64;
    padded <= 3 * shape.n
}

/// What an unsplit product's K must be a multiple of: the TMA's global
/// strides are multiples of 16 bytes (8 halves).
const K_ALIGNMENT: i64 = 8;

/// The tiles along M: the last may hang past M (the TMA fills A's rows
/// past M with zeros, and the epilogue stores rows below M only).
fn row_tiles(shape: &GemmShape) -> i64 {
    (shape.m + ROWS as i64 - 1) / ROWS as i64
}

/// [`tile`] with K split in `split` slices.
pub(super) const fn split_tile(columns: u32, split: u32) -> GemmConfig {
    GemmConfig {
        split_k: split,
        ..tile(columns)
    }
}

/// The tile of this body a product of `shape` takes, if any. Products of
/// at least one 128x128 tile's work per SM: of the widths that divide N,
/// the one whose waves of work-groups take the least time, a work-group's
/// time taken as its width (the widest on a tie: it reads the least per
/// product). 4096^3 takes 128x256 (512 work-groups); M = 4096 with N =
/// 768 takes 128x192, one wave of 128, where 128x256 leaves 36 of 132 SMs
/// idle and 128x128 runs two waves. Smaller products ([`small_tile_for`]):
/// unsplit 128x64 tiles where they are many enough and K short, else the
/// table's split-K or smaller tiles.
pub fn half_tile_for(shape: &GemmShape) -> Option<GemmConfig> {
    let batch = shape.batch.max(1);
    if batch * shape.m * shape.n < SMS * (ROWS * ROWS) as i64 {
        return small_tile_for(shape);
    }
    // Whole column tiles: ConvNeXt-T's N = 96 down-projections (M =
    // 100352, K = 384) took 103 us on one 128-wide tile hanging past N,
    // 84 on the `mma.sync` body's tiles (H200, batch 32, fp16).
    choose_width(shape, &WIDTHS, false)
}

/// The least work-groups of [`small_tile_for`]'s unsplit 128x64 tiles.
const SMALL_MIN_WORK_GROUPS: i64 = 32;
/// The longest K of [`small_tile_for`]'s tiles (16 k stages).
const SMALL_MAX_K: i64 = 1024;

/// The tile of a product with less than one 128x128 tile's work per SM (a
/// transformer's at batch 1: 128 or 197 tokens): unsplit 128x64 tiles,
/// where they give at least [`SMALL_MIN_WORK_GROUPS`] work-groups and K
/// is at most [`SMALL_MAX_K`]. Each work-group then reads B's 64 columns
/// once, in one pass of at most 16 k tiles, with no partial tiles to
/// publish and sum. On the H200 (fp16, per-kernel CUDA-event means, which
/// count about 7 us for any launch there): 128 x 2304 x 768 7.9 us
/// against 12.3 for the table's `mma.sync` split-K tiles, 128 x 3072 x 768
/// 7.9 against 14.9; split tiles of this body lost to both (10.3-27.9: the
/// fixed costs of a work-group, its partial tile and the fix-up), and so
/// did the unsplit tile on K = 3072 (128 x 768 x 3072: 12 work-groups of
/// 48 k tiles, 15.8 against 12.7), which keeps the table's.
fn small_tile_for(shape: &GemmShape) -> Option<GemmConfig> {
    let config = tile(64);
    let groups = work_groups(&config, shape);
    (fits_with(&config, shape, true) && groups >= SMALL_MIN_WORK_GROUPS && shape.k <= SMALL_MAX_K)
        .then_some(config)
}

/// The tile of this body an implicit-GEMM convolution whose image the
/// body can gather (a multiple of [`STAGE_K`] channels), or a pointwise
/// one that reads its image as a plain matrix (`matrix`: 1x1, stride 1,
/// no padding; any multiple of 8 channels, copied by the TMA), takes: as
/// [`half_tile_for`] chooses, of widths that include 64, wherever the
/// tiles give at least half the SMs a work-group. The alternative is not
/// a split-K product as for matmuls but the `mma.sync` body's implicit
/// GEMM, which gathers A through registers: ResNet-50's 7x7-stage 3x3
/// convolution at batch 32 (M = 1568, N = 512, K = 4608) ran at 42 TF/s
/// there on the H200 (docs/benchmarks.md).
pub fn half_conv_tile_for(shape: &GemmShape, channels: i64, matrix: bool) -> Option<GemmConfig> {
    let gathered = channels % STAGE_K as i64 == 0;
    let plain = matrix && channels % K_ALIGNMENT == 0;
    if !(gathered || plain) || shape.batch > 1 {
        return None;
    }
    // One or two k tiles: at most 128 columns. A 256-wide tile's staged
    // epilogue (132 KiB of fp32) leaves one work-group an SM with nothing
    // to overlap its fill and epilogue; ResNet-50's pointwise
    // convolutions of K = 64 (100352 x 256 outputs) ran 110 us so.
    let widths = if shape.k <= 2 * STAGE_K as i64 {
        &CONV_WIDTHS[2..]
    } else {
        &CONV_WIDTHS[..]
    };
    let widths: Vec<u32> = widths
        .iter()
        .copied()
        .filter(|&width| conv_tail_allowed(shape, width))
        .collect();
    let config = choose_width(shape, &widths, true)?;
    let groups = row_tiles(shape) * column_tiles(shape, &config);
    (2 * groups >= SMS).then_some(config)
}

/// The K of the products whose 128-wide tiles the choice counts as two
/// work-groups an SM ([`choose_width`]): more than two k tiles (with one
/// or two, every width's work-groups share SMs, and the stages do not
/// count: EfficientNet-B0's pointwise expansions of K = 80 and 112 took
/// 18.3 and 25.2 us on such tiles against 15.9 and 20.3 on 64-wide ones,
/// H200, batch 32, fp16), up to 18 (4096 x 768 x 3072, 48 k tiles, took
/// 41.8 us on three-stage 128x128 tiles against 32.7 on four-stage
/// 128x192 ones).
const SHARED_K: std::ops::RangeInclusive<i64> = (2 * STAGE_K as i64 + 1)..=1152;

/// Of `widths` that fit `shape`, the one whose work-groups take the least
/// time, a work-group's time taken as its width (the widest on a tie):
/// in waves of one work-group an SM, or, for 128-wide tiles that share
/// SMs ([`shares_sms`]) over a K in [`SHARED_K`], spread over the SMs two
/// at a time (the work divided by the SMs, since a work-group that runs
/// alone in a last partial wave runs faster). Such tiles took, against
/// the waves' choice, on the H200 at batch 32 in fp16: BERT-base's Q/K/V
/// product (4096 x 2304 x 768) 38.0 against 44.1 us on 128x192 tiles, its
/// GELU product 63.0 / 74.6 on 128x256, ConvNeXt-T's GELU expansions 65.6
/// / 101.6 (K = 192) and 37.0 / 44.5 (K = 768), ResNet-50's 3x3
/// convolutions of 128 channels 26.0 / 31.4 on 64-wide tiles; one of
/// ResNet-50's products lost (1568 x 2048 x 512, 208 work-groups: 15.3
/// against 13.8 us on 128x256).
fn choose_width(shape: &GemmShape, widths: &[u32], tails: bool) -> Option<GemmConfig> {
    widths
        .iter()
        .map(|&width| tile(width))
        .filter(|config| fits_with(config, shape, tails))
        .map(|config| {
            let groups = work_groups(&config, shape);
            let width = config.tile_n as i64;
            let time = if shares_sms(&config, shape) && SHARED_K.contains(&shape.k) {
                (groups * width + SMS - 1) / SMS
            } else {
                (groups + SMS - 1) / SMS * width
            };
            (time, config)
        })
        .min_by_key(|(time, config)| (*time, std::cmp::Reverse(config.tile_n)))
        .map(|(_, config)| config)
}

/// The tensor-map scratch an FP16/BF16 GEMM of `config` over `shape`
/// needs if it may take this body: two maps (A's and B's) per
/// work-group (every slice of a split tile builds its own). `None` when
/// its tile, work-group or shape rule it out.
pub fn half_tensor_map_slot_bytes(config: &GemmConfig, shape: &GemmShape) -> Option<i64> {
    fits_with(config, shape, true).then(|| 2 * TENSOR_MAP_BYTES * work_groups(config, shape))
}

/// The 16-bit `wgmma` body of one GEMM.
pub(super) struct WgmmaHalf;

impl WgmmaHalf {
    /// Whether `spec` takes this body: FP16 or BF16 launched with dynamic
    /// local memory, on the 128x128 tile with sizes that divide it, A and
    /// B buffers stored in that half type read through plain row-major
    /// strides whose rows and batches keep the 16-byte alignment the TMA
    /// needs, no split of K, and the tensor-map slots passed.
    pub(super) fn applies(spec: &GemmSpec) -> bool {
        let Some(storage) = spec.tensor_cores.and_then(TensorCores::half_storage) else {
            return false;
        };
        let aligned = |operand: &super::GemmOperand| {
            operand.col_stride == 1
                && operand.row_stride % 8 == 0
                && operand.batch_stride % 8 == 0
                && operand.offset % 8 == 0
        };
        let a = match &spec.a_image {
            Some(image) => {
                image.buffer.storage == storage
                    && image.shape[3]
                        % if image.is_matrix() {
                            K_ALIGNMENT
                        } else {
                            STAGE_K as i64
                        }
                        == 0
                    && image.offset % 8 == 0
                    && image.pixel_strides.iter().all(|stride| stride % 8 == 0)
                    && image.gemm_extents() == (spec.shape.m, spec.shape.k)
                    && spec.shape.batch <= 1
                    && spec.config.split_k == 1
            }
            None => {
                spec.a.buffer.storage == storage
                    && spec.a_offset.is_none()
                    && spec.a_element.is_none()
                    && aligned(&spec.a)
            }
        };
        spec.dynamic_local
            && fits_with(
                &spec.config,
                &spec.shape,
                tails_allowed(&spec.config, &spec.shape, spec.a_image.is_some()),
            )
            && spec.tensor_map_slots.is_some()
            && spec.split_k_scratch.is_some() == (spec.config.split_k > 1)
            && a
            && spec.b.buffer.storage == storage
            && spec.b_offset.is_none()
            && aligned(&spec.b)
    }

    /// The accumulator's dimensions: `acc[wm][wn]` holds C row `wg_row + 8
    /// wm` and column `8 (wn / 2) + 2 tig + wn % 2` of the tile (the wgmma
    /// D fragment).
    pub(super) fn acc(config: &GemmConfig) -> (u32, u32) {
        (2, config.tile_n / 4)
    }

    /// C expressions for the tile row of `acc` row `wm` and the tile
    /// column of `acc` column `wn`.
    pub(super) fn offsets() -> (String, String) {
        (
            "(wg_row + 8 * wm)".to_string(),
            "(8 * (wn / 2) + 2 * tig + wn % 2)".to_string(),
        )
    }

    pub(super) fn description(spec: &GemmSpec) -> String {
        let precision = spec.tensor_cores.unwrap_or(TensorCores::Fp16);
        let config = &spec.config;
        let stages = stages_for(config, &spec.shape);
        let copies = if gathers(spec) {
            "A gathered from the convolution's image by cp.async and B copied by the TMA"
        } else {
            "A and B copied by the TMA"
        };
        format!(
            " on {} wgmma (2 warpgroups of m64n{}k{WGMMA_K}, {stages} stages of k {STAGE_K} of {copies} into {} bytes of CUDA dynamic local memory)",
            precision.name(),
            config.tile_n,
            dynamic_local_bytes_for(config, &spec.shape),
        )
    }

    /// The epilogue of an unsplit tile, through the stages' local memory
    /// (free once the last `wgmma` has read its stage): the accumulators
    /// are written there as the tile's rows (`float2` pairs of
    /// neighbouring columns, rows padded by 8 floats: at most two-way
    /// bank conflicts), and the work-items then walk the tile by rows,
    /// consecutive work-items on neighbouring columns, each running the
    /// kernel's per-element epilogue (`init`, `store`) on its element: a
    /// matmul's with the whole work-group on a row or two at a time, a
    /// convolution's with each warp on 16 rows of its own (a row's
    /// output pixel, divided out of the row index, then once per row). A
    /// warp's loads and stores of C and of what the epilogue reads (a
    /// residual) cover 32 neighbouring elements of one row, where the D
    /// fragment's order spread each warp instruction's 32 elements over 8
    /// rows in pairs. Measured on the H200 against the fragment's order,
    /// same outputs bit for bit, with the warps' walk for both: ResNet-50
    /// at batch 32 in fp16 2.72 -> 2.44 ms of kernels, BERT-base 3.33 ->
    /// 3.05 (its Q/K/V product 63 -> 38 us, the FFN's GELU product 84 ->
    /// 66), and with the work-group's walk BERT-base 2.98 (ResNet-50 4.06:
    /// a pixel divided out per element).
    pub(super) fn staged_epilogue(out: &mut String, spec: &GemmSpec) {
        let s = spec.shape;
        let columns = spec.config.tile_n;
        let pitch = columns + 8;
        let _ = writeln!(
            out,
            "  /* the epilogue through local memory: the tile's rows, then walked by rows, neighbouring work-items on neighbouring columns */
  barrier(CLK_LOCAL_MEM_FENCE);
  __local float* staged_tile = (__local float*)(ulong)stages;
  #pragma unroll
  for (int wm = 0; wm < 2; ++wm)
    #pragma unroll
    for (int wn = 0; wn < {acc_n}; wn += 2)
      *(__local float2*)(staged_tile + (wg_row + 8 * wm) * {pitch} + 8 * (wn / 2) + 2 * tig) = (float2)(acc[wm][wn], acc[wm][wn + 1]);
  barrier(CLK_LOCAL_MEM_FENCE);",
            acc_n = columns / 4,
        );
        // A tile wholly inside C walks without bounds checks, so that
        // the loads its epilogue makes (a bias, a residual) are not
        // fenced off pass by pass behind branches and can all be in
        // flight at once; a tile that hangs past M or N checks each
        // element. ViT-B/16's FFN down-projection at batch 32 (6304 x
        // 768 x 3072, a residual and a bias per element) took about 12
        // us a tile more than its products with the checks in every pass
        // (H200, fp16), one load latency per pass.
        let _ = writeln!(
            out,
            "  if (row0 + {ROWS} <= {m} && col0 + {columns} <= {n}) {{",
            m = s.m,
            n = s.n,
        );
        Self::staged_walk(out, spec, false);
        let _ = writeln!(out, "  }} else {{");
        Self::staged_walk(out, spec, true);
        let _ = writeln!(out, "  }}\n}}");
    }

    /// The staged epilogue's walk over the tile (see
    /// [`Self::staged_epilogue`]); `checked`: each element only inside C.
    fn staged_walk(out: &mut String, spec: &GemmSpec, checked: bool) {
        let s = spec.shape;
        let columns = spec.config.tile_n;
        let pitch = columns + 8;
        // The element's bounds check (on the first of a vector's columns).
        let open = |j: &str| {
            if checked {
                format!("if (i < {} && {j} < {}) {{", s.m, s.n)
            } else {
                "{".to_string()
            }
        };
        if spec.a_image.is_none()
            && let Some(vector_store) = &spec.vector_store
            && columns % 4 == 0
        {
            // Four neighbouring columns a work-item: one 16-byte read of
            // the staged tile and one store of the four outputs (8 bytes
            // in half) where the scalar walk issued four of each.
            let _ = writeln!(
                out,
                "  {unroll}
  for (int pass = 0; pass < {passes}; ++pass) {{
    const int e = (pass * {THREADS} + tid) * 4;
    const int r = e / {columns}, c = e % {columns};
    const float4 staged4 = *(__local const float4*)(staged_tile + r * {pitch} + c);
    const tcc_index i = row0 + r;
    const tcc_index j0 = col0 + c;
    {open}
      const float staged_lanes[4] = {{staged4.x, staged4.y, staged4.z, staged4.w}};
      float stored[4];
      #pragma unroll
      for (int l = 0; l < 4; ++l) {{
      const float staged = staged_lanes[l];
      const tcc_index j = j0 + l;",
                // Unchecked, every pass unrolled: all their loads are
                // issued before the first store waits on them.
                unroll = if checked {
                    "#pragma unroll 4"
                } else {
                    "#pragma unroll"
                },
                open = open("j0"),
                passes = ROWS * columns / THREADS / 4,
            );
            epilogue_body(out, spec, &vector_store.value);
            let _ = writeln!(
                out,
                "      }}
      const tcc_index j = j0;
      const float4 stored_vector = (float4)(stored[0], stored[1], stored[2], stored[3]);"
            );
            for line in vector_store.store.lines() {
                let _ = writeln!(out, "      {line}");
            }
            let _ = writeln!(out, "    }}\n  }}");
            return;
        }
        if spec.a_image.is_none() {
            // A matmul's rows are plain strides: the whole work-group on a
            // row (or two) at a time, eight passes in flight. BERT-base's
            // products with a residual to add took 1.25-1.45x as long
            // walked a warp's rows (2.98 against 3.05 ms a call).
            let _ = writeln!(
                out,
                "  {unroll}
  for (int pass = 0; pass < {passes}; ++pass) {{
    const int e = pass * {THREADS} + tid;
    const int r = e / {columns}, c = e % {columns};
    const float staged = staged_tile[r * {pitch} + c];
    const tcc_index i = row0 + r;
    const tcc_index j = col0 + c;
    {open}",
                unroll = if checked {
                    "#pragma unroll 8"
                } else {
                    "#pragma unroll 16"
                },
                open = open("j"),
                passes = ROWS * columns / THREADS,
            );
            epilogue_body(out, spec, &spec.store);
            let _ = writeln!(out, "    }}\n  }}");
            return;
        }
        // A convolution's: a warp's rows, two at a time, so that a row's
        // output pixel is divided out once (per element, ResNet-50 took
        // 4.06 ms a call); unrolled whole (sixteen rows), its residual
        // epilogues ran 1.1-1.4x slower.
        let _ = writeln!(
            out,
            "  #pragma unroll 2
  for (int rr = 0; rr < {rows_per_warp}; ++rr) {{
    const int r = warp * {rows_per_warp} + rr;
    const tcc_index i = row0 + r;
    #pragma unroll
    for (int q = 0; q < {chunks}; ++q) {{
    const int c = lane + 32 * q;
    const float staged = staged_tile[r * {pitch} + c];
    const tcc_index j = col0 + c;
    {open}",
            rows_per_warp = ROWS / (THREADS / 32),
            chunks = columns / 32,
            open = open("j"),
        );
        epilogue_body(out, spec, &spec.store);
        let _ = writeln!(out, "    }}\n    }}\n  }}");
    }

    /// Declares the stages' mbarriers (the stages are dynamic local
    /// memory) and states the dynamic local memory needed.
    pub(super) fn local_tiles(out: &mut String, spec: &GemmSpec) {
        let _ = writeln!(
            out,
            "  {}\n  __local ulong tile_full[{}] __attribute__((aligned(8)));",
            dynamic_local_marker(dynamic_local_bytes_for(&spec.config, &spec.shape)),
            stages_for(&spec.config, &spec.shape),
        );
    }

    /// The work-item's fragment coordinates, the tensor maps and the k
    /// loop.
    pub(super) fn main_loop(out: &mut String, spec: &GemmSpec) {
        let s = spec.shape;
        let columns = spec.config.tile_n;
        // A split tile's work-group runs its slice's k tiles, from k_begin.
        let split = spec.config.split_k > 1;
        // Unsplit, the last k tile may hang past K (zeros from the TMA).
        let k_tiles = if split {
            spec.config.split_k_slice(s.k) / STAGE_K as i64
        } else {
            (s.k + STAGE_K as i64 - 1) / STAGE_K as i64
        };
        let k_origin = split.then_some("k_origin");
        let precision = spec.tensor_cores.expect("WgmmaHalf::applies checked it");
        let storage = precision.half_storage().unwrap_or(Storage::F16);
        let slots = spec
            .tensor_map_slots
            .as_ref()
            .expect("WgmmaHalf::applies checked the slots");
        let _ = writeln!(
            out,
            "  /* wgmma, {name}: C = A B; A's (K-major) and B's (MN-major) k tiles by the TMA into 128-byte swizzled rows of dynamic local memory */
  const int warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  /* this work-item's first C row: warpgroup warp / 4, its warp's 16 rows */
  const int wg_row = 64 * (warp / 4) + 16 * (warp % 4) + group;
  uint stages;
  __asm__(\"mov.u32 %0, {symbol};\" : \"=r\"(stages));
  stages = (stages + 1023u) & ~1023u;
  /* this work-group's tensor maps of A and B (tcc-attach-tensor-map-slots) */
  __global uint* a_map = {a_slot};
  __global uint* b_map = a_map + {map_words};{origin}
  if (tid == 0) {{",
            name = precision.name(),
            symbol = super::DYNAMIC_LOCAL_SYMBOL,
            a_slot = map_slot(slots, 2 * TENSOR_MAP_BYTES),
            map_words = TENSOR_MAP_BYTES / 4,
            origin = if split {
                "\n  /* this slice's first k */\n  const int k_origin = (int)k_begin;"
            } else {
                ""
            },
        );
        let element = (storage.c_type(), 1);
        let gather = gathers(spec);
        // A's base and row stride: a pointwise convolution's image is A as
        // it is (N H W x C); a gathered image has no map (the work-items
        // copy A themselves).
        let a_matrix = match &spec.a_image {
            Some(_) if gather => None,
            Some(image) => Some((
                format!("{} + {}", image.buffer, image.offset),
                image.shape[3],
            )),
            None => Some((
                format!("{} + {}", spec.a.buffer, spec.a.address("b", "0", "0")),
                spec.a.row_stride,
            )),
        };
        if let Some((base, row_stride)) = a_matrix {
            build_typed_tensor_map(
                out,
                "a",
                &base,
                element,
                [s.k, s.m],
                row_stride * HALF as i64,
                [STAGE_K, ROWS],
            );
        }
        build_typed_tensor_map(
            out,
            "b",
            &format!("{} + {}", spec.b.buffer, spec.b.address("b", "0", "0")),
            element,
            [s.n, s.k],
            spec.b.row_stride * HALF as i64,
            [B_BOX_COLUMNS, STAGE_K],
        );
        tensor_map_fences(
            out,
            if gather {
                &["b_map"]
            } else {
                &["a_map", "b_map"]
            },
        );
        let stages = stages_for(&spec.config, &s);
        let _ = writeln!(
            out,
            "    #pragma unroll
    for (int st = 0; st < {stages}; ++st)
      __asm__ volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"((uint)(ulong)&tile_full[st]) : \"memory\");
    __asm__ volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");
  }}
  barrier(CLK_LOCAL_MEM_FENCE);
  if (tid == 0) {{"
        );
        for unit in 0..(stages as i64).min(k_tiles) {
            copy_stage_from(
                out,
                &unit.to_string(),
                k_origin,
                &tma_stage(columns, stages, !gather),
            );
        }
        let _ = writeln!(out, "  }}");
        let image = spec.a_image.as_ref().filter(|_| gather);
        if let Some(image) = image {
            gather_origins(out, image, s.m);
            // One group per stage, empty past K, so that the wait before
            // k tile kt counts the same groups after it at every K.
            for unit in 0..stages as i64 {
                if unit < k_tiles {
                    gather_tile(out, image, &unit.to_string(), (columns, stages));
                }
                let _ = writeln!(out, "  {COMMIT}");
            }
        }
        let _ = writeln!(
            out,
            "  const uint a_rows = (uint)(warp / 4) * {};\n  for (int kt = 0; kt < {k_tiles}; ++kt) {{",
            64 * STAGE_K * HALF
        );
        step(
            out,
            precision,
            (k_tiles, k_origin),
            (columns, stages),
            image,
        );
        let _ = writeln!(
            out,
            "  }}\n  __asm__ volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");"
        );
    }
}

/// A matrix descriptor of an MN-major operand in the 128-byte swizzle:
/// the start address >> 4 in bits 0-13, the leading byte offset (from one
/// 64-element run along MN to the next: one B box) >> 4 in bits 16-29, the
/// stride byte offset (from one 8-row atom along K to the next) >> 4 in
/// bits 32-45, swizzle mode 1 (128 bytes) in bits 62-63.
fn mn_major_descriptor(address: &str) -> String {
    let (leading, stride) = ((B_BOX_BYTES as u64) >> 4, 1024u64 >> 4);
    format!(
        "(ulong)((({address}) & 0x3FFFF) >> 4) | {}ul",
        (leading << 16) | (stride << 32) | (1u64 << 62)
    )
}

/// One k tile `kt`: wait for its stage, then four `m64nNk16` per
/// warpgroup (A: its 64 rows of the stage's A tile, advanced 32 bytes per
/// k step inside the swizzled rows; B: the stage's B boxes, advanced 16 k
/// rows, two atoms, per k step), left in flight, and a refill.
///
/// Where the TMA copies both operands, the refill comes after the
/// products are issued: once every warpgroup has waited for tile `kt -
/// 1`'s `wgmma`s (one group left in flight, tile `kt`'s), the barrier
/// frees that stage and work-item 0 refills it with tile `kt - 1 +
/// stages`, so `stages - 1` k tiles are copied ahead of the one the
/// tensor cores run, while the barrier waits behind the products already
/// issued. Where the work-items gather A themselves (`image`), the
/// stage read two tiles back is refilled before the products (its
/// `cp.async` groups are counted per step).
fn step(
    out: &mut String,
    precision: TensorCores,
    (k_tiles, k_origin): (i64, Option<&str>),
    (columns, stages): (u32, u32),
    image: Option<&ConvImage>,
) {
    let _ = writeln!(out, "    const uint slot = (uint)kt % {stages}u;");
    landed_wait(
        out,
        "tile_full[slot]",
        &format!("((uint)kt / {stages}u) & 1u"),
    );
    let Some(image) = image else {
        products(out, precision, columns);
        let _ = writeln!(
            out,
            "    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0 && kt >= 1 && kt - 1 + {stages} < {k_tiles}) {{"
        );
        copy_stage_from(
            out,
            &format!("kt - 1 + {stages}"),
            k_origin,
            &tma_stage(columns, stages, true),
        );
        let _ = writeln!(out, "    }}");
        return;
    };
    let ahead = stages - 2;
    // Groups committed before tile kt's wait: the prologue's one per
    // stage, and one per step from 2 on (tile kt + ahead): those after
    // kt are stages - 1 - kt at the first steps, then ahead - 1.
    let _ = writeln!(
        out,
        "    if (kt == 0) __asm__ volatile(\"cp.async.wait_group {};\" ::: \"memory\");
    else if (kt == 1) __asm__ volatile(\"cp.async.wait_group {};\" ::: \"memory\");
    else __asm__ volatile(\"cp.async.wait_group {};\" ::: \"memory\");
    /* this work-item's copies of A, visible to wgmma's async proxy */
    __asm__ volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");",
        stages - 1,
        stages - 2,
        ahead - 1,
    );
    let _ = writeln!(
        out,
        "    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0 && kt >= 2 && kt + {ahead} < {k_tiles}) {{"
    );
    copy_stage_from(
        out,
        &format!("kt + {ahead}"),
        k_origin,
        &tma_stage(columns, stages, false),
    );
    let _ = writeln!(
        out,
        "    }}\n    if (kt >= 2) {{\n    if (kt + {ahead} < {k_tiles}) {{"
    );
    gather_tile(out, image, &format!("kt + {ahead}"), (columns, stages));
    let _ = writeln!(out, "    }}\n    {COMMIT}\n    }}");
    products(out, precision, columns);
}

/// Stage `slot`'s four `wgmma`s per warpgroup, committed as one group,
/// then a wait that leaves that group alone in flight.
fn products(out: &mut String, precision: TensorCores, columns: u32) {
    let _ = writeln!(
        out,
        "    const uint st = stages + slot * {}u;
    __asm__ volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");",
        stage_bytes(columns)
    );
    for s in 0..STAGE_K / WGMMA_K {
        wgmma_half_instruction(
            out,
            precision,
            columns,
            &descriptor(&format!("st + a_rows + {}", s * WGMMA_K * HALF)),
            &mn_major_descriptor(&format!(
                "st + {}",
                A_TILE_BYTES + s * WGMMA_K * B_BOX_COLUMNS * HALF
            )),
        );
    }
    let _ = writeln!(
        out,
        "    __asm__ volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");
    __asm__ volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\");"
    );
}

/// One `wgmma.mma_async.m64n128k16` of `precision`'s halves, A and B
/// through the descriptors (B transposed: MN-major): D element `d` is
/// `acc[(d / 2) % 2][2 (d / 4) + d % 2]` (row `group + 8 ((d / 2) % 2)`,
/// column `8 (d / 4) + 2 tig + d % 2` of the warp's 16 rows).
fn wgmma_half_instruction(
    out: &mut String,
    precision: TensorCores,
    columns: u32,
    a_desc: &str,
    b_desc: &str,
) {
    let elements = columns / 2;
    let ty = match precision {
        TensorCores::Bf16 => "bf16",
        _ => "f16",
    };
    let outputs: Vec<String> = (0..elements).map(|d| format!("%{d}")).collect();
    let accumulators: Vec<String> = (0..elements)
        .map(|d| format!("\"+f\"(acc[{}][{}])", (d / 2) % 2, 2 * (d / 4) + d % 2))
        .collect();
    let _ = writeln!(
        out,
        "    __asm__ volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{scale}, 0; wgmma.mma_async.sync.aligned.m64n{columns}k{WGMMA_K}.f32.{ty}.{ty} {{{}}}, %{a}, %{b}, p, 1, 1, 0, 1; }}\"
      : {}
      : \"l\"({a_desc}), \"l\"({b_desc}), \"r\"(1));",
        outputs.join(", "),
        accumulators.join(", "),
        a = elements,
        b = elements + 1,
        scale = elements + 2,
    );
}

/// The kernel's per-element epilogue on the staged accumulator `staged`
/// of element (`i`, `j`): the accumulator's start, then `tail` (the
/// store, or a vector store's value).
fn epilogue_body(out: &mut String, spec: &GemmSpec, tail: &str) {
    for line in spec.init_statements.lines() {
        let _ = writeln!(out, "      {line}");
    }
    let _ = writeln!(out, "      const float acc_init = {};", spec.init);
    let _ = writeln!(out, "      const float acc_value = acc_init + staged;");
    for line in tail.lines() {
        let _ = writeln!(out, "      {line}");
    }
}

/// Whether the work-items gather A (a convolution's image that is not a
/// plain matrix) rather than the TMA copying it.
fn gathers(spec: &GemmSpec) -> bool {
    spec.a_image
        .as_ref()
        .is_some_and(|image| !image.is_matrix())
}

/// Closes a stage's group of `cp.async` copies.
const COMMIT: &str = "__asm__ volatile(\"cp.async.commit_group;\" ::: \"memory\");";

/// Work-items per row of A's k tile (16-byte chunks of its 128 bytes) and
/// rows each work-item copies.
const CHUNKS: u32 = STAGE_K * HALF / 16;
const GATHER_ROWS: u32 = ROWS * CHUNKS / THREADS;

/// Each work-item's rows of A (`tid / 8 + 32 r`) as output pixels, and
/// their windows' origins in the image: `g_y`, `g_x` (a row past M gets
/// a `g_y` no tap brings into the image) and the element offset
/// `g_base` of the origin (which may lie outside the image: only taps
/// inside it are read).
fn gather_origins(out: &mut String, image: &ConvImage, m: i64) {
    let [sn, sy_, sx_] = image.pixel_strides;
    let [oh, ow] = image.output;
    let _ = writeln!(
        out,
        "  /* implicit GEMM: this work-item's rows of A (output pixels) and their windows' origins */
  const int g_chunk = tid % {CHUNKS};
  int g_y[{GATHER_ROWS}], g_x[{GATHER_ROWS}];
  long g_base[{GATHER_ROWS}];
  #pragma unroll
  for (int r = 0; r < {GATHER_ROWS}; ++r) {{
    const long m = (long)row0 + tid / {CHUNKS} + {pass} * r;
    const long pixel = m % {pixels}, n = m / {pixels};
    g_y[r] = m < {m} ? (int)(pixel / {ow}) * {sy} - {py} : -{far};
    g_x[r] = (int)(pixel % {ow}) * {sx} - {px};
    g_base[r] = n * {sn} + (long)g_y[r] * {sy_} + (long)g_x[r] * {sx_} + {offset};
  }}",
        pass = THREADS / CHUNKS,
        pixels = oh * ow,
        sy = image.strides[0],
        sx = image.strides[1],
        py = image.pads[0],
        px = image.pads[1],
        far = 1i64 << 28,
        offset = image.offset,
    );
}

/// The work-item's `cp.async` copies of A's k tile `unit` into its stage:
/// channels `k0 % C + 8 g_chunk ..` of tap `k0 / C` (`k0 = 64 unit`; a
/// multiple of 64 channels keeps a k tile in one tap) of each of its
/// rows' input pixels, zero-filled where the pixel is outside the image,
/// each 16 bytes at its chunk of the 128-byte swizzle (chunk `c` of row
/// `r` at `c ^ (r % 8)`; the rows of one work-item share `r % 8`).
fn gather_tile(out: &mut String, image: &ConvImage, unit: &str, (columns, stages): (u32, u32)) {
    let [_, h, w, c] = image.shape;
    let [_, sy_, sx_] = image.pixel_strides;
    let [_, kw] = image.taps;
    let _ = writeln!(
        out,
        "    {{
      const int k0 = (int)({unit}) * {STAGE_K};
      const int tap = k0 / {c};
      const int dy = (tap / {kw}) * {dy}, dx = (tap % {kw}) * {dx};
      const long shift = (long)dy * {sy_} + (long)dx * {sx_} + k0 % {c} + 8 * g_chunk;
      const uint row = (uint)tid / {CHUNKS}u;
      const uint dst = stages + ((uint)({unit}) % {count}u) * {stage}u + row * {row_bytes}u + (((uint)g_chunk ^ (row % 8u)) * 16u);
      #pragma unroll
      for (int r = 0; r < {GATHER_ROWS}; ++r) {{
        const int y = g_y[r] + dy, x = g_x[r] + dx;
        const int inside = (uint)y < {h}u && (uint)x < {w}u;
        __global const {ctype}* src = {buffer} + (inside ? g_base[r] + shift : 0);
        __asm__ volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\"
                         :: \"r\"(dst + (uint)r * {pass_bytes}u), \"l\"(src), \"r\"(inside ? 16 : 0) : \"memory\");
      }}
    }}",
        dy = image.dilations[0],
        dx = image.dilations[1],
        count = stages,
        stage = stage_bytes(columns),
        row_bytes = STAGE_K * HALF,
        pass_bytes = (THREADS / CHUNKS) * STAGE_K * HALF,
        ctype = image.buffer.storage.c_type(),
        buffer = image.buffer,
    );
}

/// This body's TMA stage for tiles `columns` wide in `stages` stages
/// ([`stages_for`]; `a_by_tma`: the TMA copies A too).
fn tma_stage(columns: u32, stages: u32, a_by_tma: bool) -> TmaStage {
    TmaStage {
        stages,
        stage_bytes: stage_bytes(columns),
        stage_k: STAGE_K,
        a_tile_bytes: A_TILE_BYTES,
        b_box_bytes: B_BOX_BYTES,
        b_box_columns: B_BOX_COLUMNS,
        boxes: columns / B_BOX_COLUMNS,
        a_by_tma,
    }
}
