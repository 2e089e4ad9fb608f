//! Configuration for CPUs through PoCL: PoCL runs a work-group as a loop on
//! one core and vectorizes across work-items, so moderate groups amortize
//! scheduling without starving the other cores.

use super::{
    AttentionConfig, GemmConfig, GemmShape, KernelKind, PoolFolding, TargetConfig, WindowConfig,
    WindowGeometry,
};

/// CPUs through PoCL.
pub struct PoclCpu;

/// Pools stay kernels of their own. Unrolled into the 1x1 convolution
/// they feed, a pooling window's loads and maximums run in the
/// register-blocked GEMM's k loop, once per row and k of every block of
/// C (SqueezeNet's squeeze convolutions after its stride-2 pools ran at
/// 3.5-10 GFLOP/s so); a pooling kernel computes each element once.
/// Measured side by side with onnxruntime on this project's AVX2 machine
/// (`scripts/bench/bench-cpu-ab.py`, 3 rounds, docs/benchmarks.md, session
/// 14): SqueezeNet 7.9-8.3 ms folded, 7.7-7.9 unfolded; Inception v1's
/// stride-1 pool projections 34.0-34.2 folded, 32.4-32.5 unfolded. (The
/// first measurement, in session 5 with other kernels, found them level.)
pub const FOLD_POOLS_INTO_CONVS: PoolFolding = PoolFolding::None;

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
fn row_reduction_template(contiguous: bool) -> bool {
    contiguous
}

/// The most work-groups a loop-nest kernel (elementwise, a window or a
/// short reduction) launches: PoCL pays a fixed cost per work-group, so a
/// bias + ReLU over 351,232 points (ShuffleNet) took 2.07 ms as 1,372
/// groups of 256 and 1.02 to 1.10 ms as 64 or 128 groups walking
/// grid-stride loops (one PoCL thread; 256 groups: 1.86 ms). 64 groups
/// still give every core of a large CPU several.
pub const MAX_LOOP_WORKGROUPS: i64 = 64;

fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise => 256,
        KernelKind::Reduction
        | KernelKind::Matmul
        | KernelKind::Convolution
        | KernelKind::Softmax
        | KernelKind::LayerNorm
        | KernelKind::Attention => 64,
    }
}

/// GEMMs and convolutions on CPUs: the register-blocked form (a work-group
/// of one work-item per `rows x columns` block of C, operands read
/// straight from memory), which PoCL compiles to SIMD multiply-adds along
/// the block's columns. The block fills the vector registers of the CPU
/// target (`vector_width` of its `#tcc.target`: `pocl-cpu-avx2`,
/// `pocl-cpu-avx512`, or `host`'s) without spilling them: the
/// accumulators, one row of B and the broadcast A element.
///
/// - AVX-512 (32 registers of 16 floats): outputs at least 64 wide take
///   6 x 64 blocks (four vectors per row: 24 accumulators, the four B
///   vectors and the broadcast A element in 29 registers), 32 to 63 wide
///   6 x 32. `tcc tune` on ResNet-50 (13 candidates measured in turns on
///   an AMD AVX-512 machine, docs/benchmarks.md) had picked 4 x 64 for 13
///   of its 20 convolution shapes, 6 x 32 for 2; on a 2-core Intel
///   AVX-512 Xeon, each kernel's fastest in turns, 6 x 64 took 5-6% less
///   of ResNet-50's kernel time than 4 x 64 (21.7-21.9 -> 20.3-20.7 ms),
///   5% of Inception v1's, 2-2.5% of SqueezeNet's and DenseNet-121's (six
///   rows per B vector loaded instead of four). Where 64-wide blocks would pad N
///   to more columns than 32-wide ones (N = 96, 144, 160, 320, 480, 672:
///   the depthwise CNNs' expansions and projections), 6 x 32: the edge
///   block of a 6 x 64 grid computes padding and stores its columns one by
///   one (its loop stops at N), which no longer pays for the wider block.
///   Outputs 16 to 31 wide take 12 x 16 (twelve accumulators where 6 x 16
///   had six, too few to hide the multiply-add's latency), or 8 x 24
///   (three `float8` a row) where 24-wide blocks pad N less (N = 20-24:
///   a 16-wide grid over N = 24 computes a third of its outputs as
///   padding). MobileNetV2's projections, each kernel's fastest of 30
///   calls in turns on a 2-core AVX-512 Xeon: 112x112 32 -> 16 0.111 ->
///   0.091 ms, 56x56 96 -> 24 0.160 -> 0.123 and 144 -> 24 0.198 -> 0.155
///   (14 x 16 was slower at N = 16, and 12 x 32 no faster than 6 x 32).
/// - Narrower SIMD (AVX2: 16 registers of 8 floats): 6 x 16, twelve
///   accumulators. The AVX-512 table's 4 x 64 needs 32 and spilled: on
///   this machine's AVX2 cores ResNet-50 ran at 160 ms a call with it and
///   138 ms with 6 x 16 (`tcc-benchmark`, docs/benchmarks.md). Where
///   blocks 24 wide (4 x 24: three vectors a row, the same twelve
///   accumulators) pad N less than 16-wide ones (N = 20-24, 68-72,
///   116-120, ...: the 24-channel stems and projections of the small
///   CNNs), 4 x 24: a 6 x 16 grid over N = 24 computes a third of its
///   outputs as padding, and a convolution's computed A (an image's
///   first layer: window, padding and its transposed input per load) is
///   gathered once per row for 24 columns rather than twice for 32.
///   Measured in turns on an AVX2 EPYC (docs/benchmarks.md):
///   ShuffleNet's stem (M = 12544, N = 24, K = 27) 0.5-0.7x the 6 x 16
///   kernel's time, MobileNetV2's projections to 24 channels (M = 3136,
///   K = 96 and 144) 0.55-0.95x. Where both pad N alike (N = 96, 144),
///   6 x 16 stays: MobileNetV2's 112 x 112 expansion (N = 96, K = 16)
///   took 1.2-1.4x as long in 4 x 24 blocks.
///
/// Narrower outputs take fewer columns; never more rows than M has.
pub fn gemm_for_vector_floats(m: i64, n: i64, vector_floats: u32) -> Option<GemmConfig> {
    let padded = |columns: i64| (n + columns - 1) / columns * columns;
    let (rows, columns): (u32, u32) = match n {
        n if vector_floats >= 16 && n >= 64 && padded(64) <= padded(32) => (6, 64),
        n if vector_floats >= 16 && n >= 64 => (6, 32),
        n if vector_floats >= 16 && n >= 32 => (6, 32),
        n if vector_floats >= 16 && n >= 16 && padded(24) < padded(16) => (8, 24),
        n if vector_floats >= 16 && n >= 16 => (12, 16),
        n if vector_floats < 16 && n >= 16 && padded(24) < padded(16) => (4, 24),
        n if n >= 16 => (6, 16),
        n if n >= 8 => (6, 8),
        _ => (6, 4),
    };
    let rows = m.clamp(1, rows as i64) as u32;
    Some(GemmConfig::register_blocked(rows, columns))
}

/// The register block of a convolution whose A is computed per load by a
/// folded producer (a BatchNorm + ReLU, or a pooling unrolled into a 1x1
/// convolution). The pocl-cpu phase pipeline folds neither any more (see
/// `fold_producers_into_convs` and [`FOLD_POOLS_INTO_CONVS`]); a pipeline
/// that does (`tcc-fold-conv-inputs` with its defaults, through
/// `tcc-opt`) gets this block. On AVX2, outputs at least 64 wide take
/// 4 x 64 blocks instead of 6 x 16. The producer's arithmetic runs once
/// per row and k and serves every column of the block: 64 columns
/// amortize it four times better than 16, which outweighs the
/// accumulators spilling (32 vectors in 16 registers). Measured in turns
/// in session 13 (docs/benchmarks.md): DenseNet-121's 1x1 convolutions
/// with their BatchNorm + ReLU folded ran 20-30% faster so, its 3x3 ones
/// (plain A) 50% slower. AVX-512 keeps its table.
pub fn gemm_computed_a_for_vector_floats(m: i64, n: i64, vector_floats: u32) -> Option<GemmConfig> {
    if vector_floats < 16 && n >= 64 {
        return Some(GemmConfig::register_blocked(m.clamp(1, 4) as u32, 64));
    }
    gemm_for_vector_floats(m, n, vector_floats)
}

/// Register blocks `tcc tune` tries besides the table's: 4 to 12 rows (no
/// more than M has) by 16 to 64 columns (no wider than N needs), at most
/// 24 `float16` accumulators so that the B vectors and the broadcast A
/// element still fit AVX-512's 32 registers.
fn gemm_alternatives(m: i64, n: i64) -> Vec<GemmConfig> {
    let mut alternatives = Vec::new();
    for rows in [4u32, 6, 8, 12] {
        for columns in [16u32, 32, 48, 64] {
            let fits = rows * columns / 16 <= 24;
            let useful = (rows as i64) <= m.max(1) && (columns as i64) < n.max(1) + 16;
            if fits && useful {
                alternatives.push(GemmConfig::register_blocked(rows, columns));
            }
        }
    }
    alternatives
}

/// The panel width of a convolution's constant filter on the
/// register-blocked GEMM: 16 output channels (one AVX-512 vector, two
/// AVX2 ones) where the block's columns are whole panels (N need not be:
/// the last panel is padded with zero channels, so the block at the edge
/// loads whole vectors rather than column by column, of the panels there
/// are: its vectors past the last panel are zero, not read).
/// Read as stored, each k step of a block loads from a row N floats past
/// the last, a power-of-two stride through the whole filter; from panels
/// the block reads in order. On this project's AVX2 machine ResNet-50's
/// convolution kernels summed 55.3 ms as stored and 41.9 ms in panels
/// (the 7x7 stage's 3x3 layers 2x faster, the 1x1 layers with K of 512 to
/// 2048 1.3-2.7x), and no layer was slower beyond noise, K = 64 included
/// (docs/benchmarks.md, session 14).
pub fn weight_panel(config: &GemmConfig, shape: &GemmShape) -> Option<i64> {
    const PANEL: i64 = 16;
    (config.is_register_blocked() && i64::from(config.work_n) % PANEL == 0 && shape.batch == 1)
        .then_some(PANEL)
}

impl TargetConfig for PoclCpu {
    fn workgroup_size(&self, kind: KernelKind) -> i64 {
        workgroup_size(kind)
    }

    fn max_loop_workgroups(&self) -> Option<i64> {
        Some(MAX_LOOP_WORKGROUPS)
    }

    fn gemm(&self, m: i64, n: i64, _k: i64, vector_width: u32) -> Option<GemmConfig> {
        gemm_for_vector_floats(m, n, vector_width)
    }

    fn gemm_computed_a(&self, m: i64, n: i64, _k: i64, vector_width: u32) -> Option<GemmConfig> {
        gemm_computed_a_for_vector_floats(m, n, vector_width)
    }

    fn gemm_alternatives(&self, m: i64, n: i64, _k: i64) -> Vec<GemmConfig> {
        gemm_alternatives(m, n)
    }

    fn weight_panel(&self, config: &GemmConfig, shape: &GemmShape) -> Option<i64> {
        weight_panel(config, shape)
    }

    fn row_workgroup(&self, _columns: i64, _rows: i64) -> i64 {
        ROW_WORKGROUP
    }

    /// 4 query rows per group, in the single-item form (below): each K
    /// and V row loaded serves four rows' multiply-adds, and the rows'
    /// accumulators (4 x 64 floats for a head of 64) stay near the
    /// registers. `block_k` is the staged form's (unused here).
    fn attention(
        &self,
        head_dim: i64,
        _q_len: i64,
        _heads: i64,
        _tensor_cores: bool,
    ) -> AttentionConfig {
        AttentionConfig {
            block_q: 4,
            block_k: super::attention_block_k(head_dim, 32 * 1024, 64),
            key_lanes: 1,
        }
    }

    /// Yes: the staged form's 16 work-items per group, one query row
    /// each, hold the key loop, so PoCL cannot vectorize across them
    /// (its work-item loop is vectorized only where it holds no inner
    /// loop) and they ran one scalar `fma` chain per score: ViT-B/16's
    /// attention (12 heads, 197 x 197 x 64) took 53-64 ms a layer at
    /// about 2 GFLOP/s.
    fn attention_single_item(&self) -> bool {
        true
    }

    /// Yes: a library `erf` or `tanh` is a call per element, which keeps
    /// the GEMM epilogue's loop over a block's columns scalar (a GELU
    /// after ViT-B/16's 197 x 3072 x 768 GEMM took as long as the GEMM);
    /// the rational functions are arithmetic and selects, which LLVM
    /// vectorizes with the loop.
    fn rational_erf_tanh(&self) -> bool {
        true
    }

    /// Yes: the branching scalar forms keep an epilogue's loop over a
    /// window's channel vector scalar (a ReLU6 after MobileNetV2's
    /// 112x112x32 depthwise convolution, `float8` channels: 0.42 ms as
    /// branches, 0.13-0.25 ms as selects, pyopencl on this machine's
    /// PoCL); selects vectorize with the loop.
    fn select_min_max(&self) -> bool {
        true
    }

    /// Yes: PoCL's `exp` is the costliest part of a SiLU or sigmoid
    /// epilogue (EfficientNet-B0's 112x112 expansion, M = 12544, N = 96,
    /// K = 16, pyopencl on this machine's PoCL: 1.07 ms without the exp,
    /// 1.89 ms with the library's, 1.64 ms with the polynomial; 1.52 and
    /// 1.34 ms with the epilogue's loop vectorized at the block's width).
    /// The polynomial's `rint` is written as the add and subtract of
    /// 1.5 * 2^23: PoCL's `rint` is a call per element (the kernel took
    /// 5x longer with it).
    fn polynomial_exp(&self) -> bool {
        true
    }

    fn row_reduction_template(&self, contiguous: bool) -> bool {
        row_reduction_template(contiguous)
    }

    fn fold_pools_into_convs(&self) -> PoolFolding {
        FOLD_POOLS_INTO_CONVS
    }

    /// No: on the register-blocked GEMM the producer's arithmetic runs in
    /// the k loop, for every row and k of every block of C, where it
    /// holds the multiply-adds back (DenseNet-121's BatchNorm + ReLU 1x1
    /// convolutions ran at 52-60 GFLOP/s, their plain form at 90-177); an
    /// elementwise kernel computes each element once. DenseNet-121 ran in
    /// 53 ms instead of 79 on this project's AVX2 machine
    /// (docs/benchmarks.md, session 14).
    fn fold_producers_into_convs(&self) -> bool {
        false
    }

    /// From 8 input channels (every convolution but an image's first):
    /// its pad folded, the register-blocked GEMM checks the padding per
    /// tap for each block of rows, and a block with a row near the image's
    /// border runs that tap's channel loop with a bounds check and select
    /// per load, which LLVM turns into branches; on 7x7 and 14x14 images
    /// that is most blocks. A padded copy costs a fill and a copy kernel
    /// and leaves every load unchecked. ResNet-50's 3x3 convolutions ran
    /// at 124-158 GFLOP/s so, against 86-116 folded; side by side with
    /// onnxruntime (docs/benchmarks.md, session 14) ResNet-50 went from
    /// 66.5 to 58.6 ms, Inception v1 32.2 to 25.2, SqueezeNet 7.3 to 6.2,
    /// DenseNet-121 51.1 to 47.8. An image's first convolution (3
    /// channels, its input transpose folded too) keeps folding: ShuffleNet,
    /// whose only padded convolution it is, ran 2-7% slower unfolded.
    fn conv_pad_channels(&self) -> Option<i64> {
        Some(8)
    }

    /// Rows, each walked in order (PoCL vectorizes that loop, not the
    /// grid-stride loop across work-items): ShuffleNet's BatchNorm + ReLU
    /// over 56x56x112 took 0.74 ms mapped by element and 0.10-0.11 ms by
    /// row (pyopencl, this machine's 2 cores).
    fn serial_rows(&self) -> bool {
        true
    }

    /// A squeeze-and-excitation gate's sigmoid fused into the scaling of
    /// its image ran once per pixel (EfficientNet-B0's gating multiplies,
    /// 1.9 ms of a 24 ms call on 2 cores): its own kernel computes it once
    /// per channel.
    fn recompute_broadcast_math(&self) -> bool {
        false
    }

    fn window(&self, geometry: &WindowGeometry) -> Option<WindowConfig> {
        super::blocked_window(geometry, WINDOW_WORKGROUP, 0)
    }

    /// Yes: unrolled, the epilogue ran lane by lane in scalar registers
    /// (a ReLU6 or SiLU per channel, then a scalar store); as a loop over
    /// the lanes LLVM vectorizes it at the register's width. MobileNetV2's
    /// depthwise kernels on an AVX-512 Xeon's 2 PoCL cores, each kernel's
    /// fastest of 30 calls in turns: 112x112x32 0.174 -> 0.117 ms,
    /// 56x56x144 0.180 -> 0.133, 14x14x384 0.058 -> 0.038.
    fn window_lanes_vectorized(&self) -> bool {
        true
    }

    /// From 5x5: PoCL turned each load's bounds check and select into
    /// branches and integer work vectorized across the work-group's
    /// work-items. EfficientNet-B0's 5x5 depthwise kernels (with their
    /// SiLU), each kernel's fastest of 20 calls in turns on a 2-core
    /// AVX-512 Xeon: 28x28x240 0.258 -> 0.161 ms, 14x14x672 0.184 ->
    /// 0.129, 14x14x480 0.143 -> 0.096; its 3x3 ones moved by -3% to +3%
    /// and MobileNetV2's 3x3 ones lost 8-20% (twice the code, and a check
    /// pass for few loads).
    fn window_unswitched_taps(&self) -> Option<i64> {
        Some(25)
    }
}

/// [`PoclCpu`]'s window configuration on a CPU of `vector_width` floats
/// per SIMD register (the target's `vector_width`: 8 for AVX2, 16 for
/// AVX-512): one register of channels per work-item where the channels
/// divide into registers (else the `float4` form). PoCL does not widen a
/// work-item's `float4` across the work-items of a group, so the `float4`
/// form ran the window's multiply-adds at a quarter (AVX-512) or half
/// (AVX2) of the registers' width.
pub(super) fn window_for_vector_floats(
    geometry: &WindowGeometry,
    vector_width: u32,
) -> Option<WindowConfig> {
    let mut config = super::blocked_window(geometry, WINDOW_WORKGROUP, 0)?;
    if config.vector == 4
        && let Some(vector) = [16, 8]
            .into_iter()
            .filter(|v| *v <= vector_width)
            .find(|v| geometry.channels % i64::from(*v) == 0)
    {
        config.vector = vector;
        config.validate(geometry).ok()?;
    }
    Some(config)
}

/// Depthwise convolutions and poolings on the window template, in groups
/// of 64, blocks of 4 output columns wherever the row has them (PoCL
/// vectorizes across the work-items of a group; the blocks reuse input
/// columns in registers). Measured on this machine's 2 PoCL cores with
/// `tcc-benchmark --in-turns-with` (fastest of 10 calls, one-op models of
/// scripts/window-kernels-device.py, in git history at aaeb302): MobileNet-v2's 112x112x32 depthwise
/// took 17.5 ms as a loop nest and 0.41 ms as windows of 4 columns (2:
/// 0.52 ms, 1: 1.39 ms); its 7x7x960 one 1.45 and 0.086 ms; ResNet-50's
/// stem max pool 8.3 and 1.1-1.5 ms; its 7x7x2048 global average pool
/// 0.33 and 0.077 ms.
const WINDOW_WORKGROUP: u32 = 64;
