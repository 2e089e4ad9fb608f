//! Configuration for any OpenCL 1.2 device: conservative work-group sizes
//! that every driver accepts (CL_DEVICE_MAX_WORK_GROUP_SIZE >= 256 on all
//! devices tcc has met).

use super::{
    AttentionConfig, GemmConfig, KernelKind, PoolFolding, TargetConfig, WindowConfig,
    WindowGeometry,
};

/// Any OpenCL 1.2 device.
pub struct Generic;

/// As on NVIDIA (see [`super::nvidia::FOLD_POOLS_INTO_CONVS`]): GPUs in
/// general keep stride-1 pools as kernels.
pub const FOLD_POOLS_INTO_CONVS: PoolFolding = PoolFolding::Strided;

fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise | KernelKind::Reduction => 128,
        KernelKind::Matmul
        | KernelKind::Convolution
        | KernelKind::Softmax
        | KernelKind::LayerNorm
        | KernelKind::Attention => 128,
    }
}

/// Tiled GEMM for products with at least 32x32 outputs: 32x32 tiles, 2x2
/// outputs per work-item (256 work-items, 4 KiB of local memory).
fn gemm(m: i64, n: i64) -> Option<GemmConfig> {
    if let Some(config) = super::tall_narrow_gemm(m, n) {
        return Some(config);
    }
    (m >= 32 && n >= 32).then_some(super::TILES_32X32)
}

/// Work-items per row of a row template: at most 128.
const ROW_WORKGROUP: i64 = 128;

impl TargetConfig for Generic {
    fn workgroup_size(&self, kind: KernelKind) -> i64 {
        workgroup_size(kind)
    }

    fn gemm(&self, m: i64, n: i64, _k: i64, _vector_width: u32) -> Option<GemmConfig> {
        gemm(m, n)
    }

    fn row_workgroup(&self, columns: i64, _rows: i64) -> i64 {
        super::gpu_row_workgroup(ROW_WORKGROUP, columns)
    }

    /// 64 query rows per group (two warps, or one wavefront), K and V
    /// tiles of at most 32 keys in 16 KiB of local memory (what any
    /// OpenCL GPU has to spare).
    fn attention(
        &self,
        head_dim: i64,
        _q_len: i64,
        _heads: i64,
        _tensor_cores: bool,
    ) -> AttentionConfig {
        AttentionConfig {
            block_q: 64,
            block_k: super::attention_block_k(head_dim, 16 * 1024, 32),
            key_lanes: 1,
        }
    }

    fn fold_pools_into_convs(&self) -> PoolFolding {
        FOLD_POOLS_INTO_CONVS
    }

    fn window(&self, geometry: &WindowGeometry) -> Option<WindowConfig> {
        super::gpu_window(geometry, WINDOW_WORKGROUP, WINDOW_MIN_WORK_ITEMS)
    }
}

/// This target's groups and blocking for any window op (a forced choice).
pub(super) fn forced_window(geometry: &WindowGeometry) -> Option<WindowConfig> {
    super::blocked_window(geometry, WINDOW_WORKGROUP, WINDOW_MIN_WORK_ITEMS)
}

/// Work-items per group of a window kernel (depthwise convolution,
/// pooling), as for loop nests.
const WINDOW_WORKGROUP: u32 = 128;

/// The fewest work-items a window kernel's column blocks may leave (a
/// mid-sized GPU's worth: 32 compute units of 4 groups).
const WINDOW_MIN_WORK_ITEMS: i64 = 32 * 4 * WINDOW_WORKGROUP as i64;
