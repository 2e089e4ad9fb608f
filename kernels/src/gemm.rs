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
//! guarded: any M, N, K works.
//!
//! Split-K (`split_k > 1`), for outputs with too few tiles to fill the GPU
//! (a CNN's late stages at batch 1): `split_k` work-groups share each tile,
//! each summing one contiguous slice of K. Each writes its partial tile to
//! a workspace, and the last of them to arrive (an atomic counter per
//! tile) adds the partials in slice order, so the result does not depend
//! on arrival order, runs the epilogue and resets the counter to zero for
//! the next launch. The counters must be zero before the first launch.

use std::fmt::Write as _;

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
}

impl GemmConfig {
    /// Work-items along (n, m): the work-group is `[threads_n, threads_m, 1]`.
    pub fn threads(&self) -> (u32, u32) {
        (self.tile_n / self.work_n, self.tile_m / self.work_m)
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

    /// Local memory the kernel uses, in bytes (f32 tiles of A and B).
    pub fn local_bytes(&self) -> u32 {
        if self.is_register_blocked() {
            return 0;
        }
        4 * self.tile_k * (self.tile_m + self.tile_n)
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

/// Where an operand's elements live: a kernel argument (a C pointer name)
/// plus an element offset and strides for (batch, row, column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmOperand {
    pub pointer: String,
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
        let mut terms = Vec::new();
        if self.offset != 0 {
            terms.push(self.offset.to_string());
        }
        for (stride, index) in [
            (self.batch_stride, batch),
            (self.row_stride, row),
            (self.col_stride, col),
        ] {
            match stride {
                0 => {}
                1 => terms.push(index.to_string()),
                s => terms.push(format!("{index} * {s}")),
            }
        }
        if terms.is_empty() {
            "0".into()
        } else {
            terms.join(" + ")
        }
    }
}

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct GemmSpec {
    /// The kernel's name and its parameter list (already formatted C).
    pub name: String,
    pub parameters: String,
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
    /// As `a_offset`, for `B[b, k, j]`.
    pub b_offset: Option<String>,
    /// C statements run per output element before `init` is evaluated
    /// (`b`, `i`, `j` in scope), e.g. loads of a bias the init broadcasts.
    pub init_statements: String,
    /// The initial accumulator, a C expression that may use `b`, `i`, `j`
    /// (e.g. `0.0f`, or a load of C to accumulate into it).
    pub init: String,
    /// C statements run per output element with `acc` (float), `b`, `i`,
    /// `j` (tcc_index) in scope; they must store the result themselves.
    pub store: String,
    /// With `split_k > 1`: the C names of the workspace (`float*`, at least
    /// [`GemmConfig::split_k_scratch`]'s floats) and of the per-tile
    /// counters (`uint*`, zero before the first launch).
    pub split_k_scratch: Option<(String, String)>,
    /// Multiply on tensor cores in TF32 (inputs rounded to 10-bit
    /// mantissas, FP32 accumulation; `mma.sync.m16n8k8`), in the PTX form
    /// only: the kernel text holds the tensor-core body under
    /// `#ifdef TCC_PTX` and the exact FP32 body otherwise.
    pub tf32: bool,
}

/// How a work-group's work-items share its tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
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
    },
}

impl Layout {
    /// The tensor-core layout for `c`, if its tile divides into warps of
    /// 16x8 `mma` tiles (the squarest warp tiles win).
    fn mma(c: &GemmConfig) -> Option<Self> {
        let threads = c.workgroup_size();
        if !threads.is_multiple_of(32) || !c.tile_k.is_multiple_of(8) {
            return None;
        }
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
            })
    }

    /// The accumulator's dimensions per work-item.
    fn acc(&self, c: &GemmConfig) -> (u32, u32) {
        match self {
            Layout::Fma { .. } => (c.work_m, c.work_n),
            Layout::Mma { mi, ni, .. } => (2 * mi, 2 * ni),
        }
    }

    /// C expressions for the tile row of accumulator row `wm` and the tile
    /// column of accumulator column `wn`.
    fn offsets(&self, c: &GemmConfig) -> (String, String) {
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
        }
    }
}

/// One operand's copy of a `outer x inner` block into local memory, each
/// work-item taking every `threads`-th element (or float4 along `inner`).
struct TileStaging<'a> {
    tile: &'a str,
    /// (tile index, global index, global base, tile extent, global bound).
    outer: (&'a str, &'a str, &'a str, u32, i64),
    inner: (&'a str, &'a str, &'a str, u32, i64),
    pointer: &'a str,
    /// Element offset of (global outer, global inner) in `pointer`.
    address: &'a str,
    /// Statements and value computing the element instead of a load.
    element: Option<&'a (String, String)>,
    /// Stored as `tile[inner][outer]` rather than `tile[outer][inner]`.
    transposed: bool,
    vector: bool,
}

/// The unrolled loop over a work-item's staging rounds for `t`: each
/// round `r` handles element (or float4) `tid + r * threads` of the tile.
/// `body` receives the round's tile coordinates already declared, and
/// with `k_base` (the k of the tile's first row or column) the global ones.
fn staging_rounds(
    out: &mut String,
    t: &TileStaging,
    threads: u32,
    k_base: Option<&str>,
    body: &dyn Fn(&mut String),
) {
    let (ol, og, ob, oe, _) = t.outer;
    let (il, ig, ib, ie, _) = t.inner;
    let width = if t.vector { 4 } else { 1 };
    // A fixed number of rounds per work-item, unrolled, so that what
    // depends only on a round's row (an implicit-GEMM row's image and
    // pixel) is computed once, outside the k loop.
    let count = oe * ie / width;
    let rounds = count.div_ceil(threads);
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int r = 0; r < {rounds}; ++r) {{\n      const int l = tid + r * {threads};"
    );
    if !count.is_multiple_of(threads) {
        let _ = writeln!(out, "      if (l >= {count}) break;");
    }
    let q = ie / width;
    let inner_index = if t.vector {
        format!("(l % {q}) * 4")
    } else {
        format!("l % {q}")
    };
    let _ = writeln!(out, "      const int {ol} = l / {q}, {il} = {inner_index};");
    if let Some(k_base) = k_base {
        let base = |b: &str| {
            if b == "k0" {
                k_base.to_string()
            } else {
                b.to_string()
            }
        };
        let _ = writeln!(
            out,
            "      const tcc_index {og} = {} + {ol}, {ig} = {} + {il};",
            base(ob),
            base(ib)
        );
    }
    body(out);
    let _ = writeln!(out, "    }}");
}

/// The number of staging rounds of `t` per work-item.
fn staging_count(t: &TileStaging, threads: u32) -> u32 {
    let width = if t.vector { 4 } else { 1 };
    (t.outer.3 * t.inner.3 / width).div_ceil(threads)
}

/// Declares the registers a work-item fetches its part of `t` into
/// (`float` or `float4` per round).
fn declare_staging_registers(out: &mut String, t: &TileStaging, registers: &str, threads: u32) {
    let ty = if t.vector { "float4" } else { "float" };
    let _ = writeln!(out, "  {ty} {registers}[{}];", staging_count(t, threads));
}

/// Emits the guarded global loads of `t`'s tile at k base `k_base` into
/// `registers` (zero outside the operand): issued before the k step that
/// computes on the previous tile, so their latency hides behind it.
fn fetch_tile(out: &mut String, t: &TileStaging, threads: u32, registers: &str, k_base: &str) {
    let (_, og, _, _, on) = t.outer;
    let (_, ig, _, _, inn) = t.inner;
    let guard = format!("({og} < {on} && {ig} < {inn})");
    staging_rounds(out, t, threads, Some(k_base), &|out: &mut String| {
        if let Some((statements, value)) = t.element {
            if t.vector {
                let _ = writeln!(out, "      float4 element = (float4)(0.0f);");
            } else {
                let _ = writeln!(out, "      float element = 0.0f;");
            }
            let _ = writeln!(out, "      if {guard} {{");
            for line in statements.lines() {
                let _ = writeln!(out, "        {line}");
            }
            let _ = writeln!(out, "        element = {value};");
            let _ = writeln!(out, "      }}");
            let _ = writeln!(out, "      {registers}[r] = element;");
        } else if !t.vector {
            let _ = writeln!(
                out,
                "      {registers}[r] = {guard} ? {}[{}] : 0.0f;",
                t.pointer, t.address
            );
        } else {
            let _ = writeln!(
                out,
                "      {registers}[r] = {guard} ? vload4(0, {} + {}) : (float4)(0.0f);",
                t.pointer, t.address
            );
        }
    });
}

/// Emits the stores of fetched `registers` into `t`'s local tile.
fn store_tile(out: &mut String, t: &TileStaging, threads: u32, registers: &str) {
    let (ol, _, _, _, _) = t.outer;
    let (il, _, _, _, _) = t.inner;
    let (row, col) = if t.transposed { (il, ol) } else { (ol, il) };
    let tile = t.tile;
    staging_rounds(out, t, threads, None, &|out: &mut String| {
        if !t.vector {
            let _ = writeln!(out, "      {tile}[{row}][{col}] = {registers}[r];");
        } else if t.transposed {
            let _ = writeln!(
                out,
                "      {tile}[{row}][{col}] = {registers}[r].x; {tile}[{row} + 1][{col}] = {registers}[r].y; {tile}[{row} + 2][{col}] = {registers}[r].z; {tile}[{row} + 3][{col}] = {registers}[r].w;"
            );
        } else {
            let _ = writeln!(
                out,
                "      vstore4({registers}[r], 0, &{tile}[{row}][{col}]);"
            );
        }
    });
}

/// Instantiates the template.
pub fn gemm_kernel(spec: &GemmSpec) -> Result<String, String> {
    let c = spec.config;
    c.validate()?;
    if c.is_register_blocked() {
        return crate::register_gemm::register_gemm_kernel(spec);
    }
    let (vector_m, vector_n) = c.vector_widths();
    let fma = gemm_kernel_with(spec, Layout::Fma { vector_m, vector_n })?;
    match Layout::mma(&c).filter(|_| spec.tf32) {
        Some(mma) => Ok(format!(
            "#ifdef TCC_PTX\n{}#else\n{fma}#endif\n",
            gemm_kernel_with(spec, mma)?
        )),
        None => Ok(fma),
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
    let _ = writeln!(out, "void {}({}) {{", spec.name, spec.parameters);
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
            } =>
                format!(" on TF32 tensor cores ({warps_m}x{warps_n} warps of {mi}x{ni} mma tiles)"),
        },
        s.m,
        s.n,
        s.k,
        s.batch
    );
    // Rows of tile_a are padded so that the transposing stores of a warp,
    // which walk k, spread over the local-memory banks: by one word, or by
    // four where work-items read their outputs' operands as float4 (rows
    // must stay 16-byte aligned). Tensor-core fragments read 4 k rows x 8
    // columns per warp: rows 8 words apart mod 32 put those 32 reads in 32
    // banks, for A and for B.
    let (pad_a, pad_b) = match layout {
        Layout::Fma { vector_m: 4, .. } => (4, 0),
        Layout::Fma { .. } => (1, 0),
        Layout::Mma { .. } => (8, 8),
    };
    let _ = writeln!(
        out,
        "  __local float tile_a[{}][{}] __attribute__((aligned(16)));",
        c.tile_k,
        c.tile_m + pad_a
    );
    let _ = writeln!(
        out,
        "  __local float tile_b[{}][{}] __attribute__((aligned(16)));",
        c.tile_k,
        c.tile_n + pad_b
    );
    out.push_str(&format!(
        "  const int tx = (int)get_local_id(0);\n  const int ty = (int)get_local_id(1);\n  const int tid = ty * {threads_n} + tx;\n  const tcc_index row0 = (tcc_index)get_group_id(1) * {tm};\n  const tcc_index col0 = (tcc_index)get_group_id(0) * {tn};\n",
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
    let _ = writeln!(out, "  float acc[{acc_m}][{acc_n}];");
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn)\n      acc[wm][wn] = 0.0f;"
    );
    let threads = c.workgroup_size();
    // Stage A (transposed into tile_a[k][m]) and B.
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
    let a_staging = TileStaging {
        tile: "tile_a",
        outer: ("mm", "i", "row0", c.tile_m, s.m),
        inner: ("kk", "k", "k0", c.tile_k, s.k),
        pointer: &spec.a.pointer,
        address: &a_address,
        element: spec.a_element.as_ref(),
        transposed: true,
        vector: a_vector,
    };
    let b_staging = TileStaging {
        tile: "tile_b",
        outer: ("kk", "k", "k0", c.tile_k, s.k),
        inner: ("nn", "j", "col0", c.tile_n, s.n),
        pointer: &spec.b.pointer,
        address: &b_address,
        element: None,
        transposed: false,
        vector: b_vector,
    };
    // Software pipelining through registers: the next k tile's global
    // loads are issued before the current tile's multiply-adds, so that
    // their latency hides behind the arithmetic (one set of local tiles,
    // two barriers per step as before).
    declare_staging_registers(&mut out, &a_staging, "fetch_a", threads);
    declare_staging_registers(&mut out, &b_staging, "fetch_b", threads);
    fetch_tile(&mut out, &a_staging, threads, "fetch_a", &k_begin);
    fetch_tile(&mut out, &b_staging, threads, "fetch_b", &k_begin);
    let _ = writeln!(
        out,
        "  for (tcc_index k0 = {k_begin}; k0 < {k_end}; k0 += {}) {{",
        c.tile_k
    );
    store_tile(&mut out, &a_staging, threads, "fetch_a");
    store_tile(&mut out, &b_staging, threads, "fetch_b");
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(
        out,
        "    if (k0 + {tk} < {k_end}) {{\n    const tcc_index k_next = k0 + {tk};",
        tk = c.tile_k
    );
    fetch_tile(&mut out, &a_staging, threads, "fetch_a", "k_next");
    fetch_tile(&mut out, &b_staging, threads, "fetch_b", "k_next");
    let _ = writeln!(out, "    }}");
    match layout {
        Layout::Fma { vector_m, vector_n } => {
            let _ = writeln!(
                out,
                "    #pragma unroll\n    for (int kk = 0; kk < {}; ++kk) {{",
                c.tile_k
            );
            let _ = writeln!(out, "      float ra[{}], rb[{}];", c.work_m, c.work_n);
            operand_loads(
                &mut out, "ra", "tile_a", "ty", c.work_m, threads_m, vector_m,
            );
            operand_loads(
                &mut out, "rb", "tile_b", "tx", c.work_n, threads_n, vector_n,
            );
            let _ = writeln!(
                out,
                "      #pragma unroll\n      for (int wm = 0; wm < {}; ++wm)\n        #pragma unroll\n        for (int wn = 0; wn < {}; ++wn)\n          acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);",
                c.work_m, c.work_n
            );
            let _ = writeln!(out, "    }}");
        }
        Layout::Mma { mi, ni, .. } => mma_steps(&mut out, c.tile_k, mi, ni),
    }
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(out, "  }}");
    let (row_offset, col_offset) = layout.offsets(&c);
    if let Some((workspace, counters)) = &spec.split_k_scratch {
        split_k_fixup(&mut out, spec, workspace, counters, &layout);
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
    let _ = writeln!(out, "      if (i < {} && j < {}) {{", s.m, s.n);
    for line in spec.init_statements.lines() {
        let _ = writeln!(out, "        {line}");
    }
    let _ = writeln!(out, "        const float acc_init = {};", spec.init);
    let _ = writeln!(
        out,
        "        const float acc_value = acc_init + acc[wm][wn];"
    );
    for line in spec.store.lines() {
        let _ = writeln!(out, "        {line}");
    }
    let _ = writeln!(out, "      }}\n    }}\n  }}\n}}");
    Ok(out)
}

/// Where output `w` (a C loop counter) of work-item `id` lies in its tile
/// along one axis with `threads` work-items: with `vector` 4, in runs of 4
/// (work-item `id` owns `4 id .. 4 id + 3` of every `4 threads`); with 1,
/// strided by `threads`.
fn output_offset(w: &str, id: &str, threads: u32, vector: u32) -> String {
    if vector == 1 {
        format!("({id} + {w} * {threads})")
    } else {
        format!(
            "(({w} / {vector}) * {} + {id} * {vector} + {w} % {vector})",
            threads * vector
        )
    }
}

/// Loads a work-item's operands for one k step from a local tile into
/// `registers`: `float4` loads of 4 contiguous outputs' operands, or one
/// word per output.
fn operand_loads(
    out: &mut String,
    registers: &str,
    tile: &str,
    id: &str,
    work: u32,
    threads: u32,
    vector: u32,
) {
    if vector == 1 {
        let _ = writeln!(
            out,
            "      #pragma unroll\n      for (int w = 0; w < {work}; ++w) {registers}[w] = {tile}[kk][{id} + w * {threads}];"
        );
    } else {
        let _ = writeln!(
            out,
            "      #pragma unroll\n      for (int g = 0; g < {}; ++g) {{\n        const float4 v = *(__local const float4*)&{tile}[kk][g * {} + {id} * 4];\n        {registers}[4 * g] = v.x; {registers}[4 * g + 1] = v.y; {registers}[4 * g + 2] = v.z; {registers}[4 * g + 3] = v.w;\n      }}",
            work / 4,
            threads * 4
        );
    }
}

/// The tensor-core k steps over one staged tile: per 8 of k, each warp
/// loads its A fragments (`mi` of 16x8) and B fragments (`ni` of 8x8) from
/// local memory, rounded to TF32, and issues `mi * ni` `mma.sync`s
/// (fragment layouts of the PTX ISA's m16n8k8 `.tf32`: A row-major, B
/// column-major).
fn mma_steps(out: &mut String, tile_k: u32, mi: u32, ni: u32) {
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int k8 = 0; k8 < {tile_k}; k8 += 8) {{\n      uint fa[{mi}][4], fb[{ni}][2];"
    );
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int m = 0; m < {mi}; ++m) {{\n        const int r = warp_row + m * 16 + group;\n        fa[m][0] = tcc_tf32(tile_a[k8 + tig][r]);\n        fa[m][1] = tcc_tf32(tile_a[k8 + tig][r + 8]);\n        fa[m][2] = tcc_tf32(tile_a[k8 + tig + 4][r]);\n        fa[m][3] = tcc_tf32(tile_a[k8 + tig + 4][r + 8]);\n      }}"
    );
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int n = 0; n < {ni}; ++n) {{\n        const int col = warp_col + n * 8 + group;\n        fb[n][0] = tcc_tf32(tile_b[k8 + tig][col]);\n        fb[n][1] = tcc_tf32(tile_b[k8 + tig + 4][col]);\n      }}"
    );
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int m = 0; m < {mi}; ++m)\n        #pragma unroll\n        for (int n = 0; n < {ni}; ++n)\n          TCC_MMA_TF32(acc[2 * m][2 * n], acc[2 * m][2 * n + 1], acc[2 * m + 1][2 * n], acc[2 * m + 1][2 * n + 1], fa[m][0], fa[m][1], fa[m][2], fa[m][3], fb[n][0], fb[n][1]);\n    }}"
    );
}

/// Split-K: publish this work-group's partial tile; the last of the
/// tile's work-groups to arrive sums the partials (in slice order) into
/// `acc` and goes on to the epilogue, the others return.
fn split_k_fixup(
    out: &mut String,
    spec: &GemmSpec,
    workspace: &str,
    counters: &str,
    layout: &Layout,
) {
    let c = spec.config;
    let (acc_m, acc_n) = layout.acc(&c);
    let (tiles_n, tiles_m) = c.tiles(&spec.shape);
    let tile_elements = c.tile_m * c.tile_n;
    let _ = writeln!(
        out,
        "  /* split-K: {} work-groups per tile */\n  const tcc_index tile = (b * {tiles_m} + (tcc_index)get_group_id(1)) * {tiles_n} + (tcc_index)get_group_id(0);",
        c.split_k
    );
    let (row_offset, col_offset) = layout.offsets(&c);
    let position = format!("{row_offset} * {} + {col_offset}", c.tile_n);
    let _ = writeln!(
        out,
        "  __global float* partial = {workspace} + (tile * {} + split) * {tile_elements};",
        c.split_k
    );
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn)\n      partial[{position}] = acc[wm][wn];"
    );
    // Every work-item's partial is visible device-wide before the
    // group's arrival is counted; the last group fences again before it
    // reads the others' partials (which bypass the L1 through volatile).
    let _ = writeln!(out, "  tcc_global_fence();");
    let _ = writeln!(out, "  __local int last_to_arrive;");
    let _ = writeln!(
        out,
        "  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    );
    let _ = writeln!(
        out,
        "  if (tid == 0) last_to_arrive = atomic_inc((volatile __global uint*)&{counters}[tile]) == {};",
        c.split_k - 1
    );
    let _ = writeln!(out, "  barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(out, "  if (!last_to_arrive) return;");
    let _ = writeln!(out, "  tcc_global_fence();");
    let _ = writeln!(
        out,
        "  volatile __global const float* partials = {workspace} + tile * {};",
        c.split_k * tile_elements
    );
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn) {{\n      float sum = 0.0f;\n      for (int s = 0; s < {}; ++s) sum += partials[s * {tile_elements} + {position}];\n      acc[wm][wn] = sum;\n    }}",
        c.split_k
    );
    let _ = writeln!(out, "  if (tid == 0) {counters}[tile] = 0;");
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 100x50x30 product of two row-major matrices, a1 and a2, into a0.
    pub(crate) fn spec(config: GemmConfig) -> GemmSpec {
        let operand = |p: &str, rs: i64| GemmOperand {
            pointer: p.into(),
            offset: 0,
            batch_stride: 0,
            row_stride: rs,
            col_stride: 1,
        };
        GemmSpec {
            name: "matmul_0".into(),
            parameters: "__global float* restrict a0".into(),
            comment: "/* test */".into(),
            config,
            shape: GemmShape {
                batch: 1,
                m: 100,
                n: 50,
                k: 30,
            },
            a: operand("a1", 30),
            a_offset: None,
            a_element: None,
            a_element_vector: false,
            b: operand("a2", 50),
            b_offset: None,
            init_statements: String::new(),
            init: "0.0f".into(),
            store: "a0[i * 50 + j] = acc_value;".into(),
            split_k_scratch: None,
            tf32: false,
        }
    }

    #[test]
    fn instantiates_with_guards_and_local_tiles() {
        let text = gemm_kernel(&spec(GemmConfig {
            tile_m: 32,
            tile_n: 32,
            tile_k: 8,
            work_m: 2,
            work_n: 2,
            split_k: 1,
        }))
        .unwrap();
        assert!(text.contains("reqd_work_group_size(16, 16, 1)"), "{text}");
        assert!(
            text.contains("__local float tile_a[8][33] __attribute__((aligned(16)));"),
            "{text}"
        );
        assert!(
            text.contains("(i < 100 && k < 30) ? a1[i * 30 + k] : 0.0f"),
            "{text}"
        );
        assert!(text.contains("a0[i * 50 + j] = acc_value;"), "{text}");
    }

    #[test]
    fn custom_a_offsets_replace_the_strided_address() {
        let mut spec = spec(GemmConfig {
            tile_m: 32,
            tile_n: 32,
            tile_k: 8,
            work_m: 2,
            work_n: 2,
            split_k: 1,
        });
        spec.a_offset = Some("conv_offset(i, k)".into());
        let text = gemm_kernel(&spec).unwrap();
        assert!(text.contains("? a1[conv_offset(i, k)] : 0.0f"), "{text}");
    }

    #[test]
    fn computed_a_elements_replace_the_load_inside_the_guard() {
        let mut spec = spec(GemmConfig {
            tile_m: 32,
            tile_n: 32,
            tile_k: 8,
            work_m: 2,
            work_n: 2,
            split_k: 1,
        });
        spec.a_element = Some((
            "const tcc_index y = i - 1;\nconst float v = a1[y < 0 ? 0 : y];".into(),
            "(y >= 0 ? v : 0.5f)".into(),
        ));
        let text = gemm_kernel(&spec).unwrap();
        assert!(
            text.contains(
                "      float element = 0.0f;\n      if (i < 100 && k < 30) {\n        const tcc_index y = i - 1;\n        const float v = a1[y < 0 ? 0 : y];\n        element = (y >= 0 ? v : 0.5f);\n      }\n      fetch_a[r] = element;"
            ),
            "{text}"
        );
        assert!(!text.contains("vload4(0, a1"), "{text}");
        assert!(
            text.contains("      tile_a[kk][mm] = fetch_a[r];"),
            "{text}"
        );
    }

    #[test]
    fn the_next_tiles_loads_are_issued_before_the_current_tiles_arithmetic() {
        let text = gemm_kernel(&spec(GemmConfig {
            tile_m: 32,
            tile_n: 32,
            tile_k: 8,
            work_m: 2,
            work_n: 2,
            split_k: 1,
        }))
        .unwrap();
        let first_fetch = text.find("fetch_a[r] =").unwrap();
        let k_loop = text
            .find("for (tcc_index k0 = 0; k0 < 30; k0 += 8)")
            .unwrap();
        let store = text.find("tile_a[kk][mm] = fetch_a[r];").unwrap();
        let barrier = text[store..].find("barrier(CLK_LOCAL_MEM_FENCE);").unwrap() + store;
        let next = text.find("if (k0 + 8 < 30) {").unwrap();
        let next_fetch = text[next..].find("fetch_a[r] =").unwrap() + next;
        let arithmetic = text.find("acc[wm][wn] = fma(").unwrap();
        assert!(first_fetch < k_loop, "{text}");
        assert!(
            k_loop < store && store < barrier && barrier < next,
            "{text}"
        );
        assert!(next < next_fetch && next_fetch < arithmetic, "{text}");
    }

    #[test]
    fn aligned_operands_are_loaded_as_float4() {
        let mut spec = spec(GemmConfig {
            tile_m: 32,
            tile_n: 32,
            tile_k: 8,
            work_m: 2,
            work_n: 2,
            split_k: 1,
        });
        spec.shape = GemmShape {
            batch: 1,
            m: 64,
            n: 64,
            k: 32,
        };
        spec.a.row_stride = 32;
        spec.b.row_stride = 64;
        let text = gemm_kernel(&spec).unwrap();
        assert!(text.contains("vload4(0, a1 + i * 32 + k)"), "{text}");
        assert!(
            text.contains("fetch_b[r] = (k < 32 && j < 64) ? vload4(0, a2 + k * 64 + j)"),
            "{text}"
        );
        assert!(
            text.contains("vstore4(fetch_b[r], 0, &tile_b[kk][nn]);"),
            "{text}"
        );
    }

    #[test]
    fn fours_of_outputs_read_their_operands_as_float4() {
        let text = gemm_kernel(&spec(GemmConfig {
            tile_m: 128,
            tile_n: 128,
            tile_k: 16,
            work_m: 8,
            work_n: 8,
            split_k: 1,
        }))
        .unwrap();
        for expected in [
            // Rows padded by 4 words keep float4 alignment.
            "__local float tile_a[16][132] __attribute__((aligned(16)));",
            "const float4 v = *(__local const float4*)&tile_a[kk][g * 64 + ty * 4];",
            "const float4 v = *(__local const float4*)&tile_b[kk][g * 64 + tx * 4];",
            // Work-item ty owns rows 4 ty .. 4 ty + 3 of each 64.
            "const tcc_index i = row0 + ((wm / 4) * 64 + ty * 4 + wm % 4);",
            "const tcc_index j = col0 + ((wn / 4) * 64 + tx * 4 + wn % 4);",
        ] {
            assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
        }
    }

    #[test]
    fn tf32_puts_a_tensor_core_body_under_tcc_ptx_and_keeps_fp32_otherwise() {
        let config = GemmConfig {
            tile_m: 64,
            tile_n: 64,
            tile_k: 16,
            work_m: 4,
            work_n: 4,
            split_k: 1,
        };
        let mut spec = spec(config);
        spec.tf32 = true;
        let text = gemm_kernel(&spec).unwrap();
        // 8 warps over 64x64: 2x4 warps of 32x16 (2x2 mma tiles of 16x8),
        // the squarest warp tiles.
        assert_eq!(
            Layout::mma(&config),
            Some(Layout::Mma {
                warps_m: 2,
                warps_n: 4,
                mi: 2,
                ni: 2
            })
        );
        let (ptx, fp32) = text
            .strip_prefix("#ifdef TCC_PTX\n")
            .and_then(|t| t.strip_suffix("#endif\n"))
            .and_then(|t| t.split_once("#else\n"))
            .expect("two bodies");
        for expected in [
            "on TF32 tensor cores (2x4 warps of 2x2 mma tiles)",
            "__local float tile_a[16][72] __attribute__((aligned(16)));",
            "__local float tile_b[16][72] __attribute__((aligned(16)));",
            "const int warp_row = (warp / 4) * 32, warp_col = (warp % 4) * 16;",
            "float acc[4][4];",
            "fa[m][1] = tcc_tf32(tile_a[k8 + tig][r + 8]);",
            "fb[n][1] = tcc_tf32(tile_b[k8 + tig + 4][col]);",
            "TCC_MMA_TF32(acc[2 * m][2 * n], acc[2 * m][2 * n + 1], acc[2 * m + 1][2 * n], acc[2 * m + 1][2 * n + 1]",
            "const tcc_index i = row0 + (warp_row + (wm / 2) * 16 + (wm % 2) * 8 + group);",
            "const tcc_index j = col0 + (warp_col + (wn / 2) * 8 + tig * 2 + wn % 2);",
            "a0[i * 50 + j] = acc_value;",
        ] {
            assert!(ptx.contains(expected), "missing `{expected}` in:\n{ptx}");
        }
        assert!(!fp32.contains("TCC_MMA_TF32"), "{fp32}");
        assert!(
            fp32.contains("acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);"),
            "{fp32}"
        );
        // Both bodies define the same kernel with the same work-group.
        assert_eq!(ptx.matches("void matmul_0(").count(), 1);
        assert_eq!(fp32.matches("void matmul_0(").count(), 1);
        // Without tf32, or with tiles no warp grid fits, one fp32 body.
        spec.tf32 = false;
        assert!(!gemm_kernel(&spec).unwrap().contains("TCC_PTX"));
        assert_eq!(
            Layout::mma(&GemmConfig {
                tile_m: 8,
                ..config
            }),
            None,
            "16 rows per warp tile at least"
        );
    }

    #[test]
    fn rejects_tiles_that_do_not_divide() {
        assert!(
            gemm_kernel(&spec(GemmConfig {
                tile_m: 30,
                tile_n: 32,
                tile_k: 8,
                work_m: 4,
                work_n: 2,
                split_k: 1,
            }))
            .is_err()
        );
    }

    #[test]
    fn split_k_publishes_partials_and_the_last_group_sums_them_in_order() {
        let config = GemmConfig {
            tile_m: 32,
            tile_n: 32,
            tile_k: 8,
            work_m: 2,
            work_n: 2,
            split_k: 4,
        };
        let mut spec = spec(config);
        // Without scratch buffers a split is refused, and the reverse.
        assert!(gemm_kernel(&spec).is_err());
        spec.split_k_scratch = Some(("a3".into(), "a4".into()));
        let text = gemm_kernel(&spec).unwrap();
        // K = 30 is 4 steps of 8: one step per slice.
        assert_eq!(config.split_k_slice(30), 8);
        // 100 x 50 is 4 x 2 tiles of 32 x 32: 8 tiles of 4 partials.
        assert_eq!(config.split_k_scratch(&spec.shape), (8 * 4 * 1024, 8));
        for expected in [
            "const tcc_index b = (tcc_index)get_group_id(2) / 4;",
            "const int split = (int)(get_group_id(2) % 4);",
            "const tcc_index k_end = min(k_begin + 8, (tcc_index)30);",
            "for (tcc_index k0 = k_begin; k0 < k_end; k0 += 8) {",
            "const tcc_index tile = (b * 4 + (tcc_index)get_group_id(1)) * 2 + (tcc_index)get_group_id(0);",
            "__global float* partial = a3 + (tile * 4 + split) * 1024;",
            "last_to_arrive = atomic_inc((volatile __global uint*)&a4[tile]) == 3;",
            "if (!last_to_arrive) return;",
            "for (int s = 0; s < 4; ++s) sum += partials[s * 1024 + (ty + wm * 16) * 32 + (tx + wn * 16)];",
            "if (tid == 0) a4[tile] = 0;",
            "a0[i * 50 + j] = acc_value;",
        ] {
            assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
        }
        spec.config.split_k = 1;
        assert!(gemm_kernel(&spec).is_err());
    }

    #[test]
    fn operand_addresses_skip_zero_and_unit_strides() {
        let op = GemmOperand {
            pointer: "p".into(),
            offset: 7,
            batch_stride: 0,
            row_stride: 1,
            col_stride: 12,
        };
        assert_eq!(op.address("b", "i", "k"), "7 + i + k * 12");
    }
}
