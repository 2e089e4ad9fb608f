//! The Hopper main loop of the TF32 GEMM template: warpgroup `wgmma`
//! (sm_90a) instead of `mma.sync`, for plain row-major float operands whose
//! sizes divide its tile (`Wgmma::applies`); everything else keeps the
//! `mma.sync` body (`tensor_cores`).
//!
//! For TF32, `wgmma` reads both shared-memory operands K-major only, and a
//! row-major B is not. So the product runs transposed, `C^T = B^T A^T`:
//! wgmma's A operand is `B^T`, taken from registers (each thread loads its
//! fragment words straight from global memory as `float2`s, `.cg`, one
//! stage ahead, rounded to TF32 by adding half an ulp as the `mma.sync`
//! body does); wgmma's B operand is `A^T`, read from local memory through a
//! matrix descriptor: A's rows are K-major already, and 16-byte `cp.async`
//! copies write them straight into the 128-byte swizzle layout (a stage's
//! 32 of k are one 128-byte row; the swizzle avoids the bank conflicts of
//! the plain core-matrix layout: 189 against 233 TF/s in the prototype).
//! The tensor core reads those A words as they are (the low 13 bits
//! ignored: truncation to TF32).
//!
//! A work-group of 256 (two warpgroups) computes the configuration's
//! 128x128 tile with `m64n128k8` instructions, 64 accumulators per thread;
//! local memory holds only A, three stages of 128x32 (48 KiB, NVIDIA's
//! OpenCL limit). Two work-groups fit an SM (126 registers), so one's
//! barrier hides behind the other's wgmmas: Nsight Compute finds the loop
//! bound by L1's load/store data pipe (LSU wavefronts 85% of peak; B's
//! fragment loads, 64 bytes per row of k per warp, are most of them), not
//! by the tensor pipe's drains, and an mbarrier pipeline without a block
//! barrier (wait_group 1) ran slower (206 TF/s). On the H100
//! (docs/benchmarks.md): 246 TF/s at 4096^3 (plain B loads 238; the
//! `mma.sync` body 129; cuBLAS about 410).

use std::fmt::Write as _;

use super::GemmSpec;
use crate::Storage;

/// Rows of C per work-group (wgmma's N).
const ROWS: u32 = 128;
/// Columns of C per work-group: two warpgroups of 64 (wgmma's M).
const COLUMNS: u32 = 128;
/// The k of one local-memory stage, and the stages (3 x 16 KiB).
const STAGE_K: u32 = 32;
const STAGES: u32 = 3;
/// k per `wgmma` (TF32).
const WGMMA_K: u32 = 8;

/// Work-items per work-group: two warpgroups.
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
            && (c.tile_m, c.tile_n, c.split_k) == (ROWS, COLUMNS, 1)
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
    /// 8 b` is C column `wg_col + b`).
    pub(super) fn acc() -> (u32, u32) {
        (ROWS / 4, 2)
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
        format!(" on TF32 wgmma (2 warpgroups, {STAGES} stages of k {STAGE_K}, 128-byte swizzle)")
    }

    /// Declares the local tiles: A's stages, 128-byte rows swizzled in
    /// 1024-byte atoms (which the swizzle needs aligned).
    pub(super) fn local_tiles(out: &mut String) {
        let _ = writeln!(
            out,
            "  __local float tile_a[{STAGES}][{}] __attribute__((aligned(1024)));",
            ROWS * STAGE_K
        );
    }

    /// The work-item's fragment coordinates and the k loop (A by
    /// `cp.async`, B's fragments by loads one stage ahead, four `wgmma`s
    /// per stage and warpgroup).
    pub(super) fn main_loop(out: &mut String, spec: &GemmSpec, a_address: &str) {
        let s = spec.shape;
        let k_tiles = s.k / STAGE_K as i64;
        let row_stride = spec.b.row_stride;
        let b_base = spec.b.address("b", "tig", "(col0 + wg_col)");
        let _ = writeln!(
            out,
            "  /* wgmma: C^T = B^T A^T; A by cp.async into 128-byte swizzled rows, B's fragments from global memory */
  const int warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int wg_col = (warp / 4) * 64 + (warp % 4) * 16 + 2 * group;
  __global const float* b_frag = {} + {b_base};
  float fetched[{}][4];
  uint frag[{}][4];",
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
      for (int e = 0; e < 4; ++e) frag[s][e] = as_uint(fetched[s][e]) + 0x1000u;
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
                descriptor(&format!("a_stage + {}", step * WGMMA_K * 4))
            );
            wgmma(out, step, &format!("desc{step}"));
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

/// `cp.async` copies of A's k tile `tile` into `tile_a[stage]`, in the
/// 128-byte swizzle layout: row `m` is 128 bytes (32 of k), its 16-byte
/// chunk `c` stored at chunk `c ^ (m % 8)`. Copy `q` is row `q / 8`,
/// chunk `q % 8`: eight consecutive copies read 128 contiguous bytes and
/// fill one row (no bank conflicts).
fn copy_a(out: &mut String, spec: &GemmSpec, a_address: &str, stage: &str, tile: &str) {
    let chunks = STAGE_K / 4;
    let _ = writeln!(
        out,
        "    #pragma unroll
    for (int c = 0; c < {}; ++c) {{
      const int q = tid + c * {THREADS}, m = q / {chunks}, chunk = q % {chunks};
      const tcc_index i = row0 + m;
      const tcc_index k = (tcc_index)({tile}) * {STAGE_K} + 4 * chunk;
      tcc_cp_async16(&tile_a[{stage}][m * {STAGE_K} + ((chunk ^ (m % 8)) * 4)], {} + {a_address}, 16);
    }}",
        ROWS * chunks / THREADS,
        spec.a.buffer,
    );
}

/// Loads the B fragments of k tile `tile` into `fetched[step]`: wgmma's
/// A fragment (PTX ISA, m64nNk8 TF32) holds rows `group` and `group + 8`
/// of the warp's 16 at k `tig` and `tig + 4`. Those two rows are the C
/// columns `wg_col` and `wg_col + 1` (see `Wgmma::offsets`): one `float2`
/// per k, loaded `.cg` (cached in L2 only: the loop is bound by L1's load
/// wavefronts, not by L2; 246 against 238 TF/s at 4096^3 for plain loads,
/// docs/benchmarks.md).
fn fetch_b(out: &mut String, tile: &str, row_stride: i64) {
    let _ = writeln!(
        out,
        "    #pragma unroll
    for (int s = 0; s < {}; ++s) {{
      __global const float* p = b_frag + ((tcc_index)({tile}) * {STAGE_K} + s * {WGMMA_K}) * {row_stride};
      __asm__ volatile(\"ld.global.cg.v2.f32 {{%0, %1}}, [%4]; ld.global.cg.v2.f32 {{%2, %3}}, [%5];\"
                       : \"=f\"(fetched[s][0]), \"=f\"(fetched[s][1]), \"=f\"(fetched[s][2]), \"=f\"(fetched[s][3])
                       : \"l\"(p), \"l\"(p + 4 * {row_stride}));
    }}",
        STAGE_K / WGMMA_K
    );
}

/// A shared-memory matrix descriptor (PTX ISA, wgmma) of the 128-byte
/// swizzle, K-major: the start address >> 4 in bits 0-13 (a k step of 8
/// advances it by 32 bytes inside the swizzled row), the leading byte
/// offset (unused here, 16 bytes) and the stride byte offset (1024: from
/// one 8-row atom to the next) >> 4 in bits 16-29 and 32-45, swizzle mode 1
/// (128 bytes) in bits 62-63.
fn descriptor(address: &str) -> String {
    let leading = 16u64 >> 4;
    let stride = 1024u64 >> 4;
    format!(
        "(ulong)((({address}) & 0x3FFFF) >> 4) | {}ul",
        (leading << 16) | (stride << 32) | (1u64 << 62)
    )
}

/// One `wgmma.mma_async.m64n128k8` of k step `step`: D element `4 j +
/// e` is `acc[2 j + e % 2][e / 2]`; A from the `frag` registers, B
/// through `desc`.
fn wgmma(out: &mut String, step: u32, desc: &str) {
    let elements = ROWS / 2;
    let outputs: Vec<String> = (0..elements).map(|d| format!("%{d}")).collect();
    let accumulators: Vec<String> = (0..elements)
        .map(|d| format!("\"+f\"(acc[{}][{}])", 2 * (d / 4) + d % 2, (d % 4) / 2))
        .collect();
    let _ = writeln!(
        out,
        "    __asm__ volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{scale}, 0; wgmma.mma_async.sync.aligned.m64n{ROWS}k8.f32.tf32.tf32 {{{}}}, {{%{a0}, %{a1}, %{a2}, %{a3}}}, %{d}, p, 1, 1; }}\"
      : {}
      : \"r\"(frag[{step}][0]), \"r\"(frag[{step}][1]), \"r\"(frag[{step}][2]), \"r\"(frag[{step}][3]), \"l\"({desc}), \"r\"(1));",
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
