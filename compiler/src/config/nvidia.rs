//! Configuration for NVIDIA GPUs (measured on an H100 with NVIDIA's OpenCL):
//! 256 work-items per group keeps enough warps resident per SM for
//! bandwidth-bound kernels.

use super::targets::Precision;
use super::{
    AttentionConfig, GemmConfig, GemmShape, KernelKind, PoolFolding, TargetConfig, WindowConfig,
    WindowGeometry,
};

/// NVIDIA GPUs through NVIDIA's OpenCL.
pub struct Nvidia;

/// Downsampling pools are unrolled into the 1x1 convolutions they feed;
/// stride-1 pools stay kernels of their own. Measured on the H100 with
/// `tcc-benchmark` (real-weight models, device time per call, float4 A
/// staging): SqueezeNet's three stride-2 pools folded ran level at batch 1
/// (0.359-0.371 against 0.349-0.385 ms unfolded, end to end 0.61-0.64
/// against 0.65-0.71 ms) and 2% slower at batch 32 (1.42 against 1.39
/// ms); Inception v1's stride-1 pool projections folded ran 21% slower at
/// batch 1 (1.555 against 1.285 ms): their padded windows put nine
/// bounds-checked reads per element into the staging of small GEMMs.
pub const FOLD_POOLS_INTO_CONVS: PoolFolding = PoolFolding::Strided;

fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise => 256,
        KernelKind::Reduction => 256,
        KernelKind::Matmul
        | KernelKind::Convolution
        | KernelKind::Softmax
        | KernelKind::LayerNorm
        | KernelKind::Attention => 256,
    }
}

/// Tiled GEMM: 128x128 tiles with 8x8 outputs per work-item (256
/// work-items; the fp32 body double-buffers its local tiles and steps k
/// by 8, `GemmConfig::fma_config`, the tensor-core body by 16) for large
/// products, once the output has at least 256 such tiles (two per SM of
/// the 132); else 64x64 tiles with 4x4 per work-item.
///
/// Mid-sized outputs, with fewer 64x64 tiles than SMs but at least 128
/// rows and 64 columns, take 32x64 tiles of 4x4 outputs (128 work-items,
/// double-buffered) when those tiles, split in K as below, give every SM
/// a work-group: ResNet-50's batch-1 56x56 3x3 convolution (M = 3136, N =
/// 64, K = 576, 98 tiles in 2 slices) went from 34.4 us (32x32 tiles of
/// 2x2 in 2 slices) to 24.1, its 28x28 1x1 layers from 18-36 us to 11-20.
/// Smaller outputs take 32x32 and then 16x16 tiles with 2x2 outputs per
/// work-item, whichever first gives every SM a work-group, so that a 7x7
/// stage's 3x3 convolution (M = 49, N = 512) runs 128 work-groups instead
/// of 8.
///
/// Unless K is long: when 32x32 tiles give fewer than two work-groups per
/// SM, 32x32 tiles split K across work-groups instead (split-K), doubling
/// the slices until every SM has two work-groups of 256 work-items or a
/// slice would drop below 256 of K (the 32x64 tiles split the same way;
/// where slices of 256 leave SMs idle and K is at most 512, they split
/// into at most 4 slices of at least 64: ResNet-50's batch-1 56x56 1x1 reduction, M = 3136, N =
/// 64, K = 256, went from 23.1 us on 32x32 tiles to 16.5 in 4 slices of
/// 32x64, and the 28x28 reduction, M = 784, N = 128, K = 512, from 23.3
/// (32x32 in 2 slices) to 17.0; `scripts/conv-shapes-device.py` (in git history at aaeb302); with at
/// most 256 rows, 16x64 tiles in 2 slices instead, `few_rows_short_split`;
/// both layers now take the rules of session 11's second round: K of 512
/// to 1152 takes 16x64 tiles in 4 slices, `mid_k_four_slices`, and K up to
/// 256 k steps of 32, `short_k_deep_steps`).
/// ResNet-50's 7x7-stage 3x3 convolution (M = 49, N = 512, K = 4608: 32
/// tiles) runs 16 slices of 288; 16x16 tiles there gave 128 groups of 64
/// work-items each streaming all of K (0.64 ms, 0.36 TFLOP/s on the H100).
fn gemm(m: i64, n: i64, k: i64) -> Option<GemmConfig> {
    if let Some(config) = super::tall_narrow_gemm(m, n) {
        return Some(config);
    }
    if m < 32 && n >= 32 {
        return Some(small_m(m, n, k));
    }
    if let Some(config) = few_rows_narrow(m, n, k) {
        return Some(config);
    }
    if m < 32 || n < 32 {
        return None;
    }
    if m * n >= 2048 * 2048 {
        return Some(GemmConfig {
            tile_m: 128,
            tile_n: 128,
            tile_k: 16,
            work_m: 8,
            work_n: 8,
            split_k: 1,
            k_lanes: 1,
        });
    }
    let tiles = |tile: i64| ((m + tile - 1) / tile) * ((n + tile - 1) / tile);
    if tiles(64) < SMS
        && n >= 64
        && let Some(config) = mid_k_four_slices(m, n, k)
    {
        return Some(config);
    }
    let narrow_tiles = ((m + 31) / 32) * ((n + 63) / 64);
    let mut narrow_split = split_k(narrow_tiles, k, MIN_SPLIT_K_SLICE);
    let mut short_split = false;
    if narrow_tiles * narrow_split < SMS && k <= MAX_SHORT_SPLIT_K_LENGTH {
        let short = split_k(narrow_tiles, k, MIN_SHORT_SPLIT_K_SLICE).min(MAX_SHORT_SPLIT_K);
        short_split = short > narrow_split;
        narrow_split = narrow_split.max(short);
    }
    if tiles(64) < SMS && m >= MID_MIN_ROWS && n >= 64 && narrow_tiles * narrow_split >= SMS {
        if short_split && let Some(config) = few_rows_short_split(m, n) {
            return Some(config);
        }
        if let Some(config) = short_k_deep_steps(m, n, k, narrow_tiles, short_split) {
            return Some(config);
        }
        return Some(GemmConfig {
            tile_m: 32,
            tile_n: 64,
            tile_k: 16,
            work_m: 4,
            work_n: 4,
            split_k: narrow_split as u32,
            k_lanes: 1,
        });
    }
    if tiles(64) < SMS && tiles(32) < 2 * SMS {
        let split_k = split_k(tiles(32), k, MIN_SPLIT_K_SLICE);
        if split_k > 1 {
            return Some(GemmConfig {
                tile_m: 32,
                tile_n: 32,
                tile_k: 16,
                work_m: 2,
                work_n: 2,
                split_k: split_k as u32,
                k_lanes: 1,
            });
        }
    }
    let (tile, work) = if tiles(64) >= SMS {
        (64, 4)
    } else if tiles(32) >= SMS {
        (32, 2)
    } else {
        (16, 2)
    };
    // 64x64 tiles that fill the SMs only once over a long K (ResNet-50's
    // 7x7 stage at batch 32: M = 1568, N = 512, K = 4608, 200 tiles) also
    // split K, in slices of at least 1024, up to two work-groups per SM.
    let split_k = if tile == 64 {
        split_k(tiles(64), k, MIN_LONG_SPLIT_K_SLICE)
    } else {
        1
    };
    Some(GemmConfig {
        tile_m: tile,
        tile_n: tile,
        tile_k: 16,
        work_m: work,
        work_n: work,
        split_k: split_k as u32,
        k_lanes: 1,
    })
}

/// The tile of an exact-fp32 matmul (no tensor cores: `--precision=fp32`)
/// that the table gives unsplit 128x128 tiles of 8x8 outputs per
/// work-item, or unsplit 64x64 tiles of 4x4: 64x128 tiles of 8x8 outputs
/// (128 work-items) where those still give every SM a work-group. Twice
/// the 128x128 grid's work-groups at the same 8x8 register block (64
/// multiply-adds per k step against 16 loads), and four times the
/// arithmetic of a 64x64 tile's 4x4 block per load. The products of a
/// transformer at batch 32 (H200, each kernel's fastest of 10 calls in
/// turns, `tcc-benchmark --in-turns-with`): M = 4096, N = 768, K = 768
/// 0.166 -> 0.121 ms (from 64x64), K = 3072 0.599 -> 0.412; M = 6304
/// (ViT-B/16), N = 768, K = 768 0.211 -> 0.186 (from 128x128), K = 3072
/// 0.814 -> 0.726; M = 4096, N = 2304, K = 768 0.341 -> 0.309; N = 3072
/// 0.408 -> 0.405. 128x64 tiles of 8x8 came second (0.131, 0.447, 0.205,
/// 0.805, 0.335, 0.434), 128x96, 64x64 and 128x128 with k steps of 32
/// later.
///
/// Where 64x128 tiles would not give every SM a work-group (a few hundred
/// rows: a vision transformer's 197 tokens at batch 1) but 32x128 tiles
/// of 4x8 outputs in two K slices do, on a K of at least 512, those:
/// ViT-B/16's 197 x 2304 x 768 product 60.6 -> 37.1 us, 197 x 3072 x 768
/// 53.8 -> 38.8 (32x64 tiles unsplit: 43.9 and 43.3; 64x128 in two slices
/// 50.6 and 44.8). Convolutions keep the table (their A gathers differ),
/// and so do batched products.
pub fn fp32_matmul_tile(table: GemmConfig, shape: &GemmShape) -> GemmConfig {
    let unsplit_square = table.split_k == 1
        && table.tile_k == 16
        && matches!(
            (table.tile_m, table.tile_n, table.work_m, table.work_n),
            (128, 128, 8, 8) | (64, 64, 4, 4)
        );
    if !(unsplit_square && shape.batch == 1 && shape.n >= 128) {
        return table;
    }
    let columns = (shape.n + 127) / 128;
    let wide = GemmConfig {
        tile_m: 64,
        tile_n: 128,
        tile_k: 16,
        work_m: 8,
        work_n: 8,
        split_k: 1,
        k_lanes: 1,
    };
    if (shape.m + 63) / 64 * columns >= SMS {
        return wide;
    }
    let sliced = GemmConfig {
        tile_m: 32,
        work_m: 4,
        split_k: 2,
        ..wide
    };
    if (shape.m + 31) / 32 * columns * 2 >= SMS && shape.k >= 512 {
        sliced
    } else {
        table
    }
}

/// Few rows (at most `FEW_ROWS`) where 32x64 tiles fill the SMs only in
/// the short split's slices of less than 256 of K: 16x64 tiles of 4x4
/// outputs (64 work-items) in 2 slices instead, if those still give every
/// SM two work-groups. Twice the row tiles, half the slices: each
/// work-group streams twice as much K per partial tile it publishes, and
/// a 16-row tile wastes fewer rows past M. ResNet-50's batch-1 14x14 1x1
/// expansion (M = 196, N = 1024, K = 256: 208 tiles, 416 work-groups) went
/// from 16.9 us (32x64 tiles in 4 slices of 64) to 15.4 reading its NCHW
/// input through a folded transpose, and from 17.0 to 14.4 reading NHWC
/// activations as it does inside the graph (cuDNN 11.5; 32x64 tiles in 2
/// slices: 15.7 and 15.0; 16x64 tiles with k steps of 32 or in 4 slices:
/// 15.4-16.1; `scripts/conv-shapes-device.py` (in git history at aaeb302), docs/benchmarks.md, session
/// 11). The 56x56 1x1 reduction (M = 3136, N = 64, K = 256) does not take
/// them: 16x64 tiles in 2 slices ran 17.9 us there against 16.0 with the
/// NCHW input (14.3 against 15.9 reading NHWC); it takes
/// `short_k_deep_steps`' 32x64 tiles unsplit.
fn few_rows_short_split(m: i64, n: i64) -> Option<GemmConfig> {
    let config = GemmConfig {
        tile_m: 16,
        tile_n: 64,
        tile_k: 16,
        work_m: 4,
        work_n: 4,
        split_k: 2,
        k_lanes: 1,
    };
    let tiles = |size: i64, tile: u32| (size + tile as i64 - 1) / tile as i64;
    let work_groups = tiles(m, config.tile_m) * tiles(n, config.tile_n) * config.split_k as i64;
    (m <= FEW_ROWS && work_groups >= 2 * SMS).then_some(config)
}

/// K of 512 to 1152 where 64x64 tiles leave SMs idle: 16x64 tiles of 4x4
/// outputs (64 work-items) in 4 slices of 128 to 288, if those give every
/// SM a work-group. Reading NHWC activations as inside ResNet-50 at batch
/// 1 (docs/benchmarks.md, session 11, second round), this beat the table's
/// 32x64 and 32x32 split-K tiles on every such shape measured: the 14x14
/// 1x1 reduction (M = 196, N = 256, K = 1024) 21.3 -> 18.2 us, the 7x7
/// stride-2 expansion (M = 49, N = 2048, K = 1024) 33.6 -> 22.9, the 7x7
/// expansion (K = 512) 20.5 -> 16.1, the 56x56 3x3 convolution (M = 3136,
/// N = 64, K = 576) 22.8 -> 20.1. Longer slices lose to the table's deeper
/// splits (K = 2304 in 4 slices: 37.1 against 26.6 in 8 of 32x64), and so
/// do shorter ones (K = 256: 16.1 against 14.4, `few_rows_short_split`).
/// Only for N a multiple of 64 (all that was measured): applied to all 14
/// of Inception v2's layers in range (14x14 and 28x28, N = 64 to 224), the
/// deeper K splits grew its memory plan's arena to 1.08x the liveness
/// bound (`compiler/tests/light_models.rs` allows 1.05; 1.00 with the 3
/// whose N is a multiple of 64), and a partial column tile idles up to 63
/// of 64 columns.
fn mid_k_four_slices(m: i64, n: i64, k: i64) -> Option<GemmConfig> {
    let config = GemmConfig {
        tile_m: 16,
        tile_n: 64,
        tile_k: 16,
        work_m: 4,
        work_n: 4,
        split_k: 4,
        k_lanes: 1,
    };
    let work_groups = ((m + 15) / 16) * ((n + 63) / 64) * config.split_k as i64;
    ((MID_K_MIN..=MID_K_MAX).contains(&k) && n % 64 == 0 && work_groups >= SMS).then_some(config)
}

/// Short K (at most 256) on mid-sized outputs (`gemm`'s 32x64 tiles):
/// k steps of 32, halving the barriers per K. Where 32x64 tiles unsplit
/// fill the SMs already, 16x64 tiles unsplit (twice the work-groups, at
/// least two per SM; K of at least 128): the 56x56 1x1 layer to 128
/// channels (M = 3136, N = 128, K = 256) went from 19.5 us to 16.8 reading
/// NHWC, the 28x28 1x1 expansion (M = 784, N = 512, K = 128) from 11.7 to
/// 11.0 (K = 256: 18.6 to 17.6), and from 20.9, 12.7 and 22.3 to 20.5,
/// 12.7 and 20.8 with the NCHW input. Where they would take the short split
/// (past `FEW_ROWS` rows, at least half the SMs covered unsplit), 32x64
/// tiles unsplit instead of 4 slices of 64: the 56x56 1x1 reduction (M =
/// 3136, N = 64, K = 256) went from 15.9 to 13.4 reading NHWC, but from
/// 15.9 to 20.3 with the NCHW input, whose K is strided (inside ResNet-50
/// it reads NHWC).
fn short_k_deep_steps(
    m: i64,
    n: i64,
    k: i64,
    narrow_tiles: i64,
    short_split: bool,
) -> Option<GemmConfig> {
    if k > SHORT_K_DEEP_MAX {
        return None;
    }
    let config = |tile_m: u32| GemmConfig {
        tile_m,
        tile_n: 64,
        tile_k: 32,
        work_m: 4,
        work_n: 4,
        split_k: 1,
        k_lanes: 1,
    };
    if short_split {
        return (m > FEW_ROWS && 2 * narrow_tiles >= SMS).then_some(config(32));
    }
    let work_groups = ((m + 15) / 16) * ((n + 63) / 64);
    (narrow_tiles >= SMS && k >= SHORT_K_DEEP_MIN && work_groups >= 2 * SMS).then_some(config(16))
}

/// Configurations `tcc tune` measures besides the table's: the GPU list
/// (square tiles, 32x32 tiles in 2 to 16 slices) and the tiles this table
/// picks for mid-sized outputs, 32x64 tiles of 4x4 outputs, unsplit and
/// in 2 or 4 slices, plus 64x64 tiles in 2 or 4 slices and 16x64 tiles
/// in 2 or 4 (`few_rows_short_split`, `mid_k_four_slices`); a split keeps
/// at least 128 of K per slice. Up to 256 of K, also 16x64 and 32x64 tiles
/// unsplit with k steps of 32 (`short_k_deep_steps`). At most 8 rows, the
/// few-row form with 8, 4, 2 and 1 work-items across (`few_rows`).
fn gemm_alternatives(m: i64, n: i64, k: i64) -> Vec<GemmConfig> {
    let mut alternatives = super::gpu_gemm_alternatives(m, n, k);
    let tile = |tile_m: u32, tile_n: u32, split_k: u32| GemmConfig {
        tile_m,
        tile_n,
        tile_k: 16,
        work_m: 4,
        work_n: 4,
        split_k,
        k_lanes: 1,
    };
    for slices in [1, 2, 4] {
        if slices == 1 || k / slices as i64 >= 128 {
            alternatives.push(tile(32, 64, slices));
            if slices > 1 {
                alternatives.push(tile(64, 64, slices));
            }
        }
    }
    for slices in [2, 4] {
        if k / slices as i64 >= 128 {
            alternatives.push(tile(16, 64, slices));
        }
    }
    if k <= SHORT_K_DEEP_MAX {
        for tile_m in [16, 32] {
            alternatives.push(GemmConfig {
                tile_k: 32,
                ..tile(tile_m, 64, 1)
            });
        }
    }
    // A few rows: the few-row form at each width of column block.
    if (1..=FEW_ROWS_MAX_M).contains(&m) && k >= FEW_ROWS_MIN_K {
        for across in [8, 4, 2, 1] {
            alternatives.push(GemmConfig::few_rows(m as u32, 8, across, 256 / across));
        }
    }
    alternatives
}

/// Fewer than 32 rows (a fully connected layer at batch 1, a matrix-vector
/// product): wide, short tiles, one row per work-item and float4 columns,
/// `tile_m` the rows rounded up to a power of two (at least 4), and K
/// split until every SM has two work-groups. The product streams B once,
/// so what matters is that enough work-groups stream it: a plain loop
/// kernel (one work-item per column walking all of K) moved VGG-19's 411
/// MB first layer at 0.26 TB/s on the H100.
fn small_m(m: i64, n: i64, k: i64) -> GemmConfig {
    let tile_m = (m.max(4) as u64).next_power_of_two() as u32;
    let tile_n = 4 * (256 / tile_m);
    let tiles = (m + tile_m as i64 - 1) / tile_m as i64 * ((n + tile_n as i64 - 1) / tile_n as i64);
    GemmConfig {
        tile_m,
        tile_n,
        tile_k: 16,
        work_m: 1,
        work_n: 4,
        split_k: split_k(tiles, k, MIN_SMALL_M_SPLIT_K_SLICE).min(MAX_SMALL_M_SPLIT_K) as u32,
        k_lanes: 1,
    }
}

/// The most rows of a product the few-row form takes ([`few_rows`]).
pub const FEW_ROWS_MAX_M: i64 = 8;

/// The shortest K the few-row form takes: its work-groups share K among
/// up to 128 lanes, each of which should get a few rows.
const FEW_ROWS_MIN_K: i64 = 256;

/// A product of at most [`FEW_ROWS_MAX_M`] rows over at least
/// [`FEW_ROWS_MIN_K`] of K (a decode step's projections at batch <= 8, a
/// classifier at batch 1): the few-row form (`tcc_kernels::gemm`'s
/// `few_rows`), 8 columns per work-item, 256 work-items as the widest
/// column block (8, 4, 2 or 1 work-items across, 32 to 256 lanes along
/// K) that still gives every SM a work-group, else the narrowest (a
/// block of 8 columns reads half of each 32-byte sector of B's rows, its
/// neighbour the other half, from the L2 cache that a decode step's
/// weight matrices fit in). B is read once, 16 bytes a load, with no
/// local tiles or split-K pass: on the H200 the split-K tiles of
/// [`small_m`] took 8-13 us for GPT-2 small's 768 x 2304 .. 3072 x 768
/// projections at M = 1.
pub fn few_rows(batch: i64, m: i64, n: i64, k: i64) -> Option<GemmConfig> {
    if !(1..=FEW_ROWS_MAX_M).contains(&m) || k < FEW_ROWS_MIN_K || n < 16 {
        return None;
    }
    const COLUMNS: u32 = 8;
    let groups = |across: u32| {
        batch.max(1) * ((n + (COLUMNS * across) as i64 - 1) / (COLUMNS * across) as i64)
    };
    let across = [8u32, 4, 2, 1]
        .into_iter()
        .find(|&across| groups(across) >= SMS)
        .unwrap_or(1);
    Some(GemmConfig::few_rows(
        m as u32,
        COLUMNS,
        across,
        256 / across,
    ))
}

/// Fewer than 32 columns over few rows and a long K (the squeeze of a
/// squeeze-and-excitation block: a batch of pooled vectors times a 672 x
/// 28 matrix): 16x16 tiles of 64 work-items, K split until every SM has
/// two work-groups or a slice would drop below 128. A loop kernel's
/// work-item per output walked all of K, accumulating through memory:
/// EfficientNet-B0's squeezes at batch 32 (M = 32, N = 4..48, K =
/// 96..1152) took 11-70 us each on the H200, 0.5 ms a call together.
fn few_rows_narrow(m: i64, n: i64, k: i64) -> Option<GemmConfig> {
    if !(32..FEW_ROWS).contains(&m) || n >= 32 || k < MIN_FEW_ROWS_SPLIT_K_SLICE {
        return None;
    }
    let tiles = (m + 15) / 16 * ((n + 15) / 16);
    Some(GemmConfig {
        tile_m: 16,
        tile_n: 16,
        tile_k: 16,
        work_m: 1,
        work_n: 4,
        split_k: split_k(tiles, k, MIN_FEW_ROWS_SPLIT_K_SLICE) as u32,
        k_lanes: 1,
    })
}

/// K slices for `tiles` work-groups: doubled until every SM has two
/// work-groups or a slice would drop below `min_slice` of K.
fn split_k(tiles: i64, k: i64, min_slice: i64) -> i64 {
    let mut slices = 1;
    while tiles * slices < 2 * SMS && k / (slices * 2) >= min_slice {
        slices *= 2;
    }
    slices
}

/// Streaming multiprocessors of the H100 (PCIe/SXM) the tile choice aims
/// to fill.
const SMS: i64 = 132;

/// The most rows that take `few_rows_short_split`'s 16-row tiles (8 tiles
/// of 32 rows).
const FEW_ROWS: i64 = 256;

/// The K range `mid_k_four_slices` splits into 4 slices of 16x64 tiles.
const MID_K_MIN: i64 = 512;
const MID_K_MAX: i64 = 1152;

/// The K range `short_k_deep_steps` covers (its 16x64 tiles from the
/// minimum: K = 64 ran 3 to 5 times slower with k steps of 32).
const SHORT_K_DEEP_MIN: i64 = 128;
const SHORT_K_DEEP_MAX: i64 = 256;

/// The fewest rows that take 32x64 tiles when 64x64 tiles leave SMs idle
/// (the 7x7 stage, M = 49, keeps its 32x32 split-K tiles).
const MID_MIN_ROWS: i64 = 128;

/// The shortest K slice split-K hands one work-group.
const MIN_SPLIT_K_SLICE: i64 = 256;

/// The shortest K slice of a 32x64 split when slices of
/// `MIN_SPLIT_K_SLICE` leave SMs without a work-group (`gemm`).
const MIN_SHORT_SPLIT_K_SLICE: i64 = 64;

/// The most slices such a short split takes.
const MAX_SHORT_SPLIT_K: i64 = 4;

/// The longest K that takes such a short split (slices of 256 give it at
/// most two; longer K was not measured with it).
const MAX_SHORT_SPLIT_K_LENGTH: i64 = 512;

/// The shortest K slice of a split over fewer than 32 rows (`small_m`):
/// such a product streams B once, each work-group `tile_n` columns of
/// its slice, and a work-group's slice is a chain of k steps, each a load,
/// a barrier and a few FMAs, so shorter slices in more work-groups keep
/// more of B in flight. A decode step of GPT-2 small (M = batch <= 8 over
/// 768 x 2304, 768 x 3072 and 3072 x 768 fp16 weights, H200) took 15.7 us
/// a projection with slices of at least 128 (4 slices of 192 over K =
/// 768), 8.3-13.1 with slices of at least 32 (16 of 48), and 9.4-15.4
/// with k steps of 32 in slices of at least 64.
const MIN_SMALL_M_SPLIT_K_SLICE: i64 = 32;

/// The most slices of such a split: the last work-group of a tile reads
/// every slice's partial tile back (VGG-19's classifier, N = 1000 over K
/// = 4096 at batch 1, keeps 32 slices of 128).
const MAX_SMALL_M_SPLIT_K: i64 = 32;

/// The shortest K slice of `few_rows_narrow`'s split (each work-group
/// still streams `tile_n` columns of it).
const MIN_FEW_ROWS_SPLIT_K_SLICE: i64 = 128;

/// The shortest K slice when 64x64 tiles already give every SM one
/// work-group: splitting only pays when each slice stays long.
const MIN_LONG_SPLIT_K_SLICE: i64 = 1024;

/// Work-items per row of a row template: at most 256.
const ROW_WORKGROUP: i64 = 256;

/// Rows up to this many columns, in kernels of at least
/// [`MANY_ROWS`] rows, take [`SHORT_ROW_WORKGROUP`] work-items.
const SHORT_ROW: i64 = 1024;

/// A full wave of row work-groups and more: 8 per SM of an H100/H200.
const MANY_ROWS: i64 = 8 * 132;

/// Work-items per short row among many: two warps. Such a work-group is
/// latency-bound (a load, two reductions, a store), so more rows in flight
/// beat more work-items a row: BERT-base's layer norm over 768 columns at
/// batch 32 (4096 rows, bf16, H200) took 14.5 us with 256 work-items a
/// row, 11.4 with 128, 10.5 with 64 and 12.4 with one warp. Few rows (a
/// batch of one, a reduction to a handful of outputs) keep 256.
const SHORT_ROW_WORKGROUP: i64 = 64;

/// The longest rows a layer norm packs several of into a work-group
/// ([`TargetConfig::layer_norm_rows`]).
const PACKED_ROW_MAX_COLUMNS: i64 = 512;

/// The most columns a work-item of a packed layer norm keeps.
const PACKED_ROW_COLUMNS: i64 = 16;

/// Work-items of a packed layer norm's work-group.
const PACKED_ROW_GROUP: i64 = 256;

/// Query rows per work-group of the tensor-core attention body's wide
/// form (four warps of 32 rows: `tcc_kernels::attention::warp_rows`).
const WIDE_ATTENTION_ROWS: i64 = 128;
/// Convolutions of fewer input channels run on explicit columns at
/// fp16/bf16 (`conv_unfold_channels`): one 16-byte chunk of halves.
const UNFOLD_CHANNELS: i64 = 8;
/// Query rows per work-group and work-items per row of an exact-fp32
/// attention of at least that many rows whose 64-row work-groups would not
/// give every SM one (a transformer at batch 1: ViT-B/16's 12 heads of
/// 197 rows made 48): the key-parallel form, each of a row's work-items
/// walking every `FEW_GROUP_LANES`-th key, so that the heads' rows are
/// spread over many more work-items. On the H200 (each kernel's fastest
/// of 20 calls in turns): ViT-B/16's attention at batch 1 74.5 -> 60.0
/// us, BERT-base's (128 rows) 46.6 -> 31.4, GPT-2's (causal) 45.8 ->
/// 28.4; 8 rows of 8 lanes took 84.2, 40.2 and 37.5, 4 rows of 16 86.3,
/// 31.9 and 29.2, 32 rows of 2 (ViT-B/16) 65.1 and of 4 74.8.
const FEW_GROUP_ROWS: i64 = 16;
const FEW_GROUP_LANES: i64 = 4;
/// The fewest work-groups of [`WIDE_ATTENTION_ROWS`] rows for which an
/// attention takes them: one per SM of an H100/H200.
const WIDE_ATTENTION_MIN_GROUPS: i64 = 132;
/// The fewest query rows for which an attention takes the wide form.
/// Its warps hold 255 registers (two m16 tiles' accumulators, scores and
/// query fragments), half the resident warps of 16-row warps (128):
/// on an H200, batch 32 x 12 heads x head dimension 64 in fp16, 128-row
/// groups took 1358 against 1559 us at 2048 rows, the same at 512 rows
/// (146.6 / 146.5) and longer at 128 (30.4 / 27.8) and causal 512 (112.7
/// / 102.3; `scripts/bench/attention-device.py --variant`).
const WIDE_ATTENTION_MIN_ROWS: i64 = 1024;

impl TargetConfig for Nvidia {
    fn workgroup_size(&self, kind: KernelKind) -> i64 {
        workgroup_size(kind)
    }

    fn gemm(&self, m: i64, n: i64, k: i64, _vector_width: u32) -> Option<GemmConfig> {
        gemm(m, n, k)
    }

    fn gemm_alternatives(&self, m: i64, n: i64, k: i64) -> Vec<GemmConfig> {
        gemm_alternatives(m, n, k)
    }

    fn row_workgroup(&self, columns: i64, rows: i64) -> i64 {
        let preferred = if columns <= SHORT_ROW && rows >= MANY_ROWS {
            SHORT_ROW_WORKGROUP
        } else {
            ROW_WORKGROUP
        };
        super::gpu_row_workgroup(preferred, columns)
    }

    /// Many rows of at most [`PACKED_ROW_MAX_COLUMNS`]: the fewest
    /// work-items (a power of two, at most a warp) that keep
    /// [`PACKED_ROW_COLUMNS`] columns or fewer each, as many rows as fill
    /// [`PACKED_ROW_GROUP`] work-items; else one row a group.
    fn layer_norm_rows(&self, columns: i64, rows: i64) -> (i64, i64) {
        if rows < MANY_ROWS || columns > PACKED_ROW_MAX_COLUMNS {
            return (self.row_workgroup(columns, rows), 1);
        }
        let lanes = (((columns + PACKED_ROW_COLUMNS - 1) / PACKED_ROW_COLUMNS).max(1) as u64)
            .next_power_of_two()
            .min(32) as i64;
        (lanes, PACKED_ROW_GROUP / lanes)
    }

    /// 64 query rows per group (two warps: every query row of a head
    /// dimension of 64 or 128 keeps its query and accumulator in
    /// registers), K and V tiles of up to 64 keys in at most 32 KiB of
    /// shared memory (64 keys at D = 64, 32 at D = 128). At fp16/bf16 the
    /// PTX form's tensor-core body takes four warps of 16 rows, or for
    /// long sequences ([`WIDE_ATTENTION_MIN_ROWS`]) at a head dimension
    /// of at most 64, where 128-row groups still give every SM one
    /// ([`WIDE_ATTENTION_MIN_GROUPS`]), 128 rows as four warps of 32 (two
    /// m16 tiles sharing each K and V fragment a warp reads from local
    /// memory). `scripts/bench/attention-device.py` times it against
    /// PyTorch's flash attention (docs/benchmarks.md).
    /// At a batch of one this leaves few groups (BERT-base: 24 for 132
    /// SMs), but 32 rows a group (one warp, twice the groups) measured
    /// slower: 46.5 against 34.6 us a layer, BERT-base fp16 on an H200,
    /// since each group stages the head's whole K and V.
    ///
    /// A few query rows (a decode step) in fp32 take the key-parallel
    /// form (`super::attention_key_lanes`): GPT-2 small's one-token step
    /// ran 80 us a layer with a work-group of 64 rows per head, all but
    /// one of them idle, 12.4 us with 64 key lanes (H200). The tensor-core
    /// body (fp16/bf16) keeps its 64-row groups there: 12.1 us against
    /// 26.4 for the key lanes, whose half loads convert element by
    /// element.
    fn attention(
        &self,
        head_dim: i64,
        q_len: i64,
        heads: i64,
        tensor_cores: bool,
    ) -> AttentionConfig {
        let block_k = super::attention_block_k(head_dim, 32 * 1024, 64);
        let lanes = (!tensor_cores)
            .then(|| super::attention_key_lanes(head_dim, q_len))
            .flatten();
        if !tensor_cores
            && lanes.is_none()
            && q_len >= FEW_GROUP_ROWS
            && (q_len + 63) / 64 * heads < SMS
            && super::key_lanes_fit(FEW_GROUP_ROWS, FEW_GROUP_LANES, head_dim)
        {
            return AttentionConfig {
                block_q: FEW_GROUP_ROWS,
                block_k,
                key_lanes: FEW_GROUP_LANES,
            };
        }
        let wide_groups = (q_len + WIDE_ATTENTION_ROWS - 1) / WIDE_ATTENTION_ROWS * heads;
        let block_q = if tensor_cores
            && head_dim <= 64
            && q_len >= WIDE_ATTENTION_MIN_ROWS
            && wide_groups >= WIDE_ATTENTION_MIN_GROUPS
        {
            WIDE_ATTENTION_ROWS
        } else {
            64
        };
        match lanes {
            Some(key_lanes) => AttentionConfig {
                block_q: q_len,
                block_k,
                key_lanes,
            },
            None => AttentionConfig {
                block_q,
                block_k,
                key_lanes: 1,
            },
        }
    }

    fn fold_pools_into_convs(&self) -> PoolFolding {
        FOLD_POOLS_INTO_CONVS
    }

    /// Eight at fp16/bf16: the tensor-core GEMMs read a convolution's
    /// image in 16-byte chunks of channels (the `wgmma` gather in 64), so
    /// a ViT's patch embedding (3 channels) computed each element of A in
    /// fp32 arithmetic from the model's NCHW input on the FMA body. On its
    /// columns (patches do not overlap: a permutation of the input) it is
    /// a tensor-core product: ViT-B/16 at batch 32, fp16, H200, in turns,
    /// 262 us folded against 21 for the copy and 22 for the product;
    /// ConvNeXt-T's 4x4 patches 68 against 26 + 24. Overlapping stems keep
    /// the folded form (`fold_conv_inputs::unfolds` says why). Exact fp32
    /// keeps it too.
    fn conv_unfold_channels(&self, precision: Precision) -> Option<i64> {
        matches!(precision, Precision::Fp16 | Precision::Bf16).then_some(UNFOLD_CHANNELS)
    }

    /// Yes: libclc's `erf` evaluates every branch of its piecewise fit
    /// with selects, three IEEE divisions and two `exp` expansions (about
    /// 300 instructions an element), so a GELU over BERT-base's 4096 x
    /// 3072 FFN activations at batch 32 was compute-bound at 117 us on an
    /// H200; the rational form is 15 fused multiply-adds and one division.
    fn rational_erf_tanh(&self) -> bool {
        true
    }

    fn window(&self, geometry: &WindowGeometry) -> Option<WindowConfig> {
        super::gpu_window(geometry, WINDOW_WORKGROUP, WINDOW_MIN_WORK_ITEMS)
    }

    /// Yes: unrolled, a large window's block is one straight run of loads
    /// (7 x 17 for a 7x7 window and 4 columns) that ptxas hoists and keeps
    /// live together, past the 255 registers a work-item has. ConvNeXt-T's
    /// 7x7 depthwise kernels at batch 32 on an H200 (driver 580, its JIT
    /// being CUDA 13.0's ptxas), unrolled / rolled: 14x14x384 fp16 557 /
    /// 31 us (the JIT gave the unrolled one 32 registers and 2.8 KiB of
    /// local memory; the bf16 twin 255 registers, 1 KiB, 96 / 33 us),
    /// 7x7x768 49 / 18 us, 28x28x192 53 / 46, 56x56x96 114 / 100, with
    /// the same outputs (docs/benchmarks.md).
    fn window_rows_rolled(&self) -> bool {
        true
    }

    /// Yes: a column's 4 half channels as one 8-byte store (with the
    /// aligned loads, ConvNeXt-T's 7x7 fp16 kernels at batch 32 on an
    /// H200 went from 101 to 58 us at 56x56x96 and 34 to 24 us at
    /// 14x14x384). Not on pocl-cpu: there EfficientNet-B0's depthwise
    /// kernels with a SiLU epilogue ran 0-50% slower with their 8 lanes
    /// gathered into one store.
    fn window_vector_stores(&self) -> bool {
        true
    }
}

/// This target's groups and blocking for any window op (a forced choice).
pub(super) fn forced_window(geometry: &WindowGeometry) -> Option<WindowConfig> {
    super::blocked_window(geometry, WINDOW_WORKGROUP, WINDOW_MIN_WORK_ITEMS)
}

/// Work-items per group of a window kernel (depthwise convolution,
/// pooling).
const WINDOW_WORKGROUP: u32 = 256;

/// The fewest work-items a window kernel's column blocks may leave: two
/// groups of 256 per SM (the layers that take the template at all, see
/// `gpu_window`, have at least 4 times as many outputs).
const WINDOW_MIN_WORK_ITEMS: i64 = 2 * SMS * WINDOW_WORKGROUP as i64;

#[cfg(test)]
mod tests {
    use super::super::Target;
    use super::{GemmConfig, few_rows_narrow};

    #[test]
    fn long_half_attentions_take_128_row_groups() {
        let block_q = |head_dim, q_len, heads, tensor_cores| {
            Target::Nvidia
                .attention(head_dim, q_len, heads, tensor_cores)
                .block_q
        };
        // Batch 32 x 12 heads, head dimension 64, fp16/bf16.
        assert_eq!(block_q(64, 2048, 384, true), 128);
        assert_eq!(block_q(64, 1024, 384, true), 128);
        assert_eq!(block_q(64, 512, 384, true), 64);
        assert_eq!(block_q(64, 128, 384, true), 64);
        // One sequence of 12 heads at 2048 rows: 192 groups, still wide;
        // at 1024 rows 96 groups leave SMs idle.
        assert_eq!(block_q(64, 2048, 12, true), 128);
        assert_eq!(block_q(64, 1024, 12, true), 64);
        // A head dimension of 128, fp32 arithmetic: 64 rows.
        assert_eq!(block_q(128, 2048, 384, true), 64);
        assert_eq!(block_q(64, 2048, 384, false), 64);
    }

    #[test]
    fn nvidia_candidates_include_the_mid_sized_tiles() {
        let tiles = |candidates: &[GemmConfig]| -> Vec<(u32, u32, u32)> {
            candidates
                .iter()
                .map(|c| (c.tile_m, c.tile_n, c.split_k))
                .collect()
        };
        // A 28x28 1x1 layer (K = 512): 32x64 unsplit and in 2 or 4
        // slices, 64x64 in 2 or 4.
        let mid = tiles(&Target::Nvidia.gemm_candidates(1, 784, 256, 512));
        for tile in [
            (32, 64, 1),
            (32, 64, 2),
            (32, 64, 4),
            (64, 64, 2),
            (64, 64, 4),
            (16, 64, 2),
            (16, 64, 4),
        ] {
            assert!(mid.contains(&tile), "{tile:?} not in {mid:?}");
        }
        // K = 64 keeps whole: no slice under 128.
        let short = tiles(&Target::Nvidia.gemm_candidates(1, 3136, 256, 64));
        assert!(short.contains(&(32, 64, 1)), "{short:?}");
        assert!(short.iter().all(|&(_, _, split)| split == 1), "{short:?}");
        // The generic target's list is unchanged.
        let generic = tiles(&Target::Generic.gemm_candidates(1, 784, 256, 512));
        assert!(!generic.contains(&(32, 64, 1)), "{generic:?}");
    }

    #[test]
    fn few_rows_of_narrow_columns_take_split_16x16_tiles() {
        // EfficientNet-B0's squeeze at batch 32: M = 32, N = 28, K = 672:
        // 4 tiles in 4 slices of 168 (8 would leave slices of 84).
        assert_eq!(chosen(32, 28, 672), (16, 16, 16, 4));
        // A short K or many rows: not this rule.
        assert!(few_rows_narrow(32, 28, 64).is_none());
        assert!(few_rows_narrow(4096, 28, 672).is_none());
        assert!(few_rows_narrow(32, 32, 672).is_none());
        let config = few_rows_narrow(32, 8, 96 * 4).unwrap();
        assert_eq!(config.workgroup_size(), 64);
        config.validate().unwrap();
    }

    #[test]
    fn short_k_splits_32x64_tiles_into_up_to_4_slices() {
        // Where 32x64 tiles in slices of 256 leave SMs idle, slices of 64
        // (at most 4), K from 257 to 511 (shorter K and K from 512 take k
        // steps of 32 or 16x64 tiles, the tests below): M = 3136, N = 64
        // (98 tiles) and M = 784, N = 128 (50 tiles), K = 384.
        for (m, n, k) in [(3136, 64, 384), (784, 128, 384)] {
            let config = Target::Nvidia.gemm_config(1, m, n, k).unwrap();
            assert_eq!((config.tile_m, config.tile_n, config.split_k), (32, 64, 4));
        }
        // At most 256 rows (the 14x14 1x1 expansion, M = 196, N = 1024, K =
        // 256): 16x64 tiles of 4x4 in 2 slices of 128, 416 work-groups of
        // 64, not 32x64 tiles in 4 slices (448 of 128).
        let few_rows = Target::Nvidia.gemm_config(1, 196, 1024, 256).unwrap();
        assert_eq!(
            few_rows,
            GemmConfig {
                tile_m: 16,
                tile_n: 64,
                tile_k: 16,
                work_m: 4,
                work_n: 4,
                split_k: 2,
                k_lanes: 1,
            }
        );
        assert_eq!(few_rows.split_k_slice(256), 128);
        assert_eq!(few_rows.workgroup_size(), 64);
        // ... only where those still give every SM two work-groups (N =
        // 320: 65 tiles of 16x64, 35 of 32x64 in 4 slices) and only instead
        // of the short split (K = 1536 splits in 4 slices of 384 already).
        let narrow = Target::Nvidia.gemm_config(1, 196, 320, 256).unwrap();
        assert_eq!((narrow.tile_m, narrow.tile_n, narrow.split_k), (32, 64, 4));
        let long = Target::Nvidia.gemm_config(1, 196, 1024, 1536).unwrap();
        assert_eq!((long.tile_m, long.tile_n, long.split_k), (32, 64, 4));
        // K past 1152 with too few 32x64 tiles for the mid-sized path keeps
        // slices of 256 (M = 800, N = 64, K = 1280: 32x32 tiles in 4).
        let longer = Target::Nvidia.gemm_config(1, 800, 64, 1280).unwrap();
        assert_eq!((longer.tile_m, longer.tile_n, longer.split_k), (32, 32, 4));
    }

    /// (tile_m, tile_n, tile_k, split_k) of the nvidia table's choice.
    fn chosen(m: i64, n: i64, k: i64) -> (u32, u32, u32, u32) {
        let c = Target::Nvidia.gemm_config(1, m, n, k).unwrap();
        (c.tile_m, c.tile_n, c.tile_k, c.split_k)
    }

    #[test]
    fn mid_k_takes_16x64_tiles_in_4_slices() {
        // K of 512 to 1152 where 64x64 tiles leave SMs idle: the 56x56 3x3
        // layer, the 28x28 and 14x14 reductions, the 7x7 expansions.
        for (m, n, k) in [
            (3136, 64, 576),
            (784, 128, 1152),
            (784, 128, 512),
            (784, 256, 512),
            (196, 256, 1024),
            (196, 512, 1024),
            (49, 2048, 512),
            (49, 2048, 1024),
        ] {
            assert_eq!(chosen(m, n, k), (16, 64, 16, 4), "{m}x{n}x{k}");
        }
        // Longer K keeps the deeper splits (slices of 576 and more lost).
        assert_eq!(chosen(196, 256, 2304), (32, 64, 16, 8));
        assert_eq!(chosen(49, 512, 2048), (32, 32, 16, 8));
        assert_eq!(chosen(49, 512, 4608), (32, 32, 16, 16));
        // Fewer work-groups than SMs (M = 64, N = 64: 16) or outputs that
        // fill the SMs with 64x64 tiles stay as they were.
        assert_ne!(chosen(64, 64, 1024).0, 16);
        assert_eq!(chosen(3136, 512, 576), (64, 64, 16, 1));
        // N not a multiple of 64 (Inception v2's M = 784, N = 96) neither.
        assert_eq!(chosen(784, 96, 576), (32, 32, 16, 2));
    }

    #[test]
    fn short_k_takes_k_steps_of_32() {
        // 32x64 tiles that fill the SMs unsplit: 16x64 tiles, k steps of 32.
        for (m, n, k) in [(3136, 128, 256), (784, 512, 128), (784, 512, 256)] {
            assert_eq!(chosen(m, n, k), (16, 64, 32, 1), "{m}x{n}x{k}");
        }
        // The short split past 256 rows: 32x64 tiles unsplit, k steps of 32.
        assert_eq!(chosen(3136, 64, 256), (32, 64, 32, 1));
        // K = 64 keeps k steps of 16 (32x32 tiles here; 64x64 at N = 256).
        assert_eq!(chosen(3136, 64, 64), (32, 32, 16, 1));
        assert_eq!(chosen(3136, 256, 64), (64, 64, 16, 1));
        // At most 256 rows the short split stays `few_rows_short_split`'s.
        assert_eq!(chosen(196, 1024, 256), (16, 64, 16, 2));
    }
}
