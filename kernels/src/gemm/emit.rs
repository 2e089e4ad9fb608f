//! Pieces of the GEMM kernel text: output offsets, operand loads and the
//! split-K fix-up.

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
    // int8 sums travel through the float workspace as their bits (exact).
    let partial_sum = format!("partials[s * {tile_elements} + {position}]");
    let (sum_type, zero, published, read) = if spec.int8() {
        let read = format!("as_int({partial_sum})");
        ("int", "0", "as_float(acc[wm][wn])", read)
    } else {
        ("float", "0.0f", "acc[wm][wn]", partial_sum)
    };
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn)\n      partial[{position}] = {published};"
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
        "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn) {{\n      {sum_type} sum = {zero};\n      for (int s = 0; s < {}; ++s) sum += {read};\n      acc[wm][wn] = sum;\n    }}",
        c.split_k
    );
    let _ = writeln!(out, "  if (tid == 0) {}", counters.store("0", "tile"));
}
