//! The fp32 main loop of the GEMM template (every target, and the OpenCL
//! C form under `--precision`): one set of local tiles, A stored
//! transposed (`tile_a[k][m]`), the next k tile's global loads prefetched
//! into registers, each work-item's outputs accumulated with `fma`.

use std::fmt::Write as _;

use super::GemmSpec;
use super::emit::operand_loads;
use super::staging::{Operand, Sources, declare_staging_registers, fetch_tile, store_tile};

/// The k loop over `[k_begin, k_end)` with outputs read in runs of
/// `vector_m`, `vector_n` (see `output_offset`).
pub(super) fn fma_main_loop(
    out: &mut String,
    spec: &GemmSpec,
    sources: &Sources,
    (vector_m, vector_n): (u32, u32),
    (k_begin, k_end): (&str, &str),
) {
    let c = spec.config;
    let threads = c.workgroup_size();
    let (threads_n, threads_m) = c.threads();
    let a_staging = sources.staging(spec, Operand::A, "tile_a", true);
    let b_staging = sources.staging(spec, Operand::B, "tile_b", false);
    // Software pipelining through registers: the next k tile's global
    // loads are issued before the current tile's multiply-adds, so that
    // their latency hides behind the arithmetic (one set of local tiles,
    // two barriers per step as before).
    declare_staging_registers(out, &a_staging, "fetch_a", threads);
    declare_staging_registers(out, &b_staging, "fetch_b", threads);
    fetch_tile(out, &a_staging, threads, "fetch_a", k_begin);
    fetch_tile(out, &b_staging, threads, "fetch_b", k_begin);
    let _ = writeln!(
        out,
        "  for (tcc_index k0 = {k_begin}; k0 < {k_end}; k0 += {}) {{",
        c.tile_k
    );
    store_tile(out, &a_staging, threads, "fetch_a");
    store_tile(out, &b_staging, threads, "fetch_b");
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(
        out,
        "    if (k0 + {tk} < {k_end}) {{\n    const tcc_index k_next = k0 + {tk};",
        tk = c.tile_k
    );
    fetch_tile(out, &a_staging, threads, "fetch_a", "k_next");
    fetch_tile(out, &b_staging, threads, "fetch_b", "k_next");
    let _ = writeln!(out, "    }}");
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int kk = 0; kk < {}; ++kk) {{",
        c.tile_k
    );
    let _ = writeln!(out, "      float ra[{}], rb[{}];", c.work_m, c.work_n);
    operand_loads(out, "ra", "tile_a", "ty", c.work_m, threads_m, vector_m);
    operand_loads(out, "rb", "tile_b", "tx", c.work_n, threads_n, vector_n);
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int wm = 0; wm < {}; ++wm)\n        #pragma unroll\n        for (int wn = 0; wn < {}; ++wn)\n          acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);",
        c.work_m, c.work_n
    );
    let _ = writeln!(out, "    }}");
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(out, "  }}");
}
