//! The large-tile Hopper TF32 GEMM body, for kernels the runtime launches
//! through the CUDA driver (`tcc compile --backend=cuda`): a 256x128 tile
//! per work-group whose operands are staged in 193 KiB of CUDA dynamic
//! shared memory, more than the 48 KiB NVIDIA's OpenCL gives a kernel.
//!
//! Why a second body: the 48 KiB body (`wgmma`) stops at 270 TF/s at
//! 4096^3 on the H100; session 14's prototype (`scripts/wgmma-proto/tma.cu`,
//! variant S, in git history at aaeb302) found this layout at 377-379 TF/s (cuBLAS 403), and every
//! variant within 48 KiB at or below 270 (docs/benchmarks.md).
//!
//! The product runs transposed as in `wgmma`, `C^T = B^T A^T`: wgmma's N
//! (256) is the tile's rows of C, read from local memory through a matrix
//! descriptor (A's rows are K-major); wgmma's M is C's columns, 64 per
//! warpgroup, two warpgroups. Each of 4 stages holds A's 256 x 32 k tile
//! and B's 32 x 128 k tile, both copied by the tensor memory accelerator
//! from the row-major tensors in the 128-byte swizzle (A as one box, B as
//! four boxes of 32 rows of 32 floats), one mbarrier per stage counting
//! both. B's fragments (wgmma's register operand) are `ld.shared.v2`
//! loads: a warp's C columns are spread over the even or odd 16-byte
//! chunks of a box row, so that the four k rows a load touches take two
//! wavefronts under the swizzle. One wgmma group stays in flight
//! (`wgmma.wait_group 1`), with the fragments double-buffered; the stage
//! refilled is the one read two k tiles back, which every warp has waited
//! for by then.
//!
//! The dynamic local memory is the PTX symbol [`DYNAMIC_LOCAL_SYMBOL`],
//! which the PTX back end declares; the kernel text says how many bytes it
//! needs with [`dynamic_local_marker`], which the back end turns into the
//! PTX comment the runtime's CUDA backend reads.

use std::fmt::Write as _;

use super::tma_stage::{TmaStage, copy_stage};
use super::wgmma::{
    TENSOR_MAP_BYTES, build_tensor_map, descriptor, landed_wait, map_slot, tensor_map_fences,
    wgmma_instruction,
};
use super::{GemmConfig, GemmShape, GemmSpec};

/// Rows of C per work-group (wgmma's N).
const ROWS: u32 = 256;
/// Columns of C per work-group: two warpgroups of 64 (wgmma's M).
const COLUMNS: u32 = 128;
/// The k of one stage (one 128-byte swizzled row) and the stages.
const STAGE_K: u32 = 32;
const STAGES: u32 = 4;
/// k per `wgmma` (TF32).
const WGMMA_K: u32 = 8;
/// Work-items per work-group: two warpgroups.
const THREADS: u32 = 256;
/// Bytes of A's and B's k tiles in one stage.
const A_TILE_BYTES: u32 = ROWS * STAGE_K * 4;
const B_TILE_BYTES: u32 = COLUMNS * STAGE_K * 4;
const STAGE_BYTES: u32 = A_TILE_BYTES + B_TILE_BYTES;
/// B's boxes: 32 columns (128 bytes) of the stage's 32 k rows each.
const B_BOX_COLUMNS: u32 = 32;
const B_BOX_BYTES: u32 = B_BOX_COLUMNS * STAGE_K * 4;

/// The dynamic local memory the body takes: the stages, and 1024 bytes to
/// align them to the 1024-byte atoms the 128-byte swizzle needs.
pub const DYNAMIC_LOCAL_BYTES: u32 = STAGES * STAGE_BYTES + 1024;

/// The PTX symbol of CUDA's dynamic shared memory that the body addresses
/// (`.extern .shared .b8 tcc_dynamic_local[]`).
pub const DYNAMIC_LOCAL_SYMBOL: &str = "tcc_dynamic_local";

/// The comment that starts a kernel text's statement of the dynamic local
/// memory its PTX form needs: `/* tcc-dynamic-local: BYTES */`.
const MARKER: &str = "/* tcc-dynamic-local: ";

/// The comment a kernel's text carries when its PTX form needs `bytes` of
/// dynamic local memory.
pub fn dynamic_local_marker(bytes: u32) -> String {
    format!("{MARKER}{bytes} */")
}

/// The dynamic local memory a kernel's text says its PTX form needs (the
/// largest where it says so more than once), if it says so.
pub fn dynamic_local_bytes(kernel_text: &str) -> Option<u32> {
    kernel_text
        .match_indices(MARKER)
        .filter_map(|(at, _)| {
            let rest = &kernel_text[at + MARKER.len()..];
            rest.split_once(" */")?.0.parse().ok()
        })
        .max()
}

/// The configuration of the large tile: 256 x 128 outputs over 256
/// work-items (16 x 8 each in the fp32 fallback, whose k step of 8 keeps
/// its two local stages and the `mma.sync` fallback's within 48 KiB).
pub const LARGE_TILE: GemmConfig = GemmConfig {
    tile_m: ROWS,
    tile_n: COLUMNS,
    tile_k: 8,
    work_m: 16,
    work_n: 8,
    split_k: 1,
    k_lanes: 1,
};

/// Whether a product of `shape` can take the large tile: its sizes are
/// multiples of the tile and of the stage's k.
pub fn large_tile_fits(shape: &GemmShape) -> bool {
    shape.m > 0
        && shape.n > 0
        && shape.k > 0
        && shape.m % ROWS as i64 == 0
        && shape.n % COLUMNS as i64 == 0
        && shape.k % STAGE_K as i64 == 0
}

/// The tensor-map scratch of a GEMM of `config` over `shape` that may take
/// this body: two maps (A's and B's) per work-group.
pub(super) fn slot_bytes(config: &GemmConfig, shape: &GemmShape) -> Option<i64> {
    (*config == LARGE_TILE && large_tile_fits(shape)).then(|| {
        2 * TENSOR_MAP_BYTES
            * shape.batch.max(1)
            * (shape.m / ROWS as i64)
            * (shape.n / COLUMNS as i64)
    })
}

/// The large-tile wgmma body of one GEMM.
pub(super) struct WgmmaLarge;

impl WgmmaLarge {
    /// Whether `spec` takes this body: TF32 on the large tile, launched
    /// with dynamic local memory (`GemmSpec::dynamic_local`), with the
    /// operands and slots the 48 KiB body needs too (`Wgmma::plain`).
    pub(super) fn applies(spec: &GemmSpec) -> bool {
        spec.dynamic_local
            && spec.config == LARGE_TILE
            && spec.config.workgroup_size() == THREADS
            && slot_bytes(&spec.config, &spec.shape).is_some()
            && super::wgmma::Wgmma::plain(spec)
    }

    /// The accumulator's dimensions: `acc[wm][wn]` holds C row `8 (wm /
    /// 2) + 2 tig + wm % 2` and column `wg_col + wn` of the tile.
    pub(super) fn acc() -> (u32, u32) {
        (ROWS / 4, 2)
    }

    /// C expressions for the tile row of `acc` row `wm` and the tile
    /// column of `acc` column `wn`: the 48 KiB body's fragment layout (this
    /// body names its work-item's first column `wg_col` too).
    pub(super) fn offsets() -> (String, String) {
        super::wgmma::Wgmma::offsets()
    }

    pub(super) fn description() -> String {
        format!(
            " on TF32 wgmma (2 warpgroups, {STAGES} stages of k {STAGE_K} of A and B copied by the TMA into {DYNAMIC_LOCAL_BYTES} bytes of CUDA dynamic local memory)"
        )
    }

    /// Declares the stages' mbarriers (the stages themselves are dynamic
    /// local memory) and states the dynamic local memory needed.
    pub(super) fn local_tiles(out: &mut String) {
        let _ = writeln!(
            out,
            "  {}\n  __local ulong tile_full[{STAGES}] __attribute__((aligned(8)));",
            dynamic_local_marker(DYNAMIC_LOCAL_BYTES)
        );
    }

    /// The work-item's fragment coordinates, the tensor maps and the k
    /// loop.
    pub(super) fn main_loop(out: &mut String, spec: &GemmSpec) {
        let s = spec.shape;
        let k_tiles = s.k / STAGE_K as i64;
        let slots = spec
            .tensor_map_slots
            .as_ref()
            .expect("WgmmaLarge::applies checked the slots");
        let _ = writeln!(
            out,
            "  /* wgmma, large tile: C^T = B^T A^T; A's and B's k tiles by the TMA into 128-byte swizzled rows of dynamic local memory, B's fragments from there */
  const int warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  /* this work-item's pair of C columns: B box warp / 2, float f of the box's {B_BOX_COLUMNS} */
  const int f = 4 * (warp % 2) + 8 * (group / 2) + 2 * (group % 2);
  const int wg_col = {B_BOX_COLUMNS} * (warp / 2) + f;
  uint stages;
  __asm__(\"mov.u32 %0, {DYNAMIC_LOCAL_SYMBOL};\" : \"=r\"(stages));
  stages = (stages + 1023u) & ~1023u;
  uint frag0[{steps}][4], frag1[{steps}][4];
  /* this work-group's tensor maps of A and B (tcc-attach-tensor-map-slots) */
  __global uint* a_map = {a_slot};
  __global uint* b_map = a_map + {map_words};
  if (tid == 0) {{",
            steps = STAGE_K / WGMMA_K,
            a_slot = map_slot(slots, 2 * TENSOR_MAP_BYTES),
            map_words = TENSOR_MAP_BYTES / 4,
        );
        build_tensor_map(
            out,
            "a",
            &format!("{} + {}", spec.a.buffer, spec.a.address("b", "0", "0")),
            [s.k, s.m],
            spec.a.row_stride * 4,
            [STAGE_K, ROWS],
        );
        build_tensor_map(
            out,
            "b",
            &format!("{} + {}", spec.b.buffer, spec.b.address("b", "0", "0")),
            [s.n, s.k],
            spec.b.row_stride * 4,
            [B_BOX_COLUMNS, STAGE_K],
        );
        tensor_map_fences(out, &["a_map", "b_map"]);
        let _ = writeln!(
            out,
            "    #pragma unroll
    for (int st = 0; st < {STAGES}; ++st)
      __asm__ volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"((uint)(ulong)&tile_full[st]) : \"memory\");
    __asm__ volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");
  }}
  barrier(CLK_LOCAL_MEM_FENCE);
  if (tid == 0) {{"
        );
        for unit in 0..(STAGES as i64).min(k_tiles) {
            copy_stage(out, &unit.to_string(), &TMA_STAGE);
        }
        let _ = writeln!(out, "  }}");
        let _ = writeln!(out, "  for (int kt = 0; kt + 1 < {k_tiles}; kt += 2) {{");
        step(out, "kt", "frag0", k_tiles);
        step(out, "kt + 1", "frag1", k_tiles);
        let _ = writeln!(out, "  }}");
        if k_tiles % 2 == 1 {
            let _ = writeln!(out, "  {{");
            step(out, &(k_tiles - 1).to_string(), "frag0", k_tiles);
            let _ = writeln!(out, "  }}");
        }
        let _ = writeln!(
            out,
            "  __asm__ volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");"
        );
    }
}

/// One k tile `kt` with fragments in `frag`: wait for its stage, refill
/// the stage read two tiles back, load B's fragments (wgmma's A: rows
/// `group` and `group + 8` at k `tig` and `tig + 4` are C columns `wg_col`
/// and `wg_col + 1`; the 128-byte swizzle puts row `k`'s 16-byte chunk `c`
/// at `c ^ (k % 8)`), rounded to TF32 by adding half an ulp, then four
/// `m64n256k8` and leave them in flight.
fn step(out: &mut String, kt: &str, frag: &str, k_tiles: i64) {
    let _ = writeln!(
        out,
        "    {{
      const int tile = {kt};
      const uint slot = (uint)tile % {STAGES}u;"
    );
    landed_wait(
        out,
        "tile_full[slot]",
        &format!("((uint)tile / {STAGES}u) & 1u"),
    );
    let _ = writeln!(
        out,
        "      barrier(CLK_LOCAL_MEM_FENCE);
      if (tid == 0 && tile >= 2 && tile + {ahead} < {k_tiles}) {{",
        ahead = STAGES - 2
    );
    copy_stage(out, &format!("tile + {}", STAGES - 2), &TMA_STAGE);
    let _ = writeln!(
        out,
        "      }}
      const uint st = stages + slot * {STAGE_BYTES}u;
      const uint b_box = st + {A_TILE_BYTES}u + (uint)(warp / 2) * {B_BOX_BYTES}u;
      #pragma unroll
      for (int s = 0; s < {steps}; ++s)
        #pragma unroll
        for (int h = 0; h < 2; ++h) {{
          const int k = s * {WGMMA_K} + 4 * h + tig;
          const uint address = b_box + (uint)k * 128u + (uint)(((f / 4) ^ (k % 8)) * 16) + (uint)(f % 4) * 4u;
          float x, y;
          __asm__ volatile(\"ld.shared.v2.f32 {{%0, %1}}, [%2];\" : \"=f\"(x), \"=f\"(y) : \"r\"(address) : \"memory\");
          {frag}[s][2 * h] = as_uint(x) + 0x1000u;
          {frag}[s][2 * h + 1] = as_uint(y) + 0x1000u;
        }}
      __asm__ volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");",
        steps = STAGE_K / WGMMA_K,
    );
    for s in 0..STAGE_K / WGMMA_K {
        wgmma_instruction(
            out,
            ROWS,
            &format!("{frag}[{s}]"),
            &descriptor(&format!("st + {}", s * WGMMA_K * 4)),
        );
    }
    let _ = writeln!(
        out,
        "      __asm__ volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");
      __asm__ volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\");
    }}"
    );
}

/// This body's TMA stage: A's 256 x 32 tile and B's four 32-column boxes.
const TMA_STAGE: TmaStage = TmaStage {
    stages: STAGES,
    stage_bytes: STAGE_BYTES,
    stage_k: STAGE_K,
    a_tile_bytes: A_TILE_BYTES,
    b_box_bytes: B_BOX_BYTES,
    b_box_columns: B_BOX_COLUMNS,
    boxes: COLUMNS / B_BOX_COLUMNS,
    a_by_tma: true,
};
