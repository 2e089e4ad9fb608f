//! The Hopper main loop of the TF32 GEMM template: warpgroup `wgmma`
//! (sm_90a) instead of `mma.sync`, for plain row-major float operands whose
//! sizes divide its tile (`Wgmma::applies`); everything else keeps the
//! `mma.sync` body (`tensor_cores`).
//!
//! For TF32, `wgmma` reads both shared-memory operands K-major only, and a
//! row-major B is not. So the product runs transposed, `C^T = B^T A^T`:
//! wgmma's A operand is `B^T`, taken from registers (each thread loads its
//! fragment words straight from global memory as `float4`s, one stage
//! ahead, rounded to TF32 by adding half an ulp as the `mma.sync` body
//! does); wgmma's B operand is `A^T`,
//! read from local memory through a matrix descriptor: A's rows are K-major
//! already, and 16-byte `cp.async` copies write them straight into the
//! no-swizzle core-matrix layout (8 rows x 16 bytes per core matrix, the
//! copy index times 16 is the byte offset). The tensor core reads those A
//! words as they are (the low 13 bits ignored: truncation to TF32).
//!
//! A work-group of 256 (two warpgroups) computes a 128x256 tile of C with
//! `m64n128k8` instructions, 128 accumulators per thread; local memory
//! holds only A, three stages of 128x32 (48 KiB, NVIDIA's OpenCL limit).
//! The configuration's tile is 128x128 (the launch grid is made from it),
//! so work-groups of odd column index return at once and even ones compute
//! their own tile and the next. Measured on the H100 in CUDA before the
//! port (scripts/wgmma-proto, docs/benchmarks.md): 189 TF/s at 4096^3.

use std::fmt::Write as _;

use super::GemmSpec;
use crate::Storage;

/// Rows of C per work-group (wgmma's N).
const ROWS: u32 = 128;
/// Columns of C per work-group: two warpgroups of two 64-column halves
/// (wgmma's M is 64).
const COLUMNS: u32 = 256;
/// The k of one local-memory stage, and the stages (3 x 16 KiB).
const STAGE_K: u32 = 32;
const STAGES: u32 = 3;
/// 64-column halves per warpgroup.
const HALVES: u32 = 2;
/// k per `wgmma` (TF32).
const WGMMA_K: u32 = 8;

/// The work-group tile the configuration must have (the launch grid's):
/// 128x128 with 256 work-items and no split of K.
const CONFIG_TILE: u32 = 128;
const THREADS: u32 = 256;

/// The wgmma body of one GEMM.
pub(super) struct Wgmma;

impl Wgmma {
    /// Whether `spec` takes the wgmma body: TF32, the 128x128 tile of 256
    /// work-items unsplit, A and B float buffers read through their
    /// strides (A's and B's rows 16-byte aligned: `cp.async`, `float4`
    /// loads), and M, N, K
    /// multiples of the work-group's 128x256 tile and of the stage's k.
    pub(super) fn applies(spec: &GemmSpec) -> bool {
        let c = spec.config;
        let s = spec.shape;
        spec.tensor_cores == Some(super::TensorCores::Tf32)
            && (c.tile_m, c.tile_n, c.split_k) == (CONFIG_TILE, CONFIG_TILE, 1)
            && c.workgroup_size() == THREADS
            && spec.split_k_scratch.is_none()
            && spec.a.buffer.storage == Storage::F32
            && spec.b.buffer.storage == Storage::F32
            && spec.a_offset.is_none()
            && spec.a_element.is_none()
            && spec.b_offset.is_none()
            && spec.a.vectorizable(s.k)
            && spec.b.vectorizable(s.n)
            && s.m % ROWS as i64 == 0
            && s.n % COLUMNS as i64 == 0
            && s.k % STAGE_K as i64 == 0
    }

    /// The accumulator's dimensions: `acc[wm][wn]` holds C row
    /// `8 (wm / 2) + 2 tig + wm % 2` and column `wg_col + wn` of the
    /// work-group's tile (the wgmma D fragment, transposed: D row `group +
    /// 8 b` of half `h` is C column `wg_col + 2 h + b`).
    pub(super) fn acc() -> (u32, u32) {
        (ROWS / 4, 2 * HALVES)
    }

    /// C expressions for the tile row of `acc` row `wm` and the tile
    /// column of `acc` column `wn`.
    pub(super) fn offsets() -> (String, String) {
        (
            "(8 * (wm / 2) + 2 * tig + wm % 2)".to_string(),
            "(wg_col + wn)".to_string(),
        )
    }

    /// How the kernel's comment names the body.
    pub(super) fn description() -> String {
        format!(
            " on TF32 wgmma (2 warpgroups, {ROWS}x{COLUMNS} per even work-group, {STAGES} stages of k {STAGE_K})"
        )
    }

    /// Declares the local tiles: A's stages in core-matrix order.
    pub(super) fn local_tiles(out: &mut String) {
        let _ = writeln!(
            out,
            "  __local float tile_a[{STAGES}][{}] __attribute__((aligned(128)));",
            ROWS * STAGE_K
        );
    }

    /// The work-item's fragment coordinates, the early return of odd
    /// work-groups and the k loop (A by `cp.async`, B's fragments by
    /// loads one stage ahead, eight `wgmma`s per stage and warpgroup).
    pub(super) fn main_loop(out: &mut String, spec: &GemmSpec, a_address: &str) {
        let s = spec.shape;
        let k_tiles = s.k / STAGE_K as i64;
        let row_stride = spec.b.row_stride;
        let b_base = spec.b.address("b", "tig", "(col0 + wg_col)");
        let _ = writeln!(
            out,
            "  /* wgmma: C^T = B^T A^T; A by cp.async into core matrices, B's fragments from global memory */
  const int warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int wg_col = (warp / 4) * {} + (warp % 4) * 32 + 4 * group;
  if (get_group_id(0) % 2 != 0) return;
  __global const float* b_frag = {} + {b_base};
  float fetched[{}][{HALVES}][4];
  uint frag[{}][{HALVES}][4];",
            64 * HALVES,
            spec.b.buffer,
            STAGE_K / WGMMA_K,
            STAGE_K / WGMMA_K,
        );
        for stage in 0..STAGES - 1 {
            let _ = writeln!(out, "  if ({stage} < {k_tiles}) {{");
            copy_a(out, spec, a_address, &stage.to_string(), &stage.to_string());
            let _ = writeln!(out, "  }}\n  tcc_cp_async_commit();");
        }
        fetch_b(out, "0", row_stride);
        let _ = writeln!(
            out,
            "  for (int kt = 0; kt < {k_tiles}; ++kt) {{
    #pragma unroll
    for (int s = 0; s < {}; ++s)
      #pragma unroll
      for (int h = 0; h < {HALVES}; ++h)
        #pragma unroll
        for (int e = 0; e < 4; ++e) frag[s][h][e] = as_uint(fetched[s][h][e]) + 0x1000u;
    TCC_CP_ASYNC_WAIT({});
    __asm__ volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");
    barrier(CLK_LOCAL_MEM_FENCE);
    if (kt + {} < {k_tiles}) {{",
            STAGE_K / WGMMA_K,
            STAGES - 2,
            STAGES - 1,
        );
        copy_a(
            out,
            spec,
            a_address,
            &format!("(kt + {}) % {STAGES}", STAGES - 1),
            &format!("kt + {}", STAGES - 1),
        );
        let _ = writeln!(
            out,
            "    }}
    tcc_cp_async_commit();
    const uint a_stage = (uint)(ulong)&tile_a[kt % {STAGES}][0];
    __asm__ volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");"
        );
        for step in 0..STAGE_K / WGMMA_K {
            let _ = writeln!(
                out,
                "    const ulong desc{step} = {};",
                descriptor(&format!("a_stage + {}", step * 256))
            );
            for half in 0..HALVES {
                wgmma(out, step, half, &format!("desc{step}"));
            }
        }
        let _ = writeln!(
            out,
            "    __asm__ volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");
    if (kt + 1 < {k_tiles}) {{"
        );
        fetch_b(out, "kt + 1", row_stride);
        let _ = writeln!(
            out,
            "    }}
    __asm__ volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");
  }}"
        );
    }
}

/// `cp.async` copies of A's k tile `tile` into `tile_a[stage]`: copy `q`
/// (16 bytes, 4 of k) holds row `8 (q / 64) + q % 8` and k `4 ((q / 8) %
/// 8)`, so that each core matrix (8 rows x 16 bytes) is contiguous: the
/// layout's k-adjacent core matrices lie 128 bytes apart, row-adjacent
/// ones 1024 (the descriptor's leading and stride offsets). Eight
/// consecutive copies fill 128 contiguous bytes (no bank conflicts).
fn copy_a(out: &mut String, spec: &GemmSpec, a_address: &str, stage: &str, tile: &str) {
    let copies = ROWS * STAGE_K / 4;
    let chunks = STAGE_K / 4;
    let _ = writeln!(
        out,
        "    #pragma unroll
    for (int c = 0; c < {}; ++c) {{
      const int q = tid + c * {THREADS};
      const tcc_index i = row0 + (q / {}) * 8 + q % 8;
      const tcc_index k = (tcc_index)({tile}) * {STAGE_K} + 4 * ((q / 8) % {chunks});
      tcc_cp_async16(&tile_a[{stage}][q * 4], {} + {a_address}, 16);
    }}",
        copies / THREADS,
        8 * chunks,
        spec.a.buffer,
    );
}

/// Loads the B fragments of k tile `tile` into `fetched[step][half]`:
/// wgmma's A fragment (PTX ISA, m64nNk8 TF32) holds rows `group` and
/// `group + 8` of the warp's 16 at k `tig` and `tig + 4`. Rows map to C
/// columns so that a work-item's four rows of one k (two per half) are 4
/// adjacent columns, `wg_col .. wg_col + 3` (see `Wgmma::offsets`): one
/// `float4` per k, a warp's load 4 rows of 128 contiguous bytes.
fn fetch_b(out: &mut String, tile: &str, row_stride: i64) {
    let _ = writeln!(
        out,
        "    #pragma unroll
    for (int s = 0; s < {}; ++s) {{
      __global const float* p = b_frag + ((tcc_index)({tile}) * {STAGE_K} + s * {WGMMA_K}) * {row_stride};
      const float4 lo = *(__global const float4*)p, hi = *(__global const float4*)(p + 4 * {row_stride});
      fetched[s][0][0] = lo.x; fetched[s][0][1] = lo.y; fetched[s][0][2] = hi.x; fetched[s][0][3] = hi.y;
      fetched[s][1][0] = lo.z; fetched[s][1][1] = lo.w; fetched[s][1][2] = hi.z; fetched[s][1][3] = hi.w;
    }}",
        STAGE_K / WGMMA_K
    );
}

/// A shared-memory matrix descriptor (PTX ISA, wgmma): the start address
/// >> 4 in bits 0-13, the leading (k-adjacent core matrices, 128 bytes)
/// and stride (row-adjacent, `STAGE_K / 4` x 128 bytes) byte offsets >> 4
/// in bits 16-29 and 32-45, no swizzle.
fn descriptor(address: &str) -> String {
    let leading = 128u64 >> 4;
    let stride = (u64::from(STAGE_K / 4) * 128) >> 4;
    format!(
        "(ulong)((({address}) & 0x3FFFF) >> 4) | {}ul",
        (leading << 16) | (stride << 32)
    )
}

/// One `wgmma.mma_async.m64n128k8` of k step `step` for the warpgroup's
/// 64-column half `half`: D element `4 j + e` is `acc[2 j + e % 2][2 half
/// + e / 2]`; A from the `frag` registers, B through `desc`.
fn wgmma(out: &mut String, step: u32, half: u32, desc: &str) {
    let elements = ROWS / 2;
    let outputs: Vec<String> = (0..elements).map(|d| format!("%{d}")).collect();
    let accumulators: Vec<String> = (0..elements)
        .map(|d| {
            format!(
                "\"+f\"(acc[{}][{}])",
                2 * (d / 4) + d % 2,
                2 * half + (d % 4) / 2
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "    __asm__ volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{scale}, 0; wgmma.mma_async.sync.aligned.m64n{ROWS}k8.f32.tf32.tf32 {{{}}}, {{%{a0}, %{a1}, %{a2}, %{a3}}}, %{d}, p, 1, 1; }}\"
      : {}
      : \"r\"(frag[{step}][{half}][0]), \"r\"(frag[{step}][{half}][1]), \"r\"(frag[{step}][{half}][2]), \"r\"(frag[{step}][{half}][3]), \"l\"({desc}), \"r\"(1));",
        outputs.join(", "),
        accumulators.join(", "),
        a0 = elements,
        a1 = elements + 1,
        a2 = elements + 2,
        a3 = elements + 3,
        d = elements + 4,
        scale = elements + 5,
    );
}
