//! Configuration for NVIDIA GPUs (measured on an H100 with NVIDIA's OpenCL):
//! 256 work-items per group keeps enough warps resident per SM for
//! bandwidth-bound kernels.

use super::KernelKind;

pub fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise => 256,
        KernelKind::Reduction => 256,
        KernelKind::Matmul
        | KernelKind::Convolution
        | KernelKind::Softmax
        | KernelKind::LayerNorm => 256,
    }
}

/// Tiled GEMM: 128x128 tiles with 8x8 outputs per work-item (256
/// work-items, 16 KiB of local memory) for large products — the shape that
/// reached 25 TFLOP/s in plain OpenCL C on an H100 — once the output has at
/// least 256 such tiles (two per SM of the 132); smaller outputs use 64x64
/// tiles with 4x4 per work-item, so that 1024x1024 still fills the GPU
/// (a measured 7.9 TFLOP/s with 64 tiles of 128x128).
pub fn gemm(m: i64, n: i64, _k: i64) -> Option<super::GemmConfig> {
    // Narrow outputs (8 to 31 columns: the channels of small convolutions)
    // with many rows: tall, narrow tiles.
    if (8..32).contains(&n) && m >= 256 {
        return Some(super::GemmConfig {
            tile_m: 64,
            tile_n: 16,
            tile_k: 16,
            work_m: 4,
            work_n: 1,
        });
    }
    if m < 32 || n < 32 {
        return None;
    }
    if m * n >= 2048 * 2048 {
        Some(super::GemmConfig {
            tile_m: 128,
            tile_n: 128,
            tile_k: 16,
            work_m: 8,
            work_n: 8,
        })
    } else {
        Some(super::GemmConfig {
            tile_m: 64,
            tile_n: 64,
            tile_k: 16,
            work_m: 4,
            work_n: 4,
        })
    }
}
