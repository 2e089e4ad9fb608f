//! The fp32 main loop of the GEMM template (every target, and the OpenCL
//! C form under `--precision`): A stored transposed (`tile_a[k][m]`), the
//! next k tile's global loads prefetched into registers, each work-item's
//! outputs accumulated with `fma`.
//!
//! Two forms, by `GemmConfig::local_stages`: one set of local tiles with
//! two barriers per k step (small tiles, CPUs), or two sets
//! (`tile_a[2][k][m]`), where the prefetched tile is stored into the set
//! not being read and one barrier per k step separates them: the SGEMM
//! recipe of cuBLAS-class fp32 kernels, for the 4x4- and 8x8-output tiles
//! of GPUs.

use std::fmt::Write as _;

use super::emit::operand_loads;
use super::staging::{
    Operand, Sources, TileStaging, declare_staging_registers, fetch_aligned_tile, fetch_tile,
    store_tile,
};
use super::{GemmConfig, GemmSpec};

/// The k loop over `[k_begin, k_end)` with outputs read in runs of
/// `vector_m`, `vector_n` (see `output_offset`).
pub(super) fn fma_main_loop(
    out: &mut String,
    spec: &GemmSpec,
    sources: &Sources,
    vectors: (u32, u32),
    k_range: (&str, &str),
) {
    if spec.config.local_stages() == 2 {
        double_buffered_loop(out, spec, sources, vectors, k_range);
    } else {
        single_buffered_loop(out, spec, sources, vectors, k_range);
    }
}

/// One set of local tiles: store the prefetched tile, barrier, prefetch
/// the next, multiply, barrier.
fn single_buffered_loop(
    out: &mut String,
    spec: &GemmSpec,
    sources: &Sources,
    vectors: (u32, u32),
    (k_begin, k_end): (&str, &str),
) {
    let c = spec.config;
    let threads = c.workgroup_size();
    // Software pipelining through registers: the next k tile's global
    // loads are issued before the current tile's multiply-adds, so that
    // their latency hides behind the arithmetic (one set of local tiles,
    // two barriers per step as before).
    let (a_staging, b_staging) =
        fetch_first_tile(out, spec, sources, ("tile_a", "tile_b"), (k_begin, None));
    let _ = writeln!(
        out,
        "  for (tcc_index k0 = {k_begin}; k0 < {k_end}; k0 += {}) {{",
        c.tile_k
    );
    store_tile(out, &a_staging, threads, "fetch_a");
    store_tile(out, &b_staging, threads, "fetch_b");
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    fetch_next(
        out,
        spec,
        sources,
        &[(Operand::A, "tile_a"), (Operand::B, "tile_b")],
        k_end,
        false,
    );
    multiply_tile(out, spec, ("tile_a", "tile_b"), vectors, (0, c.tile_k));
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(out, "  }}");
}

/// Two sets of local tiles: the first tile is stored before the loop;
/// each step prefetches the next tile into registers, multiplies one set,
/// stores the prefetched tile into the other, and one barrier both
/// publishes it and retires the reads of the first. The loop is unrolled
/// by two steps so that each step's sets are constants (their local
/// addresses immediates: a set index in a register cost ptxas registers
/// beyond the 128 that keep two work-groups of 256 per SM).
fn double_buffered_loop(
    out: &mut String,
    spec: &GemmSpec,
    sources: &Sources,
    vectors: (u32, u32),
    (k_begin, k_end): (&str, &str),
) {
    let c = spec.config;
    let threads = c.workgroup_size();
    // A split-K slice may start past K (slices are whole steps, rounded
    // up); an unsplit product starts at 0.
    let k_inside = Some(c.split_k == 1);
    let (first_a, first_b) = fetch_first_tile(
        out,
        spec,
        sources,
        ("tile_a[0]", "tile_b[0]"),
        (k_begin, k_inside),
    );
    store_tile(out, &first_a, threads, "fetch_a");
    store_tile(out, &first_b, threads, "fetch_b");
    let _ = writeln!(out, "  barrier(CLK_LOCAL_MEM_FENCE);");
    let _ = writeln!(out, "  for (tcc_index k0 = {k_begin}; k0 < {k_end};) {{");
    for (read, write) in [(0, 1), (1, 0)] {
        if read == 1 {
            let _ = writeln!(out, "    if (k0 >= {k_end}) break;");
        }
        let tiles = |stage: u32| (format!("tile_a[{stage}]"), format!("tile_b[{stage}]"));
        let (read_a, read_b) = tiles(read);
        let (write_a, write_b) = tiles(write);
        // A's next tile is fetched, then stored after the first half of
        // the multiply-adds, B's over the second half: only one operand's
        // staging registers are live at a time.
        let half = c.tile_k / 2;
        let halves = [
            (Operand::A, &write_a, (0, half)),
            (Operand::B, &write_b, (half, c.tile_k)),
        ];
        for (operand, write, kk_range) in halves {
            fetch_next(out, spec, sources, &[(operand, write)], k_end, true);
            multiply_tile(out, spec, (&read_a, &read_b), vectors, kk_range);
            // After the last step the registers still hold the tile stored
            // one step earlier: storing it again into the set nobody reads
            // any more is harmless and saves a branch.
            let staging = sources.staging(spec, operand, write, operand == Operand::A);
            store_tile(out, &staging, threads, fetch_registers(operand));
        }
        let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);");
        let _ = writeln!(out, "    k0 += {};", c.tile_k);
    }
    let _ = writeln!(out, "  }}");
}

/// Declares the staging registers of A and B (staged into `tiles`) and
/// fetches their tiles at `k_begin`: by `fetch_tile`, or with
/// `Some(k_inside)` by `fetch_aligned_tile`.
fn fetch_first_tile<'t>(
    out: &mut String,
    spec: &'t GemmSpec,
    sources: &Sources<'t>,
    (tile_a, tile_b): (&'t str, &'t str),
    (k_begin, k_inside): (&str, Option<bool>),
) -> (TileStaging<'t>, TileStaging<'t>) {
    let threads = spec.config.workgroup_size();
    let a = sources.staging(spec, Operand::A, tile_a, true);
    let b = sources.staging(spec, Operand::B, tile_b, false);
    for (staging, registers) in [(&a, "fetch_a"), (&b, "fetch_b")] {
        declare_staging_registers(out, staging, registers, threads);
    }
    for (staging, registers) in [(&a, "fetch_a"), (&b, "fetch_b")] {
        match k_inside {
            None => fetch_tile(out, staging, threads, registers, k_begin),
            Some(inside) => fetch_aligned_tile(out, staging, threads, registers, (k_begin, inside)),
        }
    }
    (a, b)
}

/// The guarded prefetch of the k tile after `k0` into the staging
/// registers of each of `operands` (the tiles named only shape the
/// staging, nothing is stored).
fn fetch_next(
    out: &mut String,
    spec: &GemmSpec,
    sources: &Sources,
    operands: &[(Operand, &str)],
    k_end: &str,
    aligned: bool,
) {
    let c = spec.config;
    let threads = c.workgroup_size();
    let _ = writeln!(
        out,
        "    if (k0 + {tk} < {k_end}) {{\n    const tcc_index k_next = k0 + {tk};",
        tk = c.tile_k
    );
    for &(operand, tile) in operands {
        let staging = sources.staging(spec, operand, tile, operand == Operand::A);
        let registers = fetch_registers(operand);
        if aligned {
            fetch_aligned_tile(out, &staging, threads, registers, ("k_next", true));
        } else {
            fetch_tile(out, &staging, threads, registers, "k_next");
        }
    }
    let _ = writeln!(out, "    }}");
}

/// The staging registers of `operand`.
fn fetch_registers(operand: Operand) -> &'static str {
    match operand {
        Operand::A => "fetch_a",
        Operand::B => "fetch_b",
    }
}

/// Each work-item's multiply-adds over rows `kk_range` of one local k
/// tile.
fn multiply_tile(
    out: &mut String,
    spec: &GemmSpec,
    (tile_a, tile_b): (&str, &str),
    (vector_m, vector_n): (u32, u32),
    (kk_begin, kk_end): (u32, u32),
) {
    let c = spec.config;
    let (threads_n, threads_m) = c.threads();
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int kk = {kk_begin}; kk < {kk_end}; ++kk) {{"
    );
    let _ = writeln!(out, "      float ra[{}], rb[{}];", c.work_m, c.work_n);
    operand_loads(out, "ra", tile_a, "ty", c.work_m, threads_m, vector_m);
    operand_loads(out, "rb", tile_b, "tx", c.work_n, threads_n, vector_n);
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int wm = 0; wm < {}; ++wm)\n        #pragma unroll\n        for (int wn = 0; wn < {}; ++wn)\n          acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);",
        c.work_m, c.work_n
    );
    let _ = writeln!(out, "    }}");
}

/// Work-items per warp along (n, m) in the double-buffered form: 8x4, so
/// that a warp's `float4` reads of one k row touch 8 neighbouring runs of
/// B (128 bytes) and 4 of A (64 bytes), each one local-memory wavefront
/// (the 16x2 work-items of consecutive ids read 256 bytes of B).
const WARP_SHAPE: (u32, u32) = (8, 4);

/// Declares `tid` and the work-item's coordinates `tx`, `ty` in the
/// output tile. In the double-buffered form each warp covers a
/// `WARP_SHAPE` block of those coordinates where the work-group's shape
/// allows it; otherwise they are the local ids (as in the single-buffered
/// form). Staging uses only `tid`; the outputs and operand reads use
/// `tx`, `ty`, so both agree whatever the mapping.
pub(super) fn warp_tiled_ids(out: &mut String, c: &GemmConfig) {
    let (threads_n, threads_m) = c.threads();
    let (lanes_n, lanes_m) = WARP_SHAPE;
    let _ = writeln!(
        out,
        "  const int tid = (int)get_local_id(1) * {threads_n} + (int)get_local_id(0);"
    );
    if threads_n.is_multiple_of(lanes_n) && threads_m.is_multiple_of(lanes_m) {
        let warps_n = threads_n / lanes_n;
        let _ = writeln!(
            out,
            "  /* warps of {lanes_n}x{lanes_m} work-items along (n, m) */\n  const int tx = (tid / 32 % {warps_n}) * {lanes_n} + tid % {lanes_n};\n  const int ty = (tid / 32 / {warps_n}) * {lanes_m} + tid % 32 / {lanes_n};"
        );
    } else {
        let _ = writeln!(
            out,
            "  const int tx = (int)get_local_id(0);\n  const int ty = (int)get_local_id(1);"
        );
    }
}
