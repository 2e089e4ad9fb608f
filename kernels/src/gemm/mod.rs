//! A tiled (batched) matrix multiplication, `C[b,i,j] = epilogue(init +
//! sum_k A[b,i,k] * B[b,k,j])`.
//!
//! Each work-group computes a `tile_m x tile_n` tile of C. Per step of
//! `tile_k`, its work-items cooperatively stage a `tile_m x tile_k` tile of A
//! (transposed) and a `tile_k x tile_n` tile of B in local memory with
//! coalesced loads, then each work-item accumulates `work_m x work_n`
//! outputs in registers. A work-item's outputs are strided by the number of
//! work-items along each axis, so neighbouring work-items touch neighbouring
//! columns (coalesced stores) and neighbouring local-memory words. Edges are
//! guarded: any M, N, K works. Work-items of 4x4 or 8x8 outputs keep two
//! sets of local tiles, one barrier per k step (`fma`).
//!
//! Split-K (`split_k > 1`), for outputs with too few tiles to fill the GPU
//! (a CNN's late stages at batch 1): `split_k` work-groups share each tile,
//! each summing one contiguous slice of K. Each writes its partial tile to
//! a workspace, and the last of them to arrive (an atomic counter per
//! tile) adds the partials in slice order, so the result does not depend
//! on arrival order, runs the epilogue and resets the counter to zero for
//! the next launch. The counters must be zero before the first launch.
//! The workspace holds a partial in work-item order, not as the tile's
//! rows: every work-group of a tile keeps the same accumulators in the
//! same work-items, so each work-item stores and reads back its own
//! (coalesced, four words at a time) (`emit::split_k_fixup`).
//!
//! That is the fp32 body (`fma`). With tensor cores
//! (`GemmSpec::tensor_cores`, PTX only) the kernel text also holds a second
//! body under `#ifdef TCC_PTX`: the same work-group tile, epilogue and
//! split-K, with warps of `mma.sync` tiles fed by a multi-stage `cp.async`
//! pipeline (`tensor_cores`); on Hopper (sm_90a) a TF32 GEMM whose
//! operands and sizes qualify takes warpgroup `wgmma` instead (`wgmma`;
//! `wgmma_large` for the CUDA launch's dynamic local memory), and so does
//! an FP16/BF16 GEMM of 16-bit operands launched by CUDA (`wgmma_half`).
//! An int8 GEMM (`TensorCores::S8`) sums int8
//! products exactly in int32 in both bodies (`int8`).
//!
//! A product of a few rows (`k_lanes > 1`) takes neither: its work-items
//! read B straight from global memory and share K inside the work-group
//! (`few_rows`), one body for every device.

mod emit;
mod few_rows;
#[cfg(test)]
mod few_rows_tests;
mod fma;
mod int8;
#[cfg(test)]
mod int8_tests;
mod layout;
mod staging;
mod tensor_cores;
#[cfg(test)]
pub(crate) mod tests;
mod tma_stage;
mod wgmma;
mod wgmma_half;
#[cfg(test)]
mod wgmma_half_tests;
mod wgmma_large;
#[cfg(test)]
mod wgmma_tests;

use std::fmt::Write as _;

use crate::{Buffer, KernelParameters};

use emit::split_k_fixup;
use fma::fma_main_loop;
use layout::Layout;
use staging::Sources;
#[cfg(test)]
use tensor_cores::Pipeline;
pub use tensor_cores::TensorCores;
use wgmma::Wgmma;
pub use wgmma::{TENSOR_MAP_BYTES, tensor_map_slot_bytes};
use wgmma_half::WgmmaHalf;
pub use wgmma_half::{
    half_conv_tile_for, half_dynamic_local_bytes, half_tensor_map_slot_bytes, half_tile_for,
};
use wgmma_large::WgmmaLarge;
pub use wgmma_large::{
    DYNAMIC_LOCAL_BYTES, DYNAMIC_LOCAL_SYMBOL, LARGE_TILE, dynamic_local_bytes,
    dynamic_local_marker, large_tile_fits,
};

/// Tile sizes of one GEMM kernel. A tile of exactly one work-item's
/// outputs (`tile_m == work_m`, `tile_n == work_n`) selects the
/// register-blocked form for CPUs (`crate::register_gemm`): single
/// work-item groups, no local tiles, `tile_k` unused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmConfig {
    pub tile_m: u32,
    pub tile_n: u32,
    pub tile_k: u32,
    pub work_m: u32,
    pub work_n: u32,
    /// Work-groups sharing one output tile, each over a slice of K (1: no
    /// split).
    pub split_k: u32,
    /// Work-items of one work-group sharing each of its outputs, each over
    /// every `k_lanes`-th row of K (1: none). Above 1 this is the few-row
    /// form (`few_rows`): every work-item owns all `tile_m` rows of the
    /// tile (`work_m == tile_m`), the work-group is `tile_n / work_n`
    /// work-items across by `k_lanes` along K, and it adds its lanes'
    /// partial sums before the epilogue.
    pub k_lanes: u32,
}

impl GemmConfig {
    /// The register-blocked form for a `rows x columns` block of C per
    /// work-item (one work-item per work-group, `tile_k` unused).
    pub fn register_blocked(rows: u32, columns: u32) -> Self {
        GemmConfig {
            tile_m: rows,
            tile_n: columns,
            tile_k: 4,
            work_m: rows,
            work_n: columns,
            split_k: 1,
            k_lanes: 1,
        }
    }

    /// The few-row form over a tile of `rows` rows and `columns_per_item
    /// x items` columns, `k_lanes` work-items along K per column block
    /// (see [`GemmConfig::k_lanes`]).
    pub fn few_rows(rows: u32, columns_per_item: u32, items: u32, k_lanes: u32) -> Self {
        GemmConfig {
            tile_m: rows,
            tile_n: columns_per_item * items,
            tile_k: 1,
            work_m: rows,
            work_n: columns_per_item,
            split_k: 1,
            k_lanes,
        }
    }

    /// Whether this is the few-row form (`k_lanes` above 1).
    pub fn is_few_rows(&self) -> bool {
        self.k_lanes > 1
    }

    /// Work-items along (n, m): the work-group is `[threads_n, threads_m, 1]`
    /// (the few-row form's second axis is its K lanes).
    pub fn threads(&self) -> (u32, u32) {
        (
            self.tile_n / self.work_n,
            self.tile_m / self.work_m * self.k_lanes.max(1),
        )
    }

    pub fn workgroup_size(&self) -> u32 {
        let (x, y) = self.threads();
        x * y
    }

    /// Whether this is the register-blocked form (one work-item per
    /// work-group, no local memory).
    pub fn is_register_blocked(&self) -> bool {
        self.workgroup_size() == 1
    }

    /// Local memory the fp32 body uses, in bytes (f32 tiles of A and B,
    /// twice when double-buffered; a tensor-core body's pipeline takes as
    /// many stages as 48 KiB holds).
    pub fn local_bytes(&self) -> u32 {
        if self.is_register_blocked() {
            return 0;
        }
        self.local_stages() * 4 * self.tile_k * (self.tile_m + self.tile_n)
    }

    /// Sets of local tiles the fp32 body keeps: two (the next k tile is
    /// stored while the current one is read, one barrier per k step) when
    /// every work-item reads both operands as `float4` (the GPU-sized
    /// tiles: 4x4 or 8x8 outputs per work-item), else one.
    pub fn local_stages(&self) -> u32 {
        if self.vector_widths() == (4, 4) { 2 } else { 1 }
    }

    /// The configuration the fp32 body runs: work-items of 64 or more
    /// outputs (8x8) step k by at most 8 in the double-buffered form, so
    /// that ptxas fits them in 128 registers (two work-groups of 256 per
    /// SM) with an epilogue; a k step of 16 took 129 for a dense layer with
    /// bias and relu (H100: 40.5 against 48.2 TF/s). The tile sizes, the
    /// launch and the tensor-core body keep `self`.
    pub fn fma_config(&self) -> GemmConfig {
        let steps_by_8 = self.local_stages() == 2
            && self.work_m * self.work_n >= 64
            && self.tile_k > 8
            && self.tile_k.is_multiple_of(8);
        GemmConfig {
            tile_k: if steps_by_8 { 8 } else { self.tile_k },
            ..*self
        }
    }

    /// Outputs a work-item owns contiguously along m and n: 4 (read from
    /// local memory as one `float4`) when its outputs come in fours, else
    /// 1 (outputs strided by the work-items along that axis).
    pub fn vector_widths(&self) -> (u32, u32) {
        let width = |work: u32| if work.is_multiple_of(4) { 4 } else { 1 };
        (width(self.work_m), width(self.work_n))
    }

    /// Output tiles along (n, m) and the batch: the launch grid is
    /// `[tiles_n, tiles_m, batch * split_k]` work-groups.
    pub fn tiles(&self, shape: &GemmShape) -> (i64, i64) {
        (
            (shape.n + self.tile_n as i64 - 1) / self.tile_n as i64,
            (shape.m + self.tile_m as i64 - 1) / self.tile_m as i64,
        )
    }

    /// K per split-K slice, a whole number of `tile_k` steps.
    pub fn split_k_slice(&self, k: i64) -> i64 {
        let steps = (k + self.tile_k as i64 - 1) / self.tile_k as i64;
        let per_split = (steps + self.split_k as i64 - 1) / self.split_k as i64;
        per_split * self.tile_k as i64
    }

    /// Split-K scratch: (workspace floats, counters) for a problem.
    pub fn split_k_scratch(&self, shape: &GemmShape) -> (i64, i64) {
        let (tiles_n, tiles_m) = self.tiles(shape);
        let tiles = tiles_n * tiles_m * shape.batch;
        (
            tiles * self.split_k as i64 * (self.tile_m * self.tile_n) as i64,
            tiles,
        )
    }

    /// Whether the tile sizes divide as the template needs.
    pub fn validate(&self) -> Result<(), String> {
        if self.split_k == 0 {
            return Err(format!("{self:?}: split_k must be at least 1"));
        }
        if self.work_m == 0 || self.work_n == 0 || self.tile_k == 0 {
            return Err(format!("{self:?}: zero tile size"));
        }
        if !self.tile_m.is_multiple_of(self.work_m) || !self.tile_n.is_multiple_of(self.work_n) {
            return Err(format!("{self:?}: work per item must divide the tile"));
        }
        if self.is_register_blocked() && self.split_k > 1 {
            return Err(format!(
                "{self:?}: the register-blocked form does not split K"
            ));
        }
        if self.k_lanes == 0 {
            return Err(format!("{self:?}: k_lanes must be at least 1"));
        }
        if self.is_few_rows()
            && (self.work_m != self.tile_m || self.split_k > 1 || self.tile_k != 1)
        {
            return Err(format!(
                "{self:?}: K lanes (the few-row form) need work_m = tile_m, tile_k = 1 and no split-K"
            ));
        }
        Ok(())
    }
}

/// The problem size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmShape {
    pub batch: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
}

/// Where an operand's elements live: a kernel argument's buffer plus an
/// element offset and strides for (batch, row, column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmOperand {
    pub buffer: Buffer,
    pub offset: i64,
    pub batch_stride: i64,
    pub row_stride: i64,
    pub col_stride: i64,
}

impl GemmOperand {
    /// Whether 4 consecutive columns can be loaded as one `float4`: unit
    /// column stride, and rows, batches and the offset keep 4-element
    /// alignment (and the row length is a multiple of 4, so a vector never
    /// straddles the edge).
    fn vectorizable(&self, columns: i64) -> bool {
        self.col_stride == 1
            && columns % 4 == 0
            && self.row_stride % 4 == 0
            && self.batch_stride % 4 == 0
            && self.offset % 4 == 0
    }

    pub(crate) fn address(&self, batch: &str, row: &str, col: &str) -> String {
        let strides = vec![self.batch_stride, self.row_stride, self.col_stride];
        crate::Address::new(self.offset, strides).at(&[batch, row, col])
    }
}

/// An implicit-GEMM convolution's A as its NHWC image, read as it is:
/// row `i` of A is output pixel `i` (`n = i / (OH OW)`, then `oy`, `ox`),
/// column `k = (ky KW + kx) C + c` reads `image[n][oy sy + ky dy - py][ox
/// sx + kx dx - px][c]`, zero where that is outside the image. The
/// bodies that gather A's tiles themselves take it (the FP16/BF16 `wgmma`
/// body); the others read the same A through `GemmSpec::a_element`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvImage {
    pub buffer: Buffer,
    /// The element offset of the image in `buffer`.
    pub offset: i64,
    /// N, H, W, C.
    pub shape: [i64; 4],
    /// The element strides of N, H and W (C's is 1): a view of a larger
    /// image (a strided pointwise convolution's slice) keeps its parent's.
    pub pixel_strides: [i64; 3],
    /// OH, OW.
    pub output: [i64; 2],
    /// KH, KW.
    pub taps: [i64; 2],
    pub strides: [i64; 2],
    pub dilations: [i64; 2],
    /// Zero rows and columns before the image.
    pub pads: [i64; 2],
}

impl ConvImage {
    /// Whether A is the image itself as an `N H W x C` matrix: one tap,
    /// stride 1, no padding.
    pub fn is_matrix(&self) -> bool {
        let [_, h, w, c] = self.shape;
        self.taps == [1, 1]
            && self.strides == [1, 1]
            && self.pads == [0, 0]
            && self.output == [h, w]
            && self.pixel_strides == [h * w * c, w * c, c]
    }

    /// A's rows (output pixels) and columns.
    pub fn gemm_extents(&self) -> (i64, i64) {
        (
            self.shape[0] * self.output[0] * self.output[1],
            self.taps[0] * self.taps[1] * self.shape[3],
        )
    }
}

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct GemmSpec {
    pub name: String,
    pub parameters: KernelParameters,
    /// A comment placed above the kernel.
    pub comment: String,
    pub config: GemmConfig,
    pub shape: GemmShape,
    pub a: GemmOperand,
    /// A C expression for the element offset of `A[b, i, k]` (with `b`, `i`,
    /// `k` in scope) replacing `a`'s strided address: an implicit-GEMM
    /// convolution reads its input windows this way.
    pub a_offset: Option<String>,
    pub b: GemmOperand,
    /// C statements and a value computing `A[i, k]` itself (with `i`, `k`
    /// in scope, only for `i < M`, `k < K`), replacing the load of `a`: a
    /// convolution whose input padding and elementwise producer were folded
    /// into its loads (bounds checks and the pad value are in the
    /// statements).
    pub a_element: Option<(String, String)>,
    /// `a_element`'s value is a `float4` of `A[i, k .. k + 3]` (for `k` a
    /// multiple of 4; K must be one too): a convolution over a multiple of
    /// 4 channels reads 4 neighbouring channels of one input pixel with one
    /// `vload4` and one set of coordinates.
    pub a_element_vector: bool,
    /// K is a convolution's window, `[taps_y, taps_x, channels]` with
    /// `k = (k_ky * taps_x + k_kx) * channels + k_ch`, and `a_element`,
    /// `a_offset` and `b_offset` name the tap and channel as `k_ky`,
    /// `k_kx`, `k_ch` rather than dividing `k`. The register-blocked form
    /// walks it as three loops, so that what depends only on the row and
    /// the tap (an input pixel's coordinates, its bounds checks) is
    /// computed once per tap instead of once per k; the tiled forms do not
    /// take it.
    pub k_window: Option<[i64; 3]>,
    /// With `k_window`: the name of a `bool` in `a_element`'s statements
    /// that depends only on the row and the tap (not on `k_ch`), the
    /// padding's bounds check, which the statements read as `(tcc_inside |
    /// NAME)`. The template evaluates it for every row of its block once
    /// per tap and runs the channel loop of a tap inside the image with
    /// `tcc_inside` true, so the checks and the pad select fold away
    /// there; elsewhere `tcc_inside` is false.
    pub a_inside: Option<String>,
    /// A convolution's A as its image, for the bodies that gather it
    /// themselves ([`ConvImage`]); `a_element` still computes it for the
    /// others.
    pub a_image: Option<ConvImage>,
    /// As `a_offset`, for `B[b, k, j]`.
    pub b_offset: Option<String>,
    /// B (a constant weight) is stored in panels of this many columns,
    /// `[ceil(N / P)][K][P]` from `b`'s buffer and offset, the columns
    /// past N zero: element `(k, j)` at `(j / P) * K * P + k * P + j % P`,
    /// so that a register block's columns are contiguous in k and the k
    /// loop reads B in order (`tcc-pack-weight-panels` packs it). Only the
    /// register-blocked form takes it, with the block's vectors within a
    /// panel; a block reaching past N loads the last panel whole.
    pub b_panel: Option<i64>,
    /// C statements run per output element before `init` is evaluated
    /// (`b`, `i`, `j` in scope), e.g. loads of a bias the init broadcasts.
    pub init_statements: String,
    /// The initial accumulator, a C expression that may use `b`, `i`, `j`
    /// (e.g. `0.0f`, or a load of C to accumulate into it).
    pub init: String,
    /// C statements run per output element with `acc` (float), `b`, `i`,
    /// `j` (tcc_index) in scope; they must store the result themselves.
    pub store: String,
    /// Where C's columns `j .. j + 4` (from a multiple of 4) are one
    /// aligned vector in every row: the epilogue as a value per element
    /// and one store of the four (the FP16/BF16 `wgmma` body's staged
    /// epilogue takes it; the other bodies run `store`).
    pub vector_store: Option<crate::VectorStore>,
    /// With `split_k > 1`: the buffers of the workspace (`float*`, at least
    /// [`GemmConfig::split_k_scratch`]'s floats) and of the per-tile
    /// counters (`uint*`, zero before the first launch).
    pub split_k_scratch: Option<(Buffer, Buffer)>,
    /// A scratch buffer of [`tensor_map_slot_bytes`] (one 128-byte slot
    /// per work-group) where the TF32 `wgmma` body builds its tensor map
    /// of A for the TMA (`tcc-attach-tensor-map-slots` passes it; the body
    /// needs it, the others ignore it).
    pub tensor_map_slots: Option<Buffer>,
    /// Multiply on tensor cores (TF32 or FP16 inputs, FP32 accumulation;
    /// see `tensor_cores`), in the PTX form only: the kernel text holds the
    /// tensor-core body under `#ifdef TCC_PTX` and the exact FP32 body
    /// otherwise. `None`: FP32 only. `Some(TensorCores::S8)`: an int8
    /// GEMM, integer arithmetic in both bodies (see `int8`).
    pub tensor_cores: Option<TensorCores>,
    /// The kernel is launched through the CUDA driver (`tcc compile
    /// --backend=cuda`), which can give it dynamic local memory past
    /// OpenCL's 48 KiB: a TF32 product on [`LARGE_TILE`] then takes the
    /// large-tile `wgmma` body (`wgmma_large`) in its sm_90a PTX form.
    pub dynamic_local: bool,
    /// M at run time (issue 33: a symbolic batch): a C expression of the
    /// kernel's scalar parameters standing for `shape.m`, which is then
    /// the declared maximum that chose the tiles. Every bounds check on M
    /// stays (a tile that divides the maximum need not divide the call's
    /// M). The FP32 tiled and register-blocked forms take it.
    pub m_extent: Option<String>,
    /// The kernel's scalar parameters after the buffers, each a
    /// `const tcc_index` (the extents `m_extent` reads, and any other
    /// the host passes).
    pub scalars: Vec<String>,
}

impl GemmSpec {
    /// The kernel's signature line up to its opening brace: its buffer
    /// parameters, then each dynamic extent as a `const tcc_index`.
    pub(crate) fn signature(&self) -> String {
        let scalars: String = self
            .scalars
            .iter()
            .map(|name| format!(",\n    const tcc_index {name}"))
            .collect();
        format!("void {}({}{scalars}) {{", self.name, self.parameters)
    }

    /// Whether A and B hold int8 values summed in int32 (`acc` is an
    /// `int`).
    pub fn int8(&self) -> bool {
        self.tensor_cores == Some(TensorCores::S8)
    }
}

/// Instantiates the template.
pub fn gemm_kernel(spec: &GemmSpec) -> Result<String, String> {
    let c = spec.config;
    c.validate()?;
    // A dynamic M with split-K: the workspace and counters are laid out
    // for the declared maximum's tiles, of which a call launches the rows
    // it has (grid y at run time); each tile's slices still meet in its
    // own counter, and the fix-up's stores keep the M guard.
    if spec.m_extent.is_some() && spec.int8() {
        return Err(format!(
            "{}: a dynamic M is taken by the FP32 and mma.sync tensor-core GEMMs (tiled, split-K or register-blocked), not the int8 form: dynamic dimension not supported yet",
            spec.name
        ));
    }
    if c.is_register_blocked() {
        return crate::register_gemm::register_gemm_kernel(spec);
    }
    if c.is_few_rows() {
        return few_rows::few_rows_kernel(spec);
    }
    if spec.b_panel.is_some() {
        return Err(format!(
            "{}: B in panels is read by the register-blocked GEMM only",
            spec.name
        ));
    }
    if spec.k_window.is_some() {
        return Err(format!(
            "{}: the tiled GEMM forms stage flat k tiles; a convolution window's loops (k_window) are for the register-blocked form",
            spec.name
        ));
    }
    // The int8 body reads one char4 of k per output, strided outputs; the
    // fp32 body may step k by less than the tensor-core body (fma_config).
    let fma_spec = if spec.int8() {
        int8::validate(spec)?;
        spec.clone()
    } else {
        GemmSpec {
            config: c.fma_config(),
            ..spec.clone()
        }
    };
    let (vector_m, vector_n) = if spec.int8() {
        (1, 1)
    } else {
        c.vector_widths()
    };
    let fma = gemm_kernel_with(&fma_spec, Layout::Fma { vector_m, vector_n })?;
    let mma = spec
        .tensor_cores
        .and_then(|precision| Layout::mma(&c, precision));
    // Hopper's wgmma (sm_90a, whose macro clang defines): the large tile
    // in CUDA's dynamic local memory, or the 48 KiB body beside mma.sync.
    // Their tensor maps and tiles are sized by a static M; a dynamic M
    // (its loads and stores guarded by the run-time bound) takes mma.sync.
    let wgmma = if spec.m_extent.is_some() {
        None
    } else if WgmmaLarge::applies(spec) {
        Some(Layout::WgmmaLarge)
    } else if WgmmaHalf::applies(spec) {
        Some(Layout::WgmmaHalf)
    } else if mma.is_some() && Wgmma::applies(spec) {
        Some(Layout::Wgmma)
    } else {
        None
    };
    let mma = mma.map(|mma| gemm_kernel_with(spec, mma)).transpose()?;
    match (wgmma, mma) {
        (Some(wgmma), mma) => Ok(format!(
            "#if defined(TCC_PTX) && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n{}{}#else\n{fma}#endif\n",
            gemm_kernel_with(spec, wgmma)?,
            mma.map_or(String::new(), |mma| format!(
                "#elif defined(TCC_PTX)\n{mma}"
            ))
        )),
        (None, Some(mma)) => Ok(format!("#ifdef TCC_PTX\n{mma}#else\n{fma}#endif\n")),
        (None, None) => Ok(fma),
    }
}

fn gemm_kernel_with(spec: &GemmSpec, layout: Layout) -> Result<String, String> {
    let c = spec.config;
    let split = c.split_k > 1;
    if split != spec.split_k_scratch.is_some() {
        return Err(format!(
            "{}: split_k = {} needs the workspace and counters exactly when it is above 1",
            spec.name, c.split_k
        ));
    }
    let (threads_n, threads_m) = c.threads();
    let s = spec.shape;
    let mut out = String::new();
    let _ = writeln!(out, "{}", spec.comment);
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({threads_n}, {threads_m}, 1)))"
    );
    let _ = writeln!(out, "{}", spec.signature());
    let m = match &spec.m_extent {
        Some(extent) => format!("{extent} (at most {})", s.m),
        None => s.m.to_string(),
    };
    let _ = writeln!(
        out,
        "  /* tile {}x{}x{}, {}x{} outputs per work-item{}; M={} N={} K={} batch={} */",
        c.tile_m,
        c.tile_n,
        c.tile_k,
        c.work_m,
        c.work_n,
        match layout {
            Layout::Fma { .. } => String::new(),
            Layout::Mma {
                warps_m,
                warps_n,
                mi,
                ni,
                precision,
                ..
            } => format!(
                " on {} tensor cores ({warps_m}x{warps_n} warps of {mi}x{ni} mma tiles)",
                precision.name()
            ),
            Layout::Wgmma => Wgmma::description(),
            Layout::WgmmaLarge => WgmmaLarge::description(),
            Layout::WgmmaHalf => WgmmaHalf::description(spec),
        },
        m,
        s.n,
        s.k,
        s.batch
    );
    match layout {
        Layout::Fma { .. } if spec.int8() => int8::local_tiles(&mut out, &c, None),
        Layout::Fma { vector_m, .. } => {
            // Rows of tile_a are padded so that the transposing stores of
            // a warp, which walk k, spread over the local-memory banks: by
            // one word, or by four where work-items read their outputs'
            // operands as float4 (rows must stay 16-byte aligned).
            let pad_a = if vector_m == 4 { 4 } else { 1 };
            let stages = match c.local_stages() {
                1 => String::new(),
                stages => format!("[{stages}]"),
            };
            let _ = writeln!(
                out,
                "  __local float tile_a{stages}[{}][{}] __attribute__((aligned(16)));",
                c.tile_k,
                c.tile_m + pad_a
            );
            let _ = writeln!(
                out,
                "  __local float tile_b{stages}[{}][{}] __attribute__((aligned(16)));",
                c.tile_k, c.tile_n
            );
        }
        Layout::Mma { pipeline, .. } => tensor_cores::local_tiles(&mut out, spec, pipeline),
        Layout::Wgmma => Wgmma::local_tiles(&mut out),
        Layout::WgmmaLarge => WgmmaLarge::local_tiles(&mut out),
        Layout::WgmmaHalf => WgmmaHalf::local_tiles(&mut out, spec),
    }
    match layout {
        Layout::Fma { .. } if c.local_stages() == 2 => fma::warp_tiled_ids(&mut out, &c),
        _ => out.push_str(&format!(
            "  const int tx = (int)get_local_id(0);\n  const int ty = (int)get_local_id(1);\n  const int tid = ty * {threads_n} + tx;\n"
        )),
    }
    out.push_str(&format!(
        "  const tcc_index row0 = (tcc_index)get_group_id(1) * {tm};\n  const tcc_index col0 = (tcc_index)get_group_id(0) * {tn};\n",
        tm = c.tile_m,
        tn = c.tile_n
    ));
    let (k_begin, k_end) = if split {
        let slice = c.split_k_slice(s.k);
        let _ = writeln!(
            out,
            "  const tcc_index b = (tcc_index)get_group_id(2) / {sk};\n  const int split = (int)(get_group_id(2) % {sk});\n  const tcc_index k_begin = split * {slice};\n  const tcc_index k_end = min(k_begin + {slice}, (tcc_index){k});",
            sk = c.split_k,
            k = s.k,
        );
        ("k_begin".to_string(), "k_end".to_string())
    } else {
        let _ = writeln!(out, "  const tcc_index b = (tcc_index)get_group_id(2);");
        ("0".to_string(), s.k.to_string())
    };
    let (acc_m, acc_n) = layout.acc(&c);
    if let Layout::Mma {
        warps_n, mi, ni, ..
    } = layout
    {
        let _ = writeln!(
            out,
            "  const int warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;\n  const int warp_row = (warp / {warps_n}) * {}, warp_col = (warp % {warps_n}) * {};",
            16 * mi,
            8 * ni
        );
    }
    let (acc_type, zero) = if spec.int8() {
        ("int", "0")
    } else {
        ("float", "0.0f")
    };
    let _ = writeln!(out, "  {acc_type} acc[{acc_m}][{acc_n}];");
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn)\n      acc[wm][wn] = {zero};"
    );
    // Stage A (transposed into tile_a[k][m] for the fp32 body) and B.
    if spec.a_element_vector
        && (spec.a_element.is_none() || !c.tile_k.is_multiple_of(4) || s.k % 4 != 0)
    {
        return Err(format!(
            "{}: a float4 A element needs a computed element, tile_k and K multiples of 4",
            spec.name
        ));
    }
    let a_vector = (spec.a_offset.is_none()
        && spec.a_element.is_none()
        && spec.a.vectorizable(s.k)
        && c.tile_k.is_multiple_of(4))
        || spec.a_element_vector;
    let b_vector =
        spec.b_offset.is_none() && spec.b.vectorizable(s.n) && c.tile_n.is_multiple_of(4);
    let a_address = spec
        .a_offset
        .clone()
        .unwrap_or_else(|| spec.a.address("b", "i", "k"));
    let b_address = spec
        .b_offset
        .clone()
        .unwrap_or_else(|| spec.b.address("b", "k", "j"));
    let sources = Sources {
        a_address: &a_address,
        b_address: &b_address,
        a_vector,
        b_vector,
    };
    match layout {
        Layout::Fma { .. } if spec.int8() => int8::integer_main_loop(
            &mut out,
            &int8::Int8Staging::new(spec, (&a_address, &b_address), false),
            (&k_begin, &k_end),
        ),
        Layout::Fma { vector_m, vector_n } => fma_main_loop(
            &mut out,
            spec,
            &sources,
            (vector_m, vector_n),
            (&k_begin, &k_end),
        ),
        Layout::Mma {
            mi,
            ni,
            precision,
            pipeline,
            ..
        } => tensor_cores::main_loop(
            &mut out,
            spec,
            (precision, pipeline),
            (mi, ni),
            &sources,
            (&k_begin, &k_end),
        ),
        Layout::Wgmma => Wgmma::main_loop(&mut out, spec, &a_address),
        Layout::WgmmaLarge => WgmmaLarge::main_loop(&mut out, spec),
        Layout::WgmmaHalf => WgmmaHalf::main_loop(&mut out, spec),
    }
    let (row_offset, col_offset) = layout.offsets(&c);
    if let Some((workspace, counters)) = &spec.split_k_scratch {
        split_k_fixup(&mut out, spec, workspace, counters, &layout);
    }
    if matches!(layout, Layout::WgmmaHalf) && !split {
        WgmmaHalf::staged_epilogue(&mut out, spec);
        return Ok(out);
    }
    // Every loop over a work-item's outputs is unrolled: `acc` indexed by
    // a loop counter would live in (slow, local) stack memory, not in
    // registers (LLVM's unroller gives up on the epilogue's body size).
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm) {{"
    );
    let _ = writeln!(out, "    const tcc_index i = row0 + {row_offset};");
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn) {{"
    );
    let _ = writeln!(out, "      const tcc_index j = col0 + {col_offset};");
    let _ = writeln!(
        out,
        "      if (i < {} && j < {}) {{",
        spec.m_extent.as_deref().unwrap_or(&s.m.to_string()),
        s.n
    );
    for line in spec.init_statements.lines() {
        let _ = writeln!(out, "        {line}");
    }
    let _ = writeln!(out, "        const {acc_type} acc_init = {};", spec.init);
    let _ = writeln!(
        out,
        "        const {acc_type} acc_value = acc_init + acc[wm][wn];"
    );
    for line in spec.store.lines() {
        let _ = writeln!(out, "        {line}");
    }
    let _ = writeln!(out, "      }}\n    }}\n  }}\n}}");
    Ok(out)
}
