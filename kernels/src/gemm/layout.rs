//! How a GEMM work-group's work-items share its tile: fp32 work-items,
//! `mma.sync` warps or `wgmma` warpgroups, with the accumulator each
//! work-item keeps and where its elements lie in the tile (the epilogue and
//! split-K's fix-up index C through these).

use super::GemmConfig;
use super::emit::output_offset;
use super::tensor_cores::{Pipeline, TensorCores};
use super::wgmma::Wgmma;
use super::wgmma_half::WgmmaHalf;
use super::wgmma_large::WgmmaLarge;

/// How a work-group's work-items share its tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// Each work-item multiplies on the FP32 units, its outputs in runs of
    /// `vector` along each axis (see `output_offset`).
    Fma { vector_m: u32, vector_n: u32 },
    /// Each warp computes a `16 mi x 8 ni` block of 16x8 `mma` tiles; the
    /// warps form a `warps_m x warps_n` grid over the tile.
    Mma {
        warps_m: u32,
        warps_n: u32,
        mi: u32,
        ni: u32,
        precision: TensorCores,
        pipeline: Pipeline,
    },
    /// Two warpgroups of TF32 `wgmma` over a 128x128 tile (`wgmma`).
    Wgmma,
    /// Two warpgroups of TF32 `wgmma` over a 256x128 tile in CUDA's
    /// dynamic local memory (`wgmma_large`).
    WgmmaLarge,
    /// Two warpgroups of FP16/BF16 `wgmma` over a 128x128 tile in CUDA's
    /// dynamic local memory (`wgmma_half`).
    WgmmaHalf,
}

impl Layout {
    /// The tensor-core layout for `c`, if its tile divides into warps of
    /// 16x8 `mma` tiles (the squarest warp tiles win), its k step into
    /// `mma`s and its local tiles fit two stages.
    pub(super) fn mma(c: &GemmConfig, precision: TensorCores) -> Option<Self> {
        let threads = c.workgroup_size();
        if !threads.is_multiple_of(32) || !c.tile_k.is_multiple_of(precision.mma_k()) {
            return None;
        }
        let pipeline = Pipeline::new(c, precision)?;
        let warps = threads / 32;
        (1..=warps)
            .filter(|w| warps.is_multiple_of(*w))
            .filter_map(|warps_m| {
                let warps_n = warps / warps_m;
                let (rows, cols) = (c.tile_m / warps_m, c.tile_n / warps_n);
                (c.tile_m.is_multiple_of(16 * warps_m) && c.tile_n.is_multiple_of(8 * warps_n))
                    .then_some((rows.abs_diff(cols), warps_m, warps_n, rows / 16, cols / 8))
            })
            .min()
            .map(|(_, warps_m, warps_n, mi, ni)| Layout::Mma {
                warps_m,
                warps_n,
                mi,
                ni,
                precision,
                pipeline,
            })
    }

    /// The accumulator's dimensions per work-item.
    pub(super) fn acc(&self, c: &GemmConfig) -> (u32, u32) {
        match self {
            Layout::Fma { .. } => (c.work_m, c.work_n),
            Layout::Mma { mi, ni, .. } => (2 * mi, 2 * ni),
            Layout::Wgmma => Wgmma::acc(),
            Layout::WgmmaLarge => WgmmaLarge::acc(),
            Layout::WgmmaHalf => WgmmaHalf::acc(c),
        }
    }

    /// C expressions for the tile row of accumulator row `wm` and the tile
    /// column of accumulator column `wn`.
    pub(super) fn offsets(&self, c: &GemmConfig) -> (String, String) {
        let (threads_n, threads_m) = c.threads();
        match *self {
            Layout::Fma { vector_m, vector_n } => (
                output_offset("wm", "ty", threads_m, vector_m),
                output_offset("wn", "tx", threads_n, vector_n),
            ),
            // c0, c1: row groupID, columns 2 tig and 2 tig + 1; c2, c3: row
            // groupID + 8 (PTX ISA, mma.m16n8k8 accumulator fragments).
            Layout::Mma { .. } => (
                "(warp_row + (wm / 2) * 16 + (wm % 2) * 8 + group)".to_string(),
                "(warp_col + (wn / 2) * 8 + tig * 2 + wn % 2)".to_string(),
            ),
            Layout::Wgmma => Wgmma::offsets(),
            Layout::WgmmaLarge => WgmmaLarge::offsets(),
            Layout::WgmmaHalf => WgmmaHalf::offsets(),
        }
    }
}
