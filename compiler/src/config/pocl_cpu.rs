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

/// One work-item per row of a softmax, layer norm or row reduction: it
/// keeps a partial per SIMD lane. Measured with pyopencl on this machine's
/// PoCL (2048x1024): a softmax took 15.4 ms as 64-item groups and 1.2 ms
/// as one vectorized work-item per row; a row sum of exp 9.3 ms and 0.55
/// ms (onnxruntime: 1.0 and 0.48 ms).
pub const ROW_WORKGROUP: i64 = 1;

/// The row template's single work-item reads its row in order: only
/// worth it where the row is contiguous. A row read with a stride (a
/// fully connected layer whose weight is read along its columns, every
/// output a column) runs faster as one work-item per output, which PoCL
/// vectorizes across neighbouring outputs: ResNet-50's pooled classifier
/// (2048 x 1000) took 8.9 ms as rows and 2.7 ms as outputs, one thread.
pub fn row_reduction_template(contiguous: bool) -> bool {
    contiguous
}

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

/// GEMMs and convolutions on CPUs: the register-blocked form (a work-group
/// of one work-item per `rows x columns` block of C, operands read
/// straight from memory), which PoCL compiles to SIMD multiply-adds along
/// the block's columns. Columns: two AVX-512 vectors where N allows,
/// fewer for narrow outputs; rows: no more than M has.
pub fn gemm(m: i64, n: i64, _k: i64) -> Option<super::GemmConfig> {
    let columns: u32 = match n {
        n if n >= 32 => GEMM_COLUMNS,
        n if n >= 16 => 16,
        n if n >= 8 => 8,
        _ => 4,
    };
    let rows = (m.clamp(1, GEMM_ROWS as i64)) as u32;
    Some(super::GemmConfig {
        tile_m: rows,
        tile_n: columns,
        tile_k: 4,
        work_m: rows,
        work_n: columns,
        split_k: 1,
    })
}

/// Register blocks `tcc tune` tries besides the table's: 4 to 12 rows (no
/// more than M has) by 16 to 64 columns (no wider than N needs), at most
/// 24 `float16` accumulators so that the B vectors and the broadcast A
/// element still fit AVX-512's 32 registers.
pub fn gemm_alternatives(m: i64, n: i64) -> Vec<super::GemmConfig> {
    let mut alternatives = Vec::new();
    for rows in [4u32, 6, 8, 12] {
        for columns in [16u32, 32, 48, 64] {
            let fits = rows * columns / 16 <= 24;
            let useful = (rows as i64) <= m.max(1) && (columns as i64) < n.max(1) + 16;
            if fits && useful {
                alternatives.push(super::GemmConfig {
                    tile_m: rows,
                    tile_n: columns,
                    tile_k: 4,
                    work_m: rows,
                    work_n: columns,
                    split_k: 1,
                });
            }
        }
    }
    alternatives
}

/// The register block of a work-item for wide outputs.
pub const GEMM_ROWS: u32 = 6;
pub const GEMM_COLUMNS: u32 = 32;
