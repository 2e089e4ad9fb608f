//! Configuration for CPUs through PoCL: PoCL runs a work-group as a loop on
//! one core and vectorizes across work-items, so moderate groups amortize
//! scheduling without starving the other cores.

use super::KernelKind;

/// Pools are unrolled into the 1x1 convolutions they feed: a kernel and a
/// buffer less per pool. On this machine's 2 PoCL cores the two forms of
/// SqueezeNet ran equally within noise (`tcc-benchmark`, real weights:
/// 149 and 123 ms per call folded, 122 and 132 ms unfolded, alternating
/// runs). The GPU configurations fold only downsampling pools (see
/// `nvidia::FOLD_POOLS_INTO_CONVS`).
pub const FOLD_POOLS_INTO_CONVS: super::PoolFolding = super::PoolFolding::All;

pub fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise => 256,
        KernelKind::Reduction
        | KernelKind::Matmul
        | KernelKind::Convolution
        | KernelKind::Softmax
        | KernelKind::LayerNorm => 64,
    }
}

/// Tiled GEMM on CPUs: PoCL runs a work-group's items as a loop that it
/// vectorizes across work-items, so each of 64 work-items keeps a 4x8 block
/// of outputs in registers (32x64 tiles, k staged 32 at a time). Measured on
/// PoCL 5 / AVX-512 (docs/benchmarks.md): 2.8x faster than 32x32 tiles with
/// 4x4 blocks; wider (4x16) or taller (8x8) blocks were slower.
pub fn gemm(m: i64, n: i64, _k: i64) -> Option<super::GemmConfig> {
    // Narrow outputs (8 to 31 columns: the channels of small convolutions)
    // with many rows: tall, narrow tiles.
    if (8..32).contains(&n) && m >= 256 {
        return Some(super::GemmConfig {
            tile_m: 32,
            tile_n: 16,
            tile_k: 16,
            work_m: 4,
            work_n: 2,
            split_k: 1,
        });
    }
    if m >= 32 && n >= 64 {
        return Some(super::GemmConfig {
            tile_m: 32,
            tile_n: 64,
            tile_k: 32,
            work_m: 4,
            work_n: 8,
            split_k: 1,
        });
    }
    (m >= 32 && n >= 32).then_some(super::GemmConfig {
        tile_m: 32,
        tile_n: 32,
        tile_k: 16,
        work_m: 4,
        work_n: 4,
        split_k: 1,
    })
}
