//! int8 GEMMs (`GemmSpec::tensor_cores == Some(TensorCores::S8)`, the
//! convolutions and matmuls `tcc-quantize-int8` makes): int8 x int8
//! products summed exactly in int32, so that every tiling, split and
//! body gives the loop nest's sums bit for bit; the epilogue reads `acc`
//! as an `int`.
//!
//! Both bodies stage through the same local tiles of bytes, each row
//! padded by 16 bytes: A as `tile_a[m][k + 16]` and B transposed, as
//! `tile_b[n][k + 16]`, so that a 32-bit word holds 4 consecutive k of one
//! row or column: what `mma.sync.m16n8k32.row.col.s8` takes in each of its
//! fragment registers (the FP16 `m16n8k16` layout in words) and what the
//! OpenCL C body reads as a `char4`. The padding puts the 8 rows a warp's
//! `ldmatrix` phase (or fragment word load) reads in distinct banks.
//!
//! A is staged in words of 4 k: a `vload4` where the operand (or a
//! convolution's computed element, `a_element_vector`) gives 4 channels at
//! once, else 4 guarded bytes; in the PTX form a plain row-major int8
//! matrix aligned to 16 bytes is copied by `cp.async` instead. B (a
//! weight matrix, K x N with N contiguous) is staged in blocks of 4 k x 4
//! n, loaded as 4 rows (a `char4` each where aligned) and transposed in
//! registers into 4 words.
//!
//! The OpenCL C body (every target; the fallback under NVIDIA) is the fp32
//! template's loop in integers: one stage, the next tile's loads issued
//! before the current tile's arithmetic, each work-item's outputs strided
//! by the work-items along each axis, 4 products per `char4` pair.

use std::fmt::Write as _;

use super::{GemmConfig, GemmSpec};
use crate::Storage;

/// Bytes each local tile row is padded by (see the module comment).
pub(super) const PAD: u32 = 16;

/// Declares the byte tiles, `stages` deep (`None`: one stage, indexed
/// without a stage).
pub(super) fn local_tiles(out: &mut String, c: &GemmConfig, stages: Option<u32>) {
    let stage = stages.map_or(String::new(), |s| format!("[{s}]"));
    let row = c.tile_k + PAD;
    for (tile, rows) in [("tile_a", c.tile_m), ("tile_b", c.tile_n)] {
        let _ = writeln!(
            out,
            "  __local char {tile}{stage}[{rows}][{row}] __attribute__((aligned(16)));"
        );
    }
}

/// The bytes of one pipeline stage of `c`'s tiles.
pub(super) fn stage_bytes(c: &GemmConfig) -> u32 {
    (c.tile_m + c.tile_n) * (c.tile_k + PAD)
}

/// Whether a plain int8 operand can be read 4 (`width`) elements at a
/// time along its columns: unit column stride, everything else a multiple
/// of `width` (so a vector never straddles the operand's edge).
fn aligned(operand: &super::GemmOperand, columns: i64, width: i64) -> bool {
    operand.col_stride == 1
        && columns % width == 0
        && operand.row_stride % width == 0
        && operand.batch_stride % width == 0
        && operand.offset % width == 0
}

/// How one kernel stages its int8 operands.
pub(super) struct Int8Staging<'a> {
    spec: &'a GemmSpec,
    a_address: &'a str,
    b_address: &'a str,
    threads: u32,
    /// A is copied by 16-byte `cp.async` (PTX form only).
    pub(super) a_async: bool,
}

impl<'a> Int8Staging<'a> {
    /// The staging of `spec`'s operands (addresses as the template
    /// computed them); `cp_async`: the PTX form, which may copy A by
    /// `cp.async`.
    pub(super) fn new(
        spec: &'a GemmSpec,
        (a_address, b_address): (&'a str, &'a str),
        cp_async: bool,
    ) -> Self {
        let a_async = cp_async
            && spec.a_offset.is_none()
            && spec.a_element.is_none()
            && spec.a.buffer.storage == Storage::I8
            && aligned(&spec.a, spec.shape.k, 16)
            && spec.config.tile_k.is_multiple_of(16);
        Int8Staging {
            spec,
            a_address,
            b_address,
            threads: spec.config.workgroup_size(),
            a_async,
        }
    }

    /// Rounds per work-item over `count` units, and the guard that ends
    /// the last round early when they do not divide.
    fn rounds(&self, out: &mut String, count: u32) {
        let threads = self.threads;
        let _ = writeln!(
            out,
            "    #pragma unroll\n    for (int r = 0; r < {}; ++r) {{\n      const int l = tid + r * {threads};",
            count.div_ceil(threads)
        );
        if !count.is_multiple_of(threads) {
            let _ = writeln!(out, "      if (l >= {count}) break;");
        }
    }

    /// Units of A per tile: words of 4 k, or 16-byte copies.
    fn a_units(&self) -> (u32, u32) {
        let width = if self.a_async { 16 } else { 4 };
        let c = self.spec.config;
        (c.tile_k / width, c.tile_m * c.tile_k / width)
    }

    /// Blocks of 4 k x 4 n of B per tile.
    fn b_blocks(&self) -> u32 {
        let c = self.spec.config;
        c.tile_k / 4 * (c.tile_n / 4)
    }

    /// Declares the registers A (where not copied) and B are fetched into.
    pub(super) fn declare(&self, out: &mut String) {
        if !self.a_async {
            let (_, count) = self.a_units();
            let _ = writeln!(out, "  uint fetch_a[{}];", count.div_ceil(self.threads));
        }
        let _ = writeln!(
            out,
            "  uint fetch_b[{}][4];",
            self.b_blocks().div_ceil(self.threads)
        );
    }

    /// Fetches (or copies) the tile at k base `k_base`: A into
    /// `tile_a_stage` by `cp.async`, or into registers, and B into
    /// registers.
    pub(super) fn fetch(&self, out: &mut String, tile_a_stage: &str, k_base: &str) {
        let (spec, s) = (self.spec, self.spec.shape);
        let (per_row, count) = self.a_units();
        let width = if self.a_async { 16 } else { 4 };
        self.rounds(out, count);
        let _ = writeln!(
            out,
            "      const int mm = l / {per_row}, kk = (l % {per_row}) * {width};\n      const tcc_index i = row0 + mm, k4 = {k_base} + kk;"
        );
        let a = &spec.a.buffer;
        if self.a_async {
            let _ = writeln!(
                out,
                "      const tcc_index k = k4;\n      const int inside = i < {m} && k < {kk};\n      tcc_cp_async16((__local float*)&{tile_a_stage}[mm][kk], (__global const float*)({a} + (inside ? {address} : 0)), inside ? 16 : 0);",
                m = s.m,
                kk = s.k,
                address = self.a_address,
            );
        } else if spec.a_element_vector || (spec.a_element.is_none() && aligned_a(spec)) {
            // 4 channels (or columns) of one row at once.
            let (statements, value) = match &spec.a_element {
                Some((statements, value)) => (statements.as_str(), value.clone()),
                None => ("", a.load_vector(4, self.a_address)),
            };
            let _ = writeln!(
                out,
                "      uint word = 0;\n      if (i < {} && k4 < {}) {{\n        const tcc_index k = k4;",
                s.m, s.k
            );
            for line in statements.lines().filter(|l| !l.is_empty()) {
                let _ = writeln!(out, "        {line}");
            }
            let _ = writeln!(
                out,
                "        word = as_uint({value});\n      }}\n      fetch_a[r] = word;"
            );
        } else {
            let _ = writeln!(
                out,
                "      uint word = 0;\n      #pragma unroll\n      for (int q = 0; q < 4; ++q) {{\n        const tcc_index k = k4 + q;\n        if (i < {} && k < {}) {{",
                s.m, s.k
            );
            let value = match &spec.a_element {
                Some((statements, value)) => {
                    for line in statements.lines() {
                        let _ = writeln!(out, "          {line}");
                    }
                    value.clone()
                }
                None => a.load(self.a_address),
            };
            let _ = writeln!(
                out,
                "          word |= (uint)(uchar)({value}) << (8 * q);\n        }}\n      }}\n      fetch_a[r] = word;"
            );
        }
        let _ = writeln!(out, "    }}");
        self.fetch_b(out, k_base);
    }

    /// B's blocks of 4 k x 4 n into `fetch_b[r][0 .. 3]`, one word (4 k)
    /// per column.
    fn fetch_b(&self, out: &mut String, k_base: &str) {
        let (spec, s, c) = (self.spec, self.spec.shape, self.spec.config);
        let blocks_n = c.tile_n / 4;
        self.rounds(out, self.b_blocks());
        let _ = writeln!(
            out,
            "      const int kk = (l / {blocks_n}) * 4, nn = (l % {blocks_n}) * 4;\n      const tcc_index j4 = col0 + nn;\n      uint w0 = 0, w1 = 0, w2 = 0, w3 = 0;\n      #pragma unroll\n      for (int q = 0; q < 4; ++q) {{\n        const tcc_index k = {k_base} + kk + q;"
        );
        let b = &spec.b.buffer;
        if spec.b_offset.is_none() && aligned(&spec.b, s.n, 4) {
            let _ = writeln!(
                out,
                "        const tcc_index j = j4;\n        const char4 v = (k < {} && j < {}) ? {} : (char4)(0);",
                s.k,
                s.n,
                b.load_vector(4, self.b_address)
            );
        } else {
            let _ = writeln!(out, "        char4 v = (char4)(0);");
            for (lane, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(
                    out,
                    "        {{ const tcc_index j = j4 + {lane}; if (k < {} && j < {}) v.{component} = {}; }}",
                    s.k,
                    s.n,
                    b.load(self.b_address)
                );
            }
        }
        let _ = writeln!(
            out,
            "        w0 |= (uint)(uchar)v.x << (8 * q); w1 |= (uint)(uchar)v.y << (8 * q);\n        w2 |= (uint)(uchar)v.z << (8 * q); w3 |= (uint)(uchar)v.w << (8 * q);\n      }}\n      fetch_b[r][0] = w0; fetch_b[r][1] = w1; fetch_b[r][2] = w2; fetch_b[r][3] = w3;\n    }}"
        );
    }

    /// Stores the fetched registers into `tile_a_stage` (unless A was
    /// copied) and `tile_b_stage`.
    pub(super) fn store(&self, out: &mut String, tile_a_stage: &str, tile_b_stage: &str) {
        if !self.a_async {
            let (per_row, count) = self.a_units();
            self.rounds(out, count);
            let _ = writeln!(
                out,
                "      *(__local uint*)&{tile_a_stage}[l / {per_row}][(l % {per_row}) * 4] = fetch_a[r];\n    }}"
            );
        }
        let blocks_n = self.spec.config.tile_n / 4;
        self.rounds(out, self.b_blocks());
        let _ = writeln!(
            out,
            "      const int kk = (l / {blocks_n}) * 4, nn = (l % {blocks_n}) * 4;\n      #pragma unroll\n      for (int c = 0; c < 4; ++c) *(__local uint*)&{tile_b_stage}[nn + c][kk] = fetch_b[r][c];\n    }}"
        );
    }
}

/// Whether a plain int8 A (no offset expression, no computed element)
/// can be read as `char4` along k.
fn aligned_a(spec: &GemmSpec) -> bool {
    spec.a_offset.is_none() && aligned(&spec.a, spec.shape.k, 4)
}

/// Whether the int8 template can run `spec`: K steps of whole words, and
/// a computed 4-channel A element only with K a multiple of 4.
pub(super) fn validate(spec: &GemmSpec) -> Result<(), String> {
    let c = spec.config;
    if !c.tile_k.is_multiple_of(4) || !c.tile_n.is_multiple_of(4) {
        return Err(format!(
            "{}: an int8 GEMM needs tile_k and tile_n multiples of 4",
            spec.name
        ));
    }
    if spec.a_element_vector && spec.shape.k % 4 != 0 {
        return Err(format!(
            "{}: a 4-channel int8 A element needs K a multiple of 4",
            spec.name
        ));
    }
    Ok(())
}

/// The OpenCL C body's k loop over `[k_begin, k_end)`: stage, barrier,
/// fetch the next tile, multiply the current one 4 k at a time.
pub(super) fn integer_main_loop(
    out: &mut String,
    staging: &Int8Staging,
    (k_begin, k_end): (&str, &str),
) {
    let c = staging.spec.config;
    let (threads_n, threads_m) = c.threads();
    staging.declare(out);
    staging.fetch(out, "tile_a", k_begin);
    let _ = writeln!(
        out,
        "  for (tcc_index k0 = {k_begin}; k0 < {k_end}; k0 += {}) {{",
        c.tile_k
    );
    staging.store(out, "tile_a", "tile_b");
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(
        out,
        "    if (k0 + {tk} < {k_end}) {{\n    const tcc_index k_next = k0 + {tk};",
        tk = c.tile_k
    );
    staging.fetch(out, "tile_a", "k_next");
    let _ = writeln!(out, "    }}");
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int kk = 0; kk < {tk}; kk += 4) {{\n      int4 ra[{wm}], rb[{wn}];\n      #pragma unroll\n      for (int w = 0; w < {wm}; ++w) ra[w] = convert_int4(*(__local const char4*)&tile_a[ty + w * {threads_m}][kk]);\n      #pragma unroll\n      for (int w = 0; w < {wn}; ++w) rb[w] = convert_int4(*(__local const char4*)&tile_b[tx + w * {threads_n}][kk]);",
        tk = c.tile_k,
        wm = c.work_m,
        wn = c.work_n,
    );
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int wm = 0; wm < {}; ++wm)\n        #pragma unroll\n        for (int wn = 0; wn < {}; ++wn)\n          acc[wm][wn] += ra[wm].x * rb[wn].x + ra[wm].y * rb[wn].y + ra[wm].z * rb[wn].z + ra[wm].w * rb[wn].w;\n    }}\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }}",
        c.work_m, c.work_n
    );
}

/// One stage's `mma.sync.m16n8k32` steps of the PTX body: per 32 k each
/// warp loads its A fragments (`mi` blocks of 16 rows) by `ldmatrix.x4`
/// (matrices: rows 0-7 and 8-15 of k 0-15, then of k 16-31) and its B
/// fragments (`ni` blocks of 8 columns, 4 k per word: k `4 tig` and `16 +
/// 4 tig` of column `group`), two blocks per `ldmatrix.x4` where `ni` is
/// even, and issues `mi * ni` `mma`s into `acc`.
pub(super) fn mma_steps(out: &mut String, tile_k: u32, mi: u32, ni: u32) {
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int ks = 0; ks < {tile_k}; ks += 32) {{\n      uint fa[{mi}][4], fb[{ni}][2];\n      #pragma unroll\n      for (int m = 0; m < {mi}; ++m)\n        TCC_LDMATRIX_X4(fa[m][0], fa[m][1], fa[m][2], fa[m][3], &tile_a[stage][warp_row + m * 16 + lane % 16][ks + (lane / 16) * 16]);"
    );
    if ni.is_multiple_of(2) {
        let _ = writeln!(
            out,
            "      #pragma unroll\n      for (int n = 0; n < {ni}; n += 2)\n        TCC_LDMATRIX_X4(fb[n][0], fb[n][1], fb[n + 1][0], fb[n + 1][1], &tile_b[stage][warp_col + (n + lane / 16) * 8 + lane % 8][ks + ((lane / 8) % 2) * 16]);"
        );
    } else {
        let _ = writeln!(
            out,
            "      #pragma unroll\n      for (int n = 0; n < {ni}; ++n) {{\n        const int col = warp_col + n * 8 + group;\n        fb[n][0] = *(__local const uint*)&tile_b[stage][col][ks + 4 * tig];\n        fb[n][1] = *(__local const uint*)&tile_b[stage][col][ks + 16 + 4 * tig];\n      }}"
        );
    }
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int m = 0; m < {mi}; ++m)\n        #pragma unroll\n        for (int n = 0; n < {ni}; ++n)\n          TCC_MMA_S8(acc[2 * m][2 * n], acc[2 * m][2 * n + 1], acc[2 * m + 1][2 * n], acc[2 * m + 1][2 * n + 1], fa[m][0], fa[m][1], fa[m][2], fa[m][3], fb[n][0], fb[n][1]);\n    }}"
    );
}
