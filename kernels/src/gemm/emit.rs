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
///
/// Every work-item holds the same accumulators in every work-group of a
/// tile, so the workspace keeps a partial in work-item order
/// (accumulator `(wm, wn)` of work-item `tid` at `(wm * acc_n + wn) *
/// threads + tid`) rather than as the tile's rows: consecutive work-items
/// store and load consecutive words, four accumulators at a time as
/// `float4` where a row of them divides by four (aligned: a tile's
/// partial starts at a multiple of its elements, themselves a multiple of
/// four, and `vstore4` would promise only a float's alignment), and the last work-group
/// reads its partials back with the same mapping. (The tile's row layout
/// left each work-item storing single words two columns apart, which
/// throttled the H200's load/store queue: 40% of a batch-1 product's stall
/// samples.) The arrival is published once per work-group: on PTX the
/// work-group's barrier orders every work-item's stores before work-item
/// 0's `atom.acq_rel.gpu` (a release is cumulative over what the barrier
/// made it observe, as CUTLASS's split-K semaphore relies on), the last
/// group's acquire before its barrier orders the loads, which read the L2
/// (`ld.global.cg`); elsewhere every work-item fences its own stores
/// (OpenCL 1.2's `mem_fence`) and the loads bypass the L1 as volatile.
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
    let threads = c.workgroup_size();
    let _ = writeln!(
        out,
        "  /* split-K: {} work-groups per tile */\n  const tcc_index tile = (b * {tiles_m} + (tcc_index)get_group_id(1)) * {tiles_n} + (tcc_index)get_group_id(0);",
        c.split_k
    );
    let _ = writeln!(
        out,
        "  __global float* partial = {workspace} + (tile * {} + split) * {tile_elements};",
        c.split_k
    );
    // The work-item order needs every accumulator of the tile held once;
    // a layout that does not (none today) keeps the tile's row order.
    let work_item_order = acc_m * acc_n * threads == tile_elements;
    let quads = work_item_order && acc_n % 4 == 0;
    let position = if work_item_order {
        format!("(wm * {acc_n} + wn) * {threads} + tid")
    } else {
        let (row_offset, col_offset) = layout.offsets(&c);
        format!("{row_offset} * {} + {col_offset}", c.tile_n)
    };
    // int8 sums travel through the float workspace as their bits (exact).
    let (sum_type, zero, bits): (&str, &str, fn(&str) -> String) = if spec.int8() {
        ("int", "0", |v| format!("as_float({v})"))
    } else {
        ("float", "0.0f", |v| v.to_string())
    };
    if quads {
        let acc = |i: u32| bits(&format!("acc[wm][wn + {i}]"));
        let _ = writeln!(
            out,
            "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; wn += 4)\n      ((__global float4*)partial)[(wm * {q} + wn / 4) * {threads} + tid] = (float4)({}, {}, {}, {});",
            acc(0),
            acc(1),
            acc(2),
            acc(3),
            q = acc_n / 4
        );
    } else {
        let _ = writeln!(
            out,
            "  #pragma unroll\n  for (int wm = 0; wm < {acc_m}; ++wm)\n    #pragma unroll\n    for (int wn = 0; wn < {acc_n}; ++wn)\n      partial[{position}] = {};",
            bits("acc[wm][wn]")
        );
    }
    let _ = writeln!(out, "  __local int last_to_arrive;");
    let last = c.split_k - 1;
    let ptx_arrival = format!(
        "  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  if (tid == 0) last_to_arrive = tcc_split_arrive(&{counters}[tile]) == {last};
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!last_to_arrive) return;"
    );
    let portable_arrival = format!(
        "  tcc_global_fence();
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  if (tid == 0) last_to_arrive = atomic_inc((volatile __global uint*)&{counters}[tile]) == {last};
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!last_to_arrive) return;
  tcc_global_fence();"
    );
    let from_int = |v: &str| {
        if spec.int8() {
            format!("as_int({v})")
        } else {
            v.to_string()
        }
    };
    let partials = format!("{workspace} + tile * {}", c.split_k * tile_elements);
    // The portable read: word by word through a volatile pointer (OpenCL
    // 1.2 has no cache-bypassing vector load), in slice order.
    let word = if quads {
        format!(
            "((wm * {q} + wn / 4) * {threads} + tid) * 4 + wn % 4",
            q = acc_n / 4
        )
    } else {
        position
    };
    let portable_sum = format!(
        "  volatile __global const float* partials = {partials};
  #pragma unroll
  for (int wm = 0; wm < {acc_m}; ++wm)
    #pragma unroll
    for (int wn = 0; wn < {acc_n}; ++wn) {{
      {sum_type} sum = {zero};
      for (int s = 0; s < {split}; ++s) sum += {read};
      acc[wm][wn] = sum;
    }}",
        split = c.split_k,
        read = from_int(&format!("partials[s * {tile_elements} + {word}]"))
    );
    // On PTX, four words a load from the L2.
    let ptx_sum = if quads {
        let sums: Vec<String> = (0..4)
            .map(|i| format!("        sum{i} += {};", from_int(&format!("v.s{i}"))))
            .collect();
        format!(
            "  __global const float* partials = {partials};
  #pragma unroll
  for (int wm = 0; wm < {acc_m}; ++wm)
    #pragma unroll
    for (int wn = 0; wn < {acc_n}; wn += 4) {{
      {sum_type} sum0 = {zero}, sum1 = {zero}, sum2 = {zero}, sum3 = {zero};
      for (int s = 0; s < {split}; ++s) {{
        const float4 v = tcc_load_l2_float4(partials + s * {tile_elements} + ((wm * {q} + wn / 4) * {threads} + tid) * 4);
{sums}
      }}
      acc[wm][wn] = sum0; acc[wm][wn + 1] = sum1; acc[wm][wn + 2] = sum2; acc[wm][wn + 3] = sum3;
    }}",
            split = c.split_k,
            q = acc_n / 4,
            sums = sums.join("\n"),
        )
    } else {
        portable_sum.clone()
    };
    // The tensor-core bodies are PTX only (the kernel's `#ifdef TCC_PTX`
    // half); a work-item tile may be compiled either way.
    if matches!(layout, Layout::Fma { .. }) {
        let _ = writeln!(
            out,
            "#ifdef TCC_PTX\n{ptx_arrival}\n{ptx_sum}\n#else\n{portable_arrival}\n{portable_sum}\n#endif"
        );
    } else {
        let _ = writeln!(out, "{ptx_arrival}\n{ptx_sum}");
    }
    let _ = writeln!(out, "  if (tid == 0) {}", counters.store("0", "tile"));
}
