//! Per-target kernel configuration, kept apart from the lowering mechanism.
//!
//! Each target implements [`TargetConfig`] in its own file (`generic.rs`,
//! `nvidia.rs`, `pocl_cpu.rs`). The tile phase (`tcc-configure-kernels`)
//! asks it for each kernel and records the answer as the kernel's typed
//! strategy (`tcc.strategy`, a `#tcc.loops`/`#tcc.gemm`/... attribute);
//! the gpu phase and the back ends read only that attribute. Changing how
//! a target is tuned means changing its file, never the passes.

pub mod generic;
pub mod nvidia;
pub mod pocl_cpu;
pub mod targets;
pub mod tuning;

use std::fmt;
use std::str::FromStr;

/// Which poolings `tcc-fold-conv-inputs` unrolls into the 1x1
/// convolutions they feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolFolding {
    /// None: every pooling is a kernel.
    None,
    /// Downsampling ones (a stride above 1 on some axis).
    Strided,
    /// All.
    All,
}

impl PoolFolding {
    pub fn name(self) -> &'static str {
        match self {
            PoolFolding::None => "none",
            PoolFolding::Strided => "strided",
            PoolFolding::All => "all",
        }
    }

    /// Whether a pooling with these strides is folded.
    pub fn takes(self, strides: [i64; 2]) -> bool {
        match self {
            PoolFolding::None => false,
            PoolFolding::Strided => strides.iter().any(|s| *s > 1),
            PoolFolding::All => true,
        }
    }
}

impl FromStr for PoolFolding {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "none" => Ok(PoolFolding::None),
            "strided" => Ok(PoolFolding::Strided),
            "all" => Ok(PoolFolding::All),
            other => Err(format!(
                "unknown pool folding '{other}' (none, strided, all)"
            )),
        }
    }
}

/// A device family tcc tunes for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    /// Any OpenCL 1.2 device.
    #[default]
    Generic,
    /// NVIDIA GPUs through NVIDIA's OpenCL.
    Nvidia,
    /// CPUs through PoCL.
    PoclCpu,
}

/// What kind of computation a kernel does, as far as tuning is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// One work-item per output element, no reduction.
    Elementwise,
    /// One work-item per output element, each reducing over some dims.
    Reduction,
    /// Matrix multiplication (plain or batched), possibly with an epilogue.
    Matmul,
    /// Softmax over the last axis: one work-group per row.
    Softmax,
    /// Layer norm over the last axis: one work-group per row.
    LayerNorm,
    /// Convolution or pooling (a windowed reduction).
    Convolution,
    /// Attention (`tcc.flash_attention`): the flash-attention template.
    Attention,
}

impl KernelKind {
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Elementwise => "elementwise",
            KernelKind::Reduction => "reduction",
            KernelKind::Matmul => "matmul",
            KernelKind::Softmax => "softmax",
            KernelKind::LayerNorm => "layer_norm",
            KernelKind::Convolution => "convolution",
            KernelKind::Attention => "attention",
        }
    }

    /// The kind [`KernelKind::name`] names, if any.
    pub fn from_name(name: &str) -> Option<KernelKind> {
        [
            KernelKind::Elementwise,
            KernelKind::Reduction,
            KernelKind::Matmul,
            KernelKind::Softmax,
            KernelKind::LayerNorm,
            KernelKind::Convolution,
            KernelKind::Attention,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }
}

/// A loop-nest kernel's launch configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    /// Work-items per work-group (the mapping uses a 1-D NDRange).
    pub workgroup_size: i64,
    /// The most work-groups a loop-nest kernel launches (its grid-stride
    /// loops cover the rest), where the target gains from fewer, longer
    /// groups; `None`: one work-item per point.
    pub max_workgroups: Option<i64>,
}

pub use tcc_kernels::{GemmConfig, GemmShape};

/// The flash-attention template's blocking: query rows per work-group
/// (one per work-item) and keys per local-memory tile of K and V; or,
/// with `key_lanes` above 1, that many work-items per query row, each
/// over every `key_lanes`-th key (the key-parallel form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionConfig {
    pub block_q: i64,
    pub block_k: i64,
    pub key_lanes: i64,
}

/// The most query rows that take the key-parallel attention form
/// ([`attention_key_lanes`]).
pub const KEY_PARALLEL_MAX_ROWS: i64 = 4;

/// Work-items per query row of the key-parallel attention form for
/// `q_len` query rows (a decode step: one per sequence, at most
/// [`KEY_PARALLEL_MAX_ROWS`]) of `head_dim`: 64, 32 or 16, the most whose
/// partial accumulators fit 32 KiB of local memory; `None` for more rows
/// (the one-row-per-work-item bodies, whose tiles of K and V serve every
/// row of a work-group). At one row a work-group of 64 walks 256 cached
/// keys 4 each instead of one work-item walking all 256.
pub fn attention_key_lanes(head_dim: i64, q_len: i64) -> Option<i64> {
    if !(1..=KEY_PARALLEL_MAX_ROWS).contains(&q_len) {
        return None;
    }
    [64, 32, 16]
        .into_iter()
        .find(|lanes| key_lanes_fit(q_len, *lanes, head_dim))
}

/// Whether the key-parallel form's partial accumulators for `block_q`
/// rows of `lanes` work-items each fit 32 KiB of local memory.
pub fn key_lanes_fit(block_q: i64, lanes: i64, head_dim: i64) -> bool {
    4 * block_q * lanes * (head_dim + 4) <= 32 * 1024
}

/// Keys per tile such that the K and V tiles of `head_dim` floats take at
/// most `bytes` of local memory: the largest power of two up to `most`
/// (at least 1; the template splits tiles above its chunk of 16 keys
/// into whole chunks, which powers of two are).
pub fn attention_block_k(head_dim: i64, bytes: i64, most: i64) -> i64 {
    let fits = (bytes / (2 * 4 * head_dim.max(1))).clamp(1, most.max(1));
    1i64 << (63 - fits.leading_zeros())
}
pub use tcc_kernels::{WindowConfig, WindowGeometry};

/// One target's tuning tables: one implementation per target file
/// (`generic.rs`, `nvidia.rs`, `pocl_cpu.rs`). `tcc-configure-kernels`
/// asks it for each kernel's strategy; nothing after the tile phase asks
/// it anything.
pub trait TargetConfig: Sync {
    /// Preferred work-items per group of a loop-nest kernel of `kind`.
    fn workgroup_size(&self, kind: KernelKind) -> i64;

    /// The most work-groups a loop-nest kernel launches; `None`: one
    /// work-item per point.
    fn max_loop_workgroups(&self) -> Option<i64> {
        None
    }

    /// The table's tiled-GEMM configuration for an `m x n x k` product
    /// on a device of `vector_width` floats per SIMD register (the
    /// target's `vector_width`), or `None` to compile it as loops.
    fn gemm(&self, m: i64, n: i64, k: i64, vector_width: u32) -> Option<GemmConfig>;

    /// As [`TargetConfig::gemm`], for a convolution whose A operand is
    /// computed per load by a folded producer (a BatchNorm + ReLU before
    /// it, `tcc-fold-conv-inputs`): each A element then costs arithmetic,
    /// which a wider block of C amortizes over more columns.
    fn gemm_computed_a(&self, m: i64, n: i64, k: i64, vector_width: u32) -> Option<GemmConfig> {
        self.gemm(m, n, k, vector_width)
    }

    /// The panel width (in output channels) a convolution's constant
    /// filter is packed into for a GEMM of `config` over `shape`
    /// (`tcc-pack-weight-panels`), or `None` to read it as stored.
    fn weight_panel(&self, _config: &GemmConfig, _shape: &GemmShape) -> Option<i64> {
        None
    }

    /// Configurations `tcc tune` measures besides the table's.
    fn gemm_alternatives(&self, m: i64, n: i64, k: i64) -> Vec<GemmConfig> {
        gpu_gemm_alternatives(m, n, k)
    }

    /// Work-items per row of a row template (softmax, layer norm, a long
    /// row reduction) over `columns` elements, `rows` rows in the kernel.
    fn row_workgroup(&self, columns: i64, rows: i64) -> i64;

    /// The layer norm template's work-items per row and rows per
    /// work-group over `rows` rows of `columns` elements: by default one
    /// row a group, [`TargetConfig::row_workgroup`] work-items.
    fn layer_norm_rows(&self, columns: i64, rows: i64) -> (i64, i64) {
        (self.row_workgroup(columns, rows), 1)
    }

    /// The flash-attention template's blocking for a head dimension of
    /// `head_dim` over `q_len` query rows in each of `heads` (batch times
    /// query heads: the launch's second axis), with `tensor_cores` where
    /// the module's precision gives the PTX form its tensor-core body.
    fn attention(
        &self,
        head_dim: i64,
        q_len: i64,
        heads: i64,
        tensor_cores: bool,
    ) -> AttentionConfig;

    /// Whether the attention template takes its CPU form: one work-item
    /// per work-group computing the group's `block_q` query rows in
    /// explicit vectors (`AttentionSpec::single_item`).
    fn attention_single_item(&self) -> bool {
        false
    }

    /// Whether f32 `erf` and `tanh` are written as the prelude's rational
    /// functions (`tcc_erf`, `tcc_tanh`: arithmetic only, within 5e-7 of
    /// the exact value) instead of the OpenCL library's calls.
    fn rational_erf_tanh(&self) -> bool {
        false
    }

    /// Whether f32 `arith.maximumf`/`minimumf` are written as the
    /// prelude's branch-free `tcc_maximumf_select`/`tcc_minimumf_select`
    /// (the same IEEE maximum/minimum, as selects) instead of the
    /// branching `tcc_maximumf`/`tcc_minimumf`.
    fn select_min_max(&self) -> bool {
        false
    }

    /// Whether f32 `exp` is written as the prelude's `tcc_expf_poly`
    /// (range reduction and a polynomial: arithmetic and selects, within
    /// 1.01 ulp) instead of the prelude's `tcc_expf`.
    fn polynomial_exp(&self) -> bool {
        false
    }

    /// Whether the window template keeps its loop over the window's rows
    /// a loop (`WindowSpec::rolled_rows`) rather than unrolling it.
    fn window_rows_rolled(&self) -> bool {
        false
    }

    /// Whether the window template stores a column's channel vector as
    /// one aligned vector (`WindowSpec::vector_store`) where the output
    /// allows, rather than one channel at a time.
    fn window_vector_stores(&self) -> bool {
        false
    }

    /// Whether the window template's epilogue walks a column's channels in
    /// a loop vectorized at the channel vector's width
    /// (`WindowSpec::vectorized_lanes`) rather than unrolled lane by lane.
    fn window_lanes_vectorized(&self) -> bool {
        false
    }

    /// The fewest window taps (rows x columns) for which the window
    /// template checks a folded padding's bounds once per block of outputs
    /// and runs the window without them where the whole block reads
    /// inside the input (`WindowSpec::inside`), rather than checking every
    /// load; `None`: never.
    fn window_unswitched_taps(&self) -> Option<i64> {
        None
    }

    /// Whether a long row reduction runs on the row template, given
    /// whether its inputs are contiguous along the row.
    fn row_reduction_template(&self, _contiguous: bool) -> bool {
        true
    }

    /// Which poolings feeding only a 1x1 convolution are unrolled into it.
    fn fold_pools_into_convs(&self) -> PoolFolding;

    /// Whether a cheap elementwise producer of a 2-D convolution's input
    /// (a BatchNorm + ReLU before it) is recomputed in its loads rather
    /// than run as a kernel of its own.
    fn fold_producers_into_convs(&self) -> bool {
        true
    }

    /// The fewest input channels at which a 2-D convolution keeps its
    /// padding as a padded copy instead of bounds checks in its loads
    /// (`None`: every pad folds).
    fn conv_pad_channels(&self) -> Option<i64> {
        None
    }

    /// The fewest input channels at which a 2-D convolution of more than
    /// one tap, compiled at `precision`, reads its input as it is: one of
    /// fewer channels reads an explicit image-to-columns copy through a
    /// 1x1 convolution (`tcc-fold-conv-inputs{conv-unfold-channels}`;
    /// `None`: never).
    fn conv_unfold_channels(&self, _precision: targets::Precision) -> Option<i64> {
        None
    }

    /// Whether loop-nest kernels map rows rather than elements onto
    /// work-items, each walking its rows' innermost dimension in order
    /// (`tcc-map-loops-to-work-items{serial-rows}`): on CPUs, where that
    /// inner loop is what vectorizes; GPUs want neighbouring work-items
    /// on neighbouring elements.
    fn serial_rows(&self) -> bool {
        false
    }

    /// The most operations one fused elementwise body may hold.
    fn max_fused_ops(&self) -> i64 {
        MAX_FUSED_OPS
    }

    /// Whether elementwise fusion may recompute a producer's costly math
    /// (exp, tanh, divisions) for every element a consumer broadcasts it to
    /// (`tcc-fuse-elementwise{recompute-broadcast-math}`): on GPUs that
    /// math is cheap beside memory traffic and a launch more.
    fn recompute_broadcast_math(&self) -> bool {
        true
    }

    /// The window template's configuration for a depthwise convolution
    /// or pooling over `geometry`, or `None` to run it as a loop nest.
    fn window(&self, _geometry: &WindowGeometry) -> Option<WindowConfig> {
        None
    }
}

/// The window template's configuration in groups of `workgroup_size`:
/// `float4` channel vectors where the channels allow, and the widest
/// block of 4, 2 or 1 output columns that still launches `min_work_items`
/// work-items (on GPUs, batch-1 layers with small outputs trade the
/// blocks' input reuse for parallelism); windows wider than 16 columns
/// (global pools) block no columns, and none wider than 64 take the
/// template.
pub(crate) fn blocked_window(
    geometry: &WindowGeometry,
    workgroup_size: u32,
    min_work_items: i64,
) -> Option<WindowConfig> {
    let [_, window_w] = geometry.window;
    if window_w > 64 {
        return None;
    }
    let vector = if geometry.multiplier == 1 && geometry.channels % 4 == 0 {
        4
    } else {
        1
    };
    let config = |columns: u32| WindowConfig {
        workgroup_size,
        columns,
        vector,
    };
    let columns = if window_w > 16 {
        1
    } else {
        [4, 2]
            .into_iter()
            .filter(|c| i64::from(*c) <= geometry.out_w)
            .find(|c| config(*c).work_items(geometry) >= min_work_items)
            .unwrap_or(1)
    };
    let config = config(columns);
    config.validate(geometry).ok()?;
    Some(config)
}

/// Where the window template beats the loop nest on a GPU, as measured on
/// the H100 (docs/benchmarks.md, "the window template", session 9: 48
/// depthwise and pooling layers, template against loop nest in one run):
/// stride-1 windows of at most 16 columns with at least
/// [`GPU_WINDOW_MIN_OUTPUTS`] outputs (1.05-1.81x there). Stride-2 layers
/// (0.81-1.05x at batch 32), global pools (0.53-0.86x) and small batch-1
/// layers (0.53-1.04x) stay loop nests: one output per work-item already
/// reads each input column once per output column, and the template's
/// blocks cost parallelism.
pub(crate) fn gpu_window(
    geometry: &WindowGeometry,
    workgroup_size: u32,
    min_work_items: i64,
) -> Option<WindowConfig> {
    let outputs =
        geometry.batch * geometry.out_h * geometry.out_w * geometry.channels * geometry.multiplier;
    let stride_1 = geometry.column_steps.is_some_and(|[stride, _]| stride == 1);
    (stride_1 && geometry.window[1] <= 16 && outputs >= GPU_WINDOW_MIN_OUTPUTS)
        .then(|| blocked_window(geometry, workgroup_size, min_work_items))
        .flatten()
}

/// The fewest outputs of a window op that takes the template on a GPU.
pub const GPU_WINDOW_MIN_OUTPUTS: i64 = 1 << 20;

/// The most operations one fused elementwise body may hold on every
/// target today (see `Target::max_fused_ops`).
pub const MAX_FUSED_OPS: i64 = 128;

/// 32x32 tiles of 2x2 outputs per work-item (256 work-items, 4 KiB of
/// local memory): the generic target's GEMM tile, and a half-precision
/// stem's on nvidia (`tcc-configure-kernels`).
pub(crate) const TILES_32X32: GemmConfig = GemmConfig {
    tile_m: 32,
    tile_n: 32,
    tile_k: 16,
    work_m: 2,
    work_n: 2,
    split_k: 1,
    k_lanes: 1,
};

/// Narrow outputs (8 to 31 columns: the channels of small convolutions)
/// with many rows take tall, narrow tiles on the GPU targets.
pub(crate) fn tall_narrow_gemm(m: i64, n: i64) -> Option<GemmConfig> {
    ((8..32).contains(&n) && m >= 256).then_some(GemmConfig {
        tile_m: 64,
        tile_n: 16,
        tile_k: 16,
        work_m: 4,
        work_n: 1,
        split_k: 1,
        k_lanes: 1,
    })
}

/// A GPU's row work-group: its `preferred` power of two, no more than a
/// row of `columns` needs (and at least 64).
pub(crate) fn gpu_row_workgroup(preferred: i64, columns: i64) -> i64 {
    let needed = (columns.max(1) as u64).next_power_of_two() as i64;
    preferred.min(needed.max(64))
}

impl Target {
    /// The target's tuning tables.
    pub fn config(self) -> &'static dyn TargetConfig {
        match self {
            Target::Generic => &generic::Generic,
            Target::Nvidia => &nvidia::Nvidia,
            Target::PoclCpu => &pocl_cpu::PoclCpu,
        }
    }

    /// The floats per SIMD register of the family's own known target
    /// (`generic`, `nvidia`, `pocl-cpu`: `opencl-generic`, `nvidia-sm90`,
    /// `pocl-cpu-avx2`), for callers without a module's `#tcc.target`.
    pub fn default_vector_width(self) -> u32 {
        targets::known(self.name())
            .ok()
            .and_then(|desc| u32::try_from(desc.vector_width).ok())
            .unwrap_or(4)
    }

    /// The tiled-GEMM configuration for `batch` products of `m x n x k`
    /// on the family's own known target (see [`Target::gemm_config_for`]).
    pub fn gemm_config(self, batch: i64, m: i64, n: i64, k: i64) -> Option<GemmConfig> {
        self.gemm_config_for(self.default_vector_width(), batch, m, n, k)
    }

    /// The tiled-GEMM configuration for `batch` products of `m x n x k`
    /// on a device of `vector_width` floats per SIMD register, or `None`
    /// to compile it like any other kernel (one output per work-item).
    /// Batched products never split K: their batch already multiplies
    /// the work-groups.
    pub fn gemm_config_for(
        self,
        vector_width: u32,
        batch: i64,
        m: i64,
        n: i64,
        k: i64,
    ) -> Option<GemmConfig> {
        let mut config = self.config().gemm(m, n, k, vector_width)?;
        if batch > 1 {
            config.split_k = 1;
        }
        config.validate().ok()?;
        Some(config)
    }

    /// As [`Target::gemm_config`], for a convolution whose A is computed
    /// per load by a folded producer ([`TargetConfig::gemm_computed_a`]).
    pub fn gemm_config_computed_a(self, batch: i64, m: i64, n: i64, k: i64) -> Option<GemmConfig> {
        self.gemm_config_computed_a_for(self.default_vector_width(), batch, m, n, k)
    }

    /// As [`Target::gemm_config_for`], for a convolution whose A is
    /// computed per load by a folded producer.
    pub fn gemm_config_computed_a_for(
        self,
        vector_width: u32,
        batch: i64,
        m: i64,
        n: i64,
        k: i64,
    ) -> Option<GemmConfig> {
        let mut config = self.config().gemm_computed_a(m, n, k, vector_width)?;
        if batch > 1 {
            config.split_k = 1;
        }
        config.validate().ok()?;
        Some(config)
    }

    /// The panel width of a convolution filter (see
    /// [`TargetConfig::weight_panel`]).
    pub fn weight_panel(self, config: &GemmConfig, shape: &GemmShape) -> Option<i64> {
        self.config().weight_panel(config, shape)
    }

    /// The configurations `tcc tune` measures for a product: the table's
    /// choice first, then the target's alternatives, each valid and none
    /// twice. Empty where the table takes no tiled kernel.
    pub fn gemm_candidates(self, batch: i64, m: i64, n: i64, k: i64) -> Vec<GemmConfig> {
        self.gemm_candidates_for(self.default_vector_width(), batch, m, n, k)
    }

    /// As [`Target::gemm_candidates`], on a device of `vector_width`
    /// floats per SIMD register.
    pub fn gemm_candidates_for(
        self,
        vector_width: u32,
        batch: i64,
        m: i64,
        n: i64,
        k: i64,
    ) -> Vec<GemmConfig> {
        let Some(default) = self.gemm_config_for(vector_width, batch, m, n, k) else {
            return Vec::new();
        };
        let mut candidates = vec![default];
        for mut config in self.config().gemm_alternatives(m, n, k) {
            if batch > 1 {
                config.split_k = 1;
            }
            if config.validate().is_ok() && !candidates.contains(&config) {
                candidates.push(config);
            }
        }
        candidates
    }

    pub const ALL: [Target; 3] = [Target::Generic, Target::Nvidia, Target::PoclCpu];

    pub fn name(self) -> &'static str {
        match self {
            Target::Generic => "generic",
            Target::Nvidia => "nvidia",
            Target::PoclCpu => "pocl-cpu",
        }
    }

    /// The family of the module's target (its `#tcc.target`, written by
    /// `tcc-attach-target`), if it has one.
    pub fn of_module(module: melior::ir::operation::OperationRef) -> Option<Target> {
        targets::of_module(module).and_then(|desc| targets::family(&desc).ok())
    }

    /// Whether loop-nest kernels map rows onto work-items (see
    /// [`TargetConfig::serial_rows`]).
    pub fn serial_rows(self) -> bool {
        self.config().serial_rows()
    }

    /// Which max or sum poolings feeding only a 1x1 convolution are
    /// unrolled into the convolution's loads (`tcc-fold-conv-inputs
    /// {pools=...}`) instead of running as kernels of their own.
    pub fn fold_pools_into_convs(self) -> PoolFolding {
        self.config().fold_pools_into_convs()
    }

    /// See [`TargetConfig::fold_producers_into_convs`].
    pub fn fold_producers_into_convs(self) -> bool {
        self.config().fold_producers_into_convs()
    }

    /// See [`TargetConfig::conv_pad_channels`].
    pub fn conv_pad_channels(self) -> Option<i64> {
        self.config().conv_pad_channels()
    }

    /// See [`TargetConfig::conv_unfold_channels`].
    pub fn conv_unfold_channels(self, precision: targets::Precision) -> Option<i64> {
        self.config().conv_unfold_channels(precision)
    }

    /// The most operations one fused elementwise body may hold
    /// (`tcc-fuse-elementwise{max-ops=N}`): a driver's first build of a
    /// kernel grows faster than linearly with its size, so a long chain
    /// is cut into kernels of at most this many operations.
    pub fn max_fused_ops(self) -> i64 {
        self.config().max_fused_ops()
    }

    /// See [`TargetConfig::recompute_broadcast_math`].
    pub fn recompute_broadcast_math(self) -> bool {
        self.config().recompute_broadcast_math()
    }

    /// Work-items per row of a row template (softmax, layer norm, a long
    /// row reduction) over `columns` elements, `rows` rows: on GPUs the
    /// target's preferred power of two, no more than the row needs; on
    /// CPUs one, which walks the row in SIMD lanes (`tcc_kernels`'s row
    /// passes).
    pub fn row_workgroup(self, columns: i64, rows: i64) -> i64 {
        self.config().row_workgroup(columns, rows)
    }

    /// See [`TargetConfig::layer_norm_rows`].
    pub fn layer_norm_rows(self, columns: i64, rows: i64) -> (i64, i64) {
        self.config().layer_norm_rows(columns, rows)
    }

    /// See [`TargetConfig::attention`].
    pub fn attention(
        self,
        head_dim: i64,
        q_len: i64,
        heads: i64,
        tensor_cores: bool,
    ) -> AttentionConfig {
        self.config()
            .attention(head_dim, q_len, heads, tensor_cores)
    }

    /// See [`TargetConfig::attention_single_item`].
    pub fn attention_single_item(self) -> bool {
        self.config().attention_single_item()
    }

    /// See [`TargetConfig::rational_erf_tanh`].
    pub fn rational_erf_tanh(self) -> bool {
        self.config().rational_erf_tanh()
    }

    /// See [`TargetConfig::select_min_max`].
    pub fn select_min_max(self) -> bool {
        self.config().select_min_max()
    }

    /// See [`TargetConfig::polynomial_exp`].
    pub fn polynomial_exp(self) -> bool {
        self.config().polynomial_exp()
    }

    /// See [`TargetConfig::window_rows_rolled`].
    pub fn window_rows_rolled(self) -> bool {
        self.config().window_rows_rolled()
    }

    /// See [`TargetConfig::window_vector_stores`].
    pub fn window_vector_stores(self) -> bool {
        self.config().window_vector_stores()
    }

    /// See [`TargetConfig::window_lanes_vectorized`].
    pub fn window_lanes_vectorized(self) -> bool {
        self.config().window_lanes_vectorized()
    }

    /// See [`TargetConfig::window_unswitched_taps`].
    pub fn window_unswitched_taps(self) -> Option<i64> {
        self.config().window_unswitched_taps()
    }

    /// Whether a long row reduction runs on the row template (one
    /// work-group per output) rather than as one work-item per output
    /// with a loop over the row, given whether its inputs are contiguous
    /// along the row.
    pub fn row_reduction_template(self, contiguous: bool) -> bool {
        self.config().row_reduction_template(contiguous)
    }

    /// The window template's configuration for a depthwise convolution
    /// or pooling, or `None` where the target runs it as a loop nest.
    pub fn window_config(self, geometry: &WindowGeometry) -> Option<WindowConfig> {
        self.config().window(geometry)
    }

    /// As [`Target::window_config`], on a device of `vector_width` floats
    /// per SIMD register: a CPU runs a register of channels per work-item.
    pub fn window_config_for(
        self,
        geometry: &WindowGeometry,
        vector_width: u32,
    ) -> Option<WindowConfig> {
        match self {
            Target::PoclCpu => pocl_cpu::window_for_vector_floats(geometry, vector_width),
            _ => self.window_config(geometry),
        }
    }

    /// The window template's configuration when it is forced
    /// (`tcc-configure-kernels{windows=on|N}`) where the target's own
    /// choice is the loop nest: its groups and blocking, without its
    /// choice of which layers take the template.
    pub fn forced_window_config(self, geometry: &WindowGeometry) -> Option<WindowConfig> {
        match self {
            Target::Nvidia => nvidia::forced_window(geometry),
            Target::Generic => generic::forced_window(geometry),
            Target::PoclCpu => self.window_config(geometry),
        }
    }

    /// The launch of a loop-nest kernel of `kind` over `work_items` points.
    pub fn loop_config(self, kind: KernelKind, work_items: i64) -> LoopConfig {
        let config = self.config();
        LoopConfig {
            workgroup_size: clamp_workgroup(config.workgroup_size(kind), work_items),
            max_workgroups: config.max_loop_workgroups(),
        }
    }
}

/// Tiled-GEMM alternatives for GPUs: square tiles of 16 to 128 with the
/// outputs per work-item the tables use for them, and split-K in 2 to 16
/// slices of 32x32 tiles where K is long.
fn gpu_gemm_alternatives(m: i64, n: i64, k: i64) -> Vec<GemmConfig> {
    let tile = |size: u32, work: u32, split_k: u32| GemmConfig {
        tile_m: size,
        tile_n: size,
        tile_k: 16,
        work_m: work,
        work_n: work,
        split_k,
        k_lanes: 1,
    };
    let mut alternatives = vec![tile(16, 2, 1), tile(32, 2, 1), tile(64, 4, 1)];
    if m >= 1024 && n >= 1024 {
        alternatives.push(tile(128, 8, 1));
    }
    for slices in [2, 4, 8, 16] {
        if k / slices as i64 >= 128 {
            alternatives.push(tile(32, 2, slices));
        }
    }
    alternatives
}

/// Never launch more work-items per group than the iteration space has
/// (rounded up to a multiple of 32), and never fewer than 64 where it has
/// that many points.
pub fn clamp_workgroup(preferred: i64, work_items: i64) -> i64 {
    let work_items = work_items.max(1);
    if work_items <= 64 {
        return work_items;
    }
    let rounded = (work_items + 31) / 32 * 32;
    preferred.min(rounded).max(64)
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Target::ALL
            .into_iter()
            .find(|t| t.name() == text)
            .ok_or_else(|| {
                let names: Vec<_> = Target::ALL.iter().map(|t| t.name()).collect();
                format!("unknown target '{text}' (targets: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split-K factor `target` picks for a `b x m x n x k` product.
    fn split_k(target: Target, b: i64, m: i64, n: i64, k: i64) -> u32 {
        target.gemm_config(b, m, n, k).unwrap().split_k
    }

    #[test]
    fn workgroups_fit_the_iteration_space() {
        assert_eq!(clamp_workgroup(256, 10), 10);
        assert_eq!(clamp_workgroup(256, 64), 64);
        assert_eq!(clamp_workgroup(256, 65), 96);
        assert_eq!(clamp_workgroup(256, 1 << 20), 256);
        assert_eq!(clamp_workgroup(32, 1000), 64);
    }

    #[test]
    fn gemm_tiles_are_valid_and_gpu_groups_have_at_least_64_work_items() {
        for target in [Target::Generic, Target::Nvidia] {
            for (m, n, k) in [
                (64, 64, 64),
                (512, 512, 512),
                (4096, 4096, 4096),
                (128, 3072, 768),
            ] {
                if let Some(config) = target.gemm_config(1, m, n, k) {
                    assert!(config.validate().is_ok(), "{target}: {config:?}");
                    assert!(config.workgroup_size() >= 64, "{target}: {config:?}");
                }
            }
            // Tiny products are not worth a tiled kernel.
            assert!(target.gemm_config(1, 4, 10, 32).is_none(), "{target}");
        }
    }

    #[test]
    fn candidates_start_with_the_table_and_are_valid_and_distinct() {
        for target in Target::ALL {
            for (batch, m, n, k) in [(1, 49, 512, 4608), (1, 3136, 64, 576), (8, 128, 128, 64)] {
                let candidates = target.gemm_candidates(batch, m, n, k);
                assert_eq!(
                    candidates.first().copied(),
                    target.gemm_config(batch, m, n, k),
                    "{target}"
                );
                assert!(candidates.len() > 1, "{target}: {candidates:?}");
                for (index, config) in candidates.iter().enumerate() {
                    assert!(config.validate().is_ok(), "{target}: {config:?}");
                    assert!(
                        !candidates[..index].contains(config),
                        "{target}: {config:?}"
                    );
                    if batch > 1 {
                        assert_eq!(config.split_k, 1, "{target}: {config:?}");
                    }
                }
            }
            assert!(target.gemm_candidates(1, 4, 10, 32).len() <= 1 || target == Target::PoclCpu);
        }
        // CPU blocks stay register-blocked and within the 32 vector registers.
        for config in Target::PoclCpu.gemm_candidates(1, 49, 512, 4608) {
            assert!(config.is_register_blocked(), "{config:?}");
            assert!(config.work_m * config.work_n / 16 <= 24, "{config:?}");
        }
    }

    #[test]
    fn cpu_gemms_are_register_blocked_at_every_size() {
        for (m, n, k) in [
            (1, 1000, 2048),
            (4, 10, 32),
            (49, 512, 4608),
            (3136, 64, 64),
            (4096, 4096, 4096),
        ] {
            let config = Target::PoclCpu.gemm_config(1, m, n, k).unwrap();
            assert!(config.validate().is_ok(), "{config:?}");
            assert!(config.is_register_blocked(), "{config:?}");
            assert!(config.work_m as i64 <= m.max(1), "{config:?}");
            assert_eq!(config.local_bytes(), 0);
        }
    }

    #[test]
    fn cpu_blocks_fit_the_simd_registers() {
        let block = |m, n, floats| {
            let c = pocl_cpu::gemm_for_vector_floats(m, n, floats).unwrap();
            (c.work_m, c.work_n)
        };
        // AVX-512: wide outputs get four 16-float vectors in each of six
        // rows, 32-wide ones two.
        assert_eq!(block(3136, 64, 16), (6, 64));
        assert_eq!(block(3136, 48, 16), (6, 32));
        // ... unless 64-wide blocks pad N further than 32-wide ones.
        assert_eq!(block(12544, 96, 16), (6, 32));
        assert_eq!(block(196, 672, 16), (6, 32));
        assert_eq!(block(3136, 240, 16), (6, 64));
        assert_eq!(block(49, 1280, 16), (6, 64));
        // AVX2 (16 registers of 8 floats): twelve accumulators at most.
        assert_eq!(block(3136, 64, 8), (6, 16));
        assert_eq!(block(3136, 48, 8), (6, 16));
        assert_eq!(block(3136, 12, 8), (6, 8));
        // ... in three vectors a row where that pads N less: 24, 72 and
        // 120 exactly, 20 to 24 and 68 to 72; where both pad N alike
        // (48, 96, 144), 6 x 16.
        assert_eq!(block(12544, 24, 8), (4, 24));
        assert_eq!(block(3136, 20, 8), (4, 24));
        assert_eq!(block(196, 68, 8), (4, 24));
        assert_eq!(block(784, 120, 8), (4, 24));
        assert_eq!(block(3136, 96, 8), (6, 16));
        assert_eq!(block(3136, 144, 8), (6, 16));
        assert_eq!(block(3136, 28, 8), (6, 16));
        assert_eq!(block(1, 24, 8), (1, 24));
        // AVX-512: 16 to 31 wide in twelve rows of one vector, or eight
        // rows of three 8-float vectors where that pads N less.
        assert_eq!(block(12544, 24, 16), (8, 24));
        assert_eq!(block(3136, 20, 16), (8, 24));
        assert_eq!(block(12544, 16, 16), (12, 16));
        assert_eq!(block(3136, 28, 16), (12, 16));
        assert_eq!(block(4, 16, 16), (4, 16));
        // Never more rows than M has.
        assert_eq!(block(1, 1000, 8), (1, 16));
        assert_eq!(block(1, 1000, 16), (1, 64));
    }

    #[test]
    fn only_gpus_recompute_producers_and_pools_in_convolution_loads() {
        assert!(!Target::PoclCpu.fold_producers_into_convs());
        assert!(Target::Nvidia.fold_producers_into_convs());
        assert!(Target::Generic.fold_producers_into_convs());
    }

    #[test]
    fn cpu_register_blocks_read_filters_in_panels_of_16_channels() {
        let shape = |n| GemmShape {
            batch: 1,
            m: 784,
            n,
            k: 1152,
        };
        let panel = |columns, n| {
            pocl_cpu::weight_panel(&GemmConfig::register_blocked(6, columns), &shape(n))
        };
        assert_eq!(panel(16, 128), Some(16));
        assert_eq!(panel(64, 256), Some(16));
        // N of no whole panels too (the last one padded with zeros).
        assert_eq!(panel(16, 24), Some(16));
        // Blocks of 8 or 24 columns read B as stored.
        assert_eq!(panel(8, 128), None);
        assert_eq!(
            pocl_cpu::weight_panel(&GemmConfig::register_blocked(4, 24), &shape(24)),
            None
        );
        // Batched products (a matmul's B per batch) too.
        assert_eq!(
            pocl_cpu::weight_panel(
                &GemmConfig::register_blocked(6, 16),
                &GemmShape {
                    batch: 2,
                    ..shape(128)
                }
            ),
            None
        );
        // Tiled GEMMs (the GPU targets) never.
        let tiled = Target::Nvidia.gemm_config(1, 784, 128, 1152).unwrap();
        assert_eq!(pocl_cpu::weight_panel(&tiled, &shape(128)), None);
        for target in [Target::Generic, Target::Nvidia] {
            assert_eq!(
                target.weight_panel(&GemmConfig::register_blocked(6, 16), &shape(128)),
                None,
                "{target}"
            );
        }
    }

    #[test]
    fn cpu_convolutions_with_a_computed_a_take_wider_blocks_on_avx2() {
        let block = |m, n, floats| {
            let c = pocl_cpu::gemm_computed_a_for_vector_floats(m, n, floats).unwrap();
            (c.work_m, c.work_n)
        };
        // AVX2: 64 columns share each computed A element, whatever spills.
        assert_eq!(block(3136, 128, 8), (4, 64));
        assert_eq!(block(3136, 64, 8), (4, 64));
        assert_eq!(block(2, 64, 8), (2, 64));
        // Narrower outputs, and AVX-512, keep the plain table.
        assert_eq!(block(3136, 32, 8), (6, 16));
        assert_eq!(block(3136, 48, 16), (6, 32));
        assert_eq!(block(3136, 128, 16), (6, 64));
        // Only pocl-cpu has a table of its own for it.
        for target in [Target::Generic, Target::Nvidia] {
            assert_eq!(
                target.gemm_config_computed_a(1, 3136, 128, 256),
                target.gemm_config(1, 3136, 128, 256),
                "{target}"
            );
        }
    }

    #[test]
    fn nvidia_runs_small_m_products_as_split_k_gemms() {
        // VGG-19's first fully connected layer at batch 1 (M = 1, K =
        // 25088, N = 4096): 16 tiles of 4x256, in 32 slices of 784 (512
        // work-groups; 16 slices would leave 256, under two per SM).
        let fc6 = Target::Nvidia.gemm_config(1, 1, 4096, 25088).unwrap();
        assert_eq!(
            (fc6.tile_m, fc6.tile_n, fc6.work_m, fc6.work_n),
            (4, 256, 1, 4)
        );
        assert_eq!((fc6.split_k, fc6.split_k_slice(25088)), (32, 784));
        assert_eq!(fc6.workgroup_size(), 256);
        // Its classifier (N = 1000, K = 4096): 4 tiles, in at most 32
        // slices (of 128).
        let fc8 = Target::Nvidia.gemm_config(1, 1, 1000, 4096).unwrap();
        assert_eq!((fc8.split_k, fc8.split_k_slice(4096)), (32, 128));
        // A decode step's projection (M = batch <= 8, N = 2304, K = 768):
        // 18 tiles of 8x128 in 16 slices of 48.
        let step = Target::Nvidia.gemm_config(1, 8, 2304, 768).unwrap();
        assert_eq!(
            (
                step.tile_m,
                step.tile_n,
                step.split_k,
                step.split_k_slice(768)
            ),
            (8, 128, 16, 48)
        );
        // 17 to 31 rows: 32x32 tiles, still one row per work-item.
        let rows = Target::Nvidia.gemm_config(1, 20, 512, 512).unwrap();
        assert_eq!(
            (rows.tile_m, rows.tile_n, rows.workgroup_size()),
            (32, 32, 256)
        );
        // A batched product does not split K.
        assert_eq!(split_k(Target::Nvidia, 8, 1, 4096, 4096), 1);
        // Few rows and few columns: no tiled kernel.
        assert!(Target::Nvidia.gemm_config(1, 1, 16, 4096).is_none());
    }

    #[test]
    fn nvidia_takes_the_few_row_form_for_at_most_8_rows_of_long_k() {
        // GPT-2 small's decode-step projections at batch 1 and 8: 8
        // columns per work-item, the widest block that still gives every
        // SM a work-group (N = 2304: 2 across, 144 work-groups).
        for m in [1, 8] {
            let qkv = nvidia::few_rows(1, m, 2304, 768).unwrap();
            assert_eq!(qkv, GemmConfig::few_rows(m as u32, 8, 2, 128));
            assert!(qkv.is_few_rows() && qkv.validate().is_ok());
            assert_eq!(qkv.workgroup_size(), 256);
            assert_eq!(qkv.threads(), (2, 128));
        }
        // Its language-model head (N = 50257): 8 across, 786 groups.
        let head = nvidia::few_rows(1, 1, 50257, 768).unwrap();
        assert_eq!((head.tile_n, head.k_lanes), (64, 32));
        // Its FFN's down projection (N = 768): no block gives every SM a
        // work-group, so the narrowest, 8 columns by 256 lanes (96).
        let down = nvidia::few_rows(1, 1, 768, 3072).unwrap();
        assert_eq!(
            (down.tile_n, down.k_lanes, down.threads()),
            (8, 256, (1, 256))
        );
        // A batch of products counts its groups too.
        assert_eq!(nvidia::few_rows(4, 1, 2304, 768).unwrap().tile_n, 64);
        // More than 8 rows, a short K or a narrow N keep the table's.
        assert!(nvidia::few_rows(1, 9, 2304, 768).is_none());
        assert!(nvidia::few_rows(1, 1, 2304, 128).is_none());
        assert!(nvidia::few_rows(1, 1, 8, 4096).is_none());
        // The form's invariants are checked.
        let mut bad = GemmConfig::few_rows(4, 8, 2, 128);
        bad.split_k = 2;
        assert!(bad.validate().is_err());
        bad = GemmConfig::few_rows(4, 8, 2, 128);
        bad.work_m = 1;
        assert!(bad.validate().is_err());
    }

    #[test]
    fn nvidia_splits_long_k_of_small_outputs_only() {
        // ResNet-50's 7x7-stage 3x3 convolution at batch 1: 32 tiles of
        // 32x32, 16 slices of 288 (512 work-groups for 132 SMs).
        let late = Target::Nvidia.gemm_config(1, 49, 512, 4608).unwrap();
        assert_eq!((late.tile_m, late.split_k), (32, 16));
        assert_eq!(late.split_k_slice(4608), 288);
        // The 14x14 stage's (M = 196, N = 256, K = 2304): 56 tiles, 8 slices.
        assert_eq!(split_k(Target::Nvidia, 1, 196, 256, 2304), 8);
        // A 1x1 expansion (M = 49, N = 2048, K = 512): 16x64 tiles in 4
        // slices of 128 (nvidia.rs, `mid_k_four_slices`).
        assert_eq!(split_k(Target::Nvidia, 1, 49, 2048, 512), 4);
        // The 7x7 stage's 3x3 convolution at batch 32 (M = 1568, N = 512):
        // 200 tiles of 64x64 fill the SMs once; K = 4608 splits in 2.
        let batch32 = Target::Nvidia.gemm_config(1, 1568, 512, 4608).unwrap();
        assert_eq!((batch32.tile_m, batch32.split_k), (64, 2));
        // ... but not K = 512 (the 1x1 expansion) nor 392 tiles (14x14 stage).
        assert_eq!(split_k(Target::Nvidia, 1, 1568, 512, 512), 1);
        assert_eq!(split_k(Target::Nvidia, 1, 6272, 256, 2304), 1);
        // 56x56 with 64 channels (M = 3136, N = 64, K = 576): 16x64 tiles
        // in 4 slices of 144 (`mid_k_four_slices`); K = 64 (its 1x1
        // neighbour) stays whole.
        assert_eq!(split_k(Target::Nvidia, 1, 3136, 64, 576), 4);
        assert_eq!(split_k(Target::Nvidia, 1, 3136, 64, 64), 1);
        // Short K, enough tiles, a batch, or another target: no split.
        assert_eq!(split_k(Target::Nvidia, 1, 49, 512, 256), 1);
        assert_eq!(split_k(Target::Nvidia, 1, 6272, 256, 4608), 1);
        assert_eq!(split_k(Target::Nvidia, 8, 49, 512, 4608), 1);
        assert_eq!(split_k(Target::Generic, 1, 49, 512, 4608), 1);
    }

    fn geometry(batch: i64, size: i64, channels: i64, window: i64) -> WindowGeometry {
        WindowGeometry {
            batch,
            out_h: size,
            out_w: size,
            channels,
            multiplier: 1,
            window: [window, window],
            column_steps: Some([1, 1]),
        }
    }

    #[test]
    fn gpus_take_the_window_template_where_it_measured_faster() {
        // MobileNet-v2's first depthwise layer at batch 32: 4 columns.
        let wide = Target::Nvidia
            .window_config(&geometry(32, 112, 32, 3))
            .unwrap();
        assert_eq!(
            (wide.columns, wide.vector, wide.workgroup_size),
            (4, 4, 256)
        );
        // Its 7x7 stage at batch 32 (1.5M outputs) still fills the GPU.
        let late = Target::Nvidia
            .window_config(&geometry(32, 7, 960, 3))
            .unwrap();
        assert_eq!((late.columns, late.vector), (4, 4));
        // Batch-1 layers, stride 2 and global pools stay loop nests.
        for (geometry, what) in [
            (geometry(1, 7, 960, 3), "small"),
            (geometry(1, 1, 2048, 7), "global pool"),
            (
                WindowGeometry {
                    column_steps: Some([2, 1]),
                    ..geometry(32, 56, 96, 3)
                },
                "stride 2",
            ),
        ] {
            for target in [Target::Nvidia, Target::Generic] {
                assert!(target.window_config(&geometry).is_none(), "{what}");
            }
        }
        // Forced, any window op up to 64 columns wide takes it; channels
        // not a multiple of 4 (or a multiplier) go scalar, and a global
        // pool's wide window blocks no columns.
        let odd = Target::Nvidia
            .forced_window_config(&geometry(32, 56, 6, 3))
            .unwrap();
        assert_eq!(odd.vector, 1);
        assert_eq!(
            Target::Nvidia
                .forced_window_config(&geometry(1, 1, 2048, 56))
                .map(|c| c.columns),
            Some(1)
        );
        assert!(
            Target::Nvidia
                .forced_window_config(&geometry(1, 1, 64, 100))
                .is_none()
        );
        // CPUs block 4 columns even where few work-items remain.
        let cpu = Target::PoclCpu
            .window_config(&geometry(1, 7, 960, 3))
            .unwrap();
        assert_eq!((cpu.columns, cpu.vector, cpu.workgroup_size), (4, 4, 64));
    }

    #[test]
    fn cpu_windows_take_a_simd_register_of_channels() {
        let vector = |channels: i64, width: u32| {
            Target::PoclCpu
                .window_config_for(&geometry(1, 56, channels, 3), width)
                .map(|c| c.vector)
        };
        // AVX2 (8 floats), AVX-512 (16): the widest register that divides
        // the channels; 4 channels where neither does, 1 where not even 4.
        assert_eq!(vector(144, 8), Some(8));
        assert_eq!(vector(144, 16), Some(16));
        assert_eq!(vector(40, 16), Some(8));
        assert_eq!(vector(20, 16), Some(4));
        assert_eq!(vector(6, 16), Some(1));
        assert_eq!(vector(144, 4), Some(4));
        // A channel multiplier keeps scalar channels.
        let multiplied = WindowGeometry {
            multiplier: 2,
            ..geometry(1, 56, 32, 3)
        };
        assert_eq!(
            Target::PoclCpu
                .window_config_for(&multiplied, 16)
                .map(|c| c.vector),
            Some(1)
        );
        // GPUs keep their float4 form whatever the width.
        assert_eq!(
            Target::Nvidia
                .window_config_for(&geometry(32, 112, 32, 3), 16)
                .map(|c| c.vector),
            Some(4)
        );
    }

    #[test]
    fn every_target_gives_at_least_64_work_items_on_large_spaces() {
        for target in Target::ALL {
            for kind in [
                KernelKind::Elementwise,
                KernelKind::Reduction,
                KernelKind::Matmul,
                KernelKind::Convolution,
            ] {
                let config = target.loop_config(kind, 1 << 16);
                assert!(config.workgroup_size >= 64, "{target} {kind:?}: {config:?}");
            }
        }
    }
}
