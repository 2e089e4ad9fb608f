//! Pieces of the GEMM kernel text: output offsets, operand loads, the
//! TF32 `mma.sync` steps and the split-K fix-up.

use std::fmt::Write as _;

use super::{GemmSpec, Layout};
use crate::Buffer;

/// Where output `w` (a C loop counter) of work-item `id` lies in its tile
/// along one axis with `threads` work-items: with `vector` 4, in runs of 4
/// (work-item `id` owns `4 id .. 4 id + 3` of every `4 threads`); with 1,
/// strided by `threads`.
pub(super) fn output_offset(w: &str, id: &str, threads: u32, vector: u32) -> String {
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
pub(super) fn operand_loads(
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
pub(super) fn mma_steps(out: &mut String, tile_k: u32, mi: u32, ni: u32) {
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
pub(super) fn split_k_fixup(
    out: &mut String,
    spec: &GemmSpec,
    workspace: &Buffer,
    counters: &Buffer,
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
    let _ = writeln!(out, "  if (tid == 0) {}", counters.store("0", "tile"));
}
