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
//! matrix descriptor: A's rows are K-major already. The tensor core reads
//! those A words as they are (the low 13 bits ignored: truncation to TF32).
//!
//! A's k tiles (128 rows x 32 of k) come through the tensor memory
//! accelerator: one work-item issues a `cp.async.bulk.tensor` per tile,
//! which writes it in the 128-byte swizzle the descriptor reads (no bank
//! conflicts) and counts its bytes on the stage's mbarrier. That takes A's
//! copies off L1's load/store pipe, which bounds this loop (Nsight Compute:
//! LSU wavefronts 85-90% of peak, B's fragment loads most of them), and
//! leaves 16 KiB of NVIDIA OpenCL's 48 KiB unused by two stages. The copy
//! needs a tensor map (the TMA's descriptor of A: address, extents, row
//! stride, box, swizzle), which OpenCL cannot make on the host: each
//! work-group's first work-item builds its own from zeros with
//! `tensormap.replace` in a 128-byte slot of a scratch buffer
//! (`tcc-attach-tensor-map-slots` passes it; field encodings as
//! the field test of `scripts/wgmma-proto/tma.cu`, in git history at
//! aaeb302, found them on the H100).
//!
//! A work-group of 256 (two warpgroups) computes the configuration's
//! 128x128 tile with `m64n128k8` instructions, 64 accumulators per thread;
//! two work-groups fit an SM (124 registers). On the H100
//! (docs/benchmarks.md, tcc-benchmark, one run): 269-270 TF/s at 4096^3
//! against 248-249 for the `cp.async` form this replaced (three stages,
//! all work-items copying); the `mma.sync` body 129; cuBLAS 406-422.
//! Past this, 48 KiB is the limit: the prototype's larger tiles and finer
//! stages under it were all slower, and 300 took 96 KiB in CUDA.

use std::fmt::Write as _;

use super::{GemmConfig, GemmShape, GemmSpec};
use crate::Storage;

/// Rows of C per work-group (wgmma's N).
const ROWS: u32 = 128;
/// Columns of C per work-group: two warpgroups of 64 (wgmma's M).
const COLUMNS: u32 = 128;
/// The k of one local-memory stage (one 128-byte swizzled row), and the
/// stages (2 x 16 KiB).
const STAGE_K: u32 = 32;
const STAGES: u32 = 2;
/// k per `wgmma` (TF32).
const WGMMA_K: u32 = 8;

/// Work-items per work-group: two warpgroups.
const THREADS: u32 = 256;

/// Bytes of one tensor map (CUDA's `CUtensorMap`), and the alignment its
/// slot needs.
pub const TENSOR_MAP_BYTES: i64 = 128;

/// The tensor-map scratch a GEMM of `config` over `shape` needs if it may
/// take the wgmma body: one slot per work-group. `None` when its tile,
/// work-group or shape rule the body out whatever its operands.
pub fn tensor_map_slot_bytes(config: &GemmConfig, shape: &GemmShape) -> Option<i64> {
    if let Some(bytes) = super::wgmma_large::slot_bytes(config, shape) {
        return Some(bytes);
    }
    ((config.tile_m, config.tile_n, config.split_k) == (ROWS, COLUMNS, 1)
        && config.workgroup_size() == THREADS
        && shape.m > 0
        && shape.n > 0
        && shape.k > 0
        && shape.m % ROWS as i64 == 0
        && shape.n % COLUMNS as i64 == 0
        && shape.k % STAGE_K as i64 == 0)
        .then(|| {
            TENSOR_MAP_BYTES
                * shape.batch.max(1)
                * (shape.m / ROWS as i64)
                * (shape.n / COLUMNS as i64)
        })
}

/// A C expression of this work-group's slot in `slots`, `bytes` per
/// work-group, as a `__global uint*`.
pub(super) fn map_slot(slots: &crate::Buffer, bytes: i64) -> String {
    format!(
        "(__global uint*)({slots} + {bytes} * ((get_group_id(2) * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) + get_group_id(0)))"
    )
}

/// The wgmma body of one GEMM.
pub(super) struct Wgmma;

impl Wgmma {
    /// Whether `spec` takes the wgmma body: TF32, the 128x128 tile of 256
    /// work-items unsplit, A and B float buffers read through their
    /// strides (A's rows 16-byte aligned for the tensor map, B's for
    /// `float2` loads), M, N, K multiples of the tile and of the stage's k,
    /// and the tensor-map slots passed.
    pub(super) fn applies(spec: &GemmSpec) -> bool {
        tensor_map_slot_bytes(&spec.config, &spec.shape).is_some()
            && (spec.config.tile_m, spec.config.tile_n) == (ROWS, COLUMNS)
            && Self::plain(spec)
    }

    /// What both wgmma bodies need besides their tile: TF32, A and B float
    /// buffers read through their strides (A's rows 16-byte aligned for
    /// the tensor map, B's for `float2` loads or its own map), no split
    /// of K, and the tensor-map slots passed.
    pub(super) fn plain(spec: &GemmSpec) -> bool {
        let s = spec.shape;
        spec.tensor_cores == Some(super::TensorCores::Tf32)
            && spec.tensor_map_slots.is_some()
            && spec.split_k_scratch.is_none()
            && spec.a.buffer.storage == Storage::F32
            && spec.b.buffer.storage == Storage::F32
            && spec.a_offset.is_none()
            && spec.a_element.is_none()
            && spec.b_offset.is_none()
            && spec.a.vectorizable(s.k)
            && spec.b.vectorizable(s.n)
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
        format!(
            " on TF32 wgmma (2 warpgroups, {STAGES} stages of k {STAGE_K} copied by the TMA, 128-byte swizzle)"
        )
    }

    /// Declares the local tiles: A's stages, 128-byte rows swizzled in
    /// 1024-byte atoms (which the swizzle needs aligned), and each stage's
    /// mbarrier.
    pub(super) fn local_tiles(out: &mut String) {
        let _ = writeln!(
            out,
            "  __local float tile_a[{STAGES}][{}] __attribute__((aligned(1024)));\n  __local ulong tile_a_full[{STAGES}] __attribute__((aligned(8)));",
            ROWS * STAGE_K
        );
    }

    /// The work-item's fragment coordinates, the tensor map and the k loop
    /// (A by the TMA, B's fragments by loads one stage ahead, four
    /// `wgmma`s per stage and warpgroup).
    pub(super) fn main_loop(out: &mut String, spec: &GemmSpec, a_address: &str) {
        let s = spec.shape;
        let k_tiles = s.k / STAGE_K as i64;
        let row_stride = spec.b.row_stride;
        let b_base = spec.b.address("b", "tig", "(col0 + wg_col)");
        let slots = spec
            .tensor_map_slots
            .as_ref()
            .expect("Wgmma::applies checked the slots");
        let _ = writeln!(
            out,
            "  /* wgmma: C^T = B^T A^T; A's k tiles by the TMA into 128-byte swizzled rows, B's fragments from global memory */
  const int warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int wg_col = (warp / 4) * 64 + (warp % 4) * 16 + 2 * group;
  __global const float* b_frag = {b} + {b_base};
  float fetched[{steps}][4];
  uint frag[{steps}][4];
  /* this work-group's tensor map of A (tcc-attach-tensor-map-slots) */
  __global uint* a_map = {a_slot};
  if (tid == 0) {{
    const tcc_index i = 0, k = 0;",
            b = spec.b.buffer,
            steps = STAGE_K / WGMMA_K,
            a_slot = map_slot(slots, TENSOR_MAP_BYTES),
        );
        build_tensor_map(
            out,
            "a",
            &format!("{} + {a_address}", spec.a.buffer),
            [s.k, s.m],
            spec.a.row_stride * 4,
            [STAGE_K, ROWS],
        );
        tensor_map_fences(out, &["a_map"]);
        let _ = writeln!(
            out,
            "    #pragma unroll
    for (int st = 0; st < {STAGES}; ++st)
      __asm__ volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"((uint)(ulong)&tile_a_full[st]) : \"memory\");
    __asm__ volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");
  }}
  barrier(CLK_LOCAL_MEM_FENCE);
  if (tid == 0) {{"
        );
        for stage in 0..STAGES {
            let _ = writeln!(out, "    if ({stage} < {k_tiles}) {{");
            copy_a(out, &stage.to_string(), &stage.to_string());
            let _ = writeln!(out, "    }}");
        }
        let _ = writeln!(out, "  }}");
        fetch_b(out, "0", row_stride);
        let _ = writeln!(
            out,
            "  for (int kt = 0; kt < {k_tiles}; ++kt) {{
    #pragma unroll
    for (int s = 0; s < {steps}; ++s)
      #pragma unroll
      for (int e = 0; e < 4; ++e) frag[s][e] = as_uint(fetched[s][e]) + 0x1000u;
",
            steps = STAGE_K / WGMMA_K,
        );
        landed_wait(
            out,
            &format!("tile_a_full[kt % {STAGES}]"),
            &format!("(uint)(kt / {STAGES}) & 1u"),
        );
        let _ = writeln!(
            out,
            "    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0 && kt >= 1 && kt + {ahead} < {k_tiles}) {{",
            ahead = STAGES - 1,
        );
        copy_a(
            out,
            &format!("(kt + {}) % {STAGES}", STAGES - 1),
            &format!("kt + {}", STAGES - 1),
        );
        let _ = writeln!(
            out,
            "    }}
    const uint a_stage = (uint)(ulong)&tile_a[kt % {STAGES}][0];
    __asm__ volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");"
        );
        for step in 0..STAGE_K / WGMMA_K {
            let _ = writeln!(
                out,
                "    const ulong desc{step} = {};",
                descriptor(&format!("a_stage + {}", step * WGMMA_K * 4))
            );
            wgmma_instruction(out, ROWS, &format!("frag[{step}]"), &format!("desc{step}"));
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

/// Builds a 2-D f32 tensor map of `operand` (`a` or `b`) at
/// `{operand}_map` (a `__global uint*`) from zeros
/// (`tensormap.replace`, PTX ISA 8.3, sm_90a): the tensor at `base`,
/// `dims` its extents (dimension 0 the contiguous one), `row_bytes` the
/// stride of dimension 1, a box of `box` elements, element strides 1, the
/// 128-byte swizzle; the rank is written as rank - 1 (the encodings the
/// prototype's field test found equal to `cuTensorMapEncodeTiled`'s).
pub(super) fn build_tensor_map(
    out: &mut String,
    operand: &str,
    base: &str,
    dims: [i64; 2],
    row_bytes: i64,
    box_: [u32; 2],
) {
    build_typed_tensor_map(out, operand, base, ("float", 7), dims, row_bytes, box_);
}

/// [`build_tensor_map`] of elements of C type `element.0` and the tensor
/// map element type `element.1` (7: f32; 1: u16, which the halves take:
/// the copy moves bits, and u16's code is the same in every encoding of
/// the field).
pub(super) fn build_typed_tensor_map(
    out: &mut String,
    operand: &str,
    base: &str,
    element: (&str, u32),
    dims: [i64; 2],
    row_bytes: i64,
    box_: [u32; 2],
) {
    let (ctype, elemtype) = element;
    let _ = writeln!(
        out,
        "    #pragma unroll
    for (int q = 0; q < {words}; ++q) {map}[q] = 0u;
    __global const {ctype}* {operand}_base = {base};
    __asm__ volatile(\"tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;\" :: \"l\"({map}), \"l\"({operand}_base) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.rank.global.b1024.b32 [%0], %1;\" :: \"l\"({map}), \"r\"(1) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 0, %1;\" :: \"l\"({map}), \"r\"({box0}) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"({map}), \"r\"({box1}) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;\" :: \"l\"({map}), \"r\"({dim0}) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"({map}), \"r\"({dim1}) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;\" :: \"l\"({map}), \"l\"((ulong){row_bytes}) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.element_stride.global.b1024.b32 [%0], 0, %1;\" :: \"l\"({map}), \"r\"(1) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.element_stride.global.b1024.b32 [%0], 1, %1;\" :: \"l\"({map}), \"r\"(1) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.elemtype.global.b1024.b32 [%0], {elemtype};\" :: \"l\"({map}) : \"memory\");
    __asm__ volatile(\"tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%0], 3;\" :: \"l\"({map}) : \"memory\");",
        words = TENSOR_MAP_BYTES / 4,
        map = format!("{operand}_map"),
        box0 = box_[0],
        box1 = box_[1],
        dim0 = dims[0],
        dim1 = dims[1],
    );
}

/// The fences that let the TMA read the tensor maps `maps` the generic
/// proxy wrote.
pub(super) fn tensor_map_fences(out: &mut String, maps: &[&str]) {
    let _ = writeln!(
        out,
        "    __asm__ volatile(\"fence.proxy.tensormap::generic.release.gpu;\" ::: \"memory\");"
    );
    for map in maps {
        let _ = writeln!(
            out,
            "    __asm__ volatile(\"fence.proxy.tensormap::generic.acquire.gpu [%0], {TENSOR_MAP_BYTES};\" :: \"l\"({map}) : \"memory\");"
        );
    }
}

/// Waits until the mbarrier `barrier` (a `__local ulong` lvalue) has
/// completed the phase of parity `parity`: its stage's copies landed.
pub(super) fn landed_wait(out: &mut String, barrier: &str, parity: &str) {
    let _ = writeln!(
        out,
        "    {{
      uint landed;
      do {{
        __asm__ volatile(\"{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }}\"
                         : \"=r\"(landed) : \"r\"((uint)(ulong)&{barrier}), \"r\"({parity}) : \"memory\");
      }} while (!landed);
    }}"
    );
}

/// Work-item 0's copy of A's k tile `tile` into `tile_a[stage]` by the
/// TMA: the stage's mbarrier expects the tile's bytes, and the bulk tensor
/// copy (box origin k `32 tile`, row `row0`) completes them on it, written
/// in the 128-byte swizzle (row `m`'s 16-byte chunk `c` at chunk
/// `c ^ (m % 8)`).
fn copy_a(out: &mut String, stage: &str, tile: &str) {
    let _ = writeln!(
        out,
        "      __asm__ volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], {bytes};\" :: \"r\"((uint)(ulong)&tile_a_full[{stage}]) : \"memory\");
      __asm__ volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {{%2, %3}}], [%4];\"
                       :: \"r\"((uint)(ulong)&tile_a[{stage}][0]), \"l\"(a_map), \"r\"((int)({tile}) * {STAGE_K}), \"r\"((int)row0),
                          \"r\"((uint)(ulong)&tile_a_full[{stage}]) : \"memory\");",
        bytes = ROWS * STAGE_K * 4,
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
pub(super) fn descriptor(address: &str) -> String {
    let leading = 16u64 >> 4;
    let stride = 1024u64 >> 4;
    format!(
        "(ulong)((({address}) & 0x3FFFF) >> 4) | {}ul",
        (leading << 16) | (stride << 32) | (1u64 << 62)
    )
}

/// One `wgmma.mma_async.m64n{n}k8` (TF32): D element `4 j + e` is
/// `acc[2 j + e % 2][e / 2]`; A from the four registers of `frag` (a
/// `uint[4]` lvalue), B through the descriptor `desc`.
pub(super) fn wgmma_instruction(out: &mut String, n: u32, frag: &str, desc: &str) {
    let elements = n / 2;
    let outputs: Vec<String> = (0..elements).map(|d| format!("%{d}")).collect();
    let accumulators: Vec<String> = (0..elements)
        .map(|d| format!("\"+f\"(acc[{}][{}])", 2 * (d / 4) + d % 2, (d % 4) / 2))
        .collect();
    let _ = writeln!(
        out,
        "    __asm__ volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{scale}, 0; wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{}}}, {{%{a0}, %{a1}, %{a2}, %{a3}}}, %{d}, p, 1, 1; }}\"
      : {}
      : \"r\"({frag}[0]), \"r\"({frag}[1]), \"r\"({frag}[2]), \"r\"({frag}[3]), \"l\"({desc}), \"r\"(1));",
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
