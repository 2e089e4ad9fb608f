//! The few-row form of the GEMM template (`GemmConfig::k_lanes > 1`).
//!
//! A product of a handful of rows (a decode step's M = its batch, a
//! classifier at batch 1) reads each element of B once and does M
//! multiply-adds with it: its time is B's bytes over the bandwidth the
//! kernel keeps in flight. The tiled bodies stage A and B through local
//! memory a k step at a time (a load, a barrier, a few FMAs, again), and
//! split-K over work-groups adds a pass over partial tiles: GPT-2's
//! 768 x 2304 projections at M = 1 took 8-13 us that way on the H200, a
//! tenth of what the memory system gives.
//!
//! Here each work-item owns every row of the tile and `work_n` columns,
//! and the `k_lanes` work-items of one column block each take every
//! `k_lanes`-th row of K: a warp's work-items read neighbouring column
//! blocks of a few rows of K, straight from global memory, as aligned
//! 16-byte loads where B's rows allow (K x N weights, as MatMul's are and
//! as constant folding leaves a transposed weight; else one element at a
//! time), up to 8 rows in flight before their multiply-adds, and A's
//! few values beside them (A is small and stays in the caches). The
//! lanes' partial sums then meet in local memory, added in a fixed order
//! (the result does not depend on timing), and the epilogue runs once per
//! output. Products are exact fp32 multiply-adds of the operands' values,
//! whatever the module's tensor-core precision.

use std::fmt::Write as _;

use super::GemmSpec;
use crate::Storage;

/// Floats of local memory the lanes' partial sums take at most per pass
/// (32 KiB): the rows of a tile are summed in passes of this many.
const PARTIAL_FLOATS: u32 = 8192;

/// Whether B's elements `[k][j .. j + width]` (`width` columns from a
/// multiple of `width`) can be read as one aligned vector load: float,
/// half or bf16 rows of whole vectors.
fn rows_load_whole(spec: &GemmSpec) -> bool {
    let (b, width) = (&spec.b, spec.config.work_n as i64);
    spec.b_offset.is_none()
        && matches!(
            b.buffer.storage,
            Storage::F32 | Storage::F16 | Storage::BF16
        )
        && matches!(width, 4 | 8)
        && b.col_stride == 1
        && spec.shape.n % width == 0
        && b.row_stride % width == 0
        && b.batch_stride % width == 0
        && b.offset % width == 0
}

/// The C statements loading `width` (4 or 8) elements of `buffer` from
/// element offset `index`, aligned to the load, into `float
/// name[width]`: float4 loads of floats, one 8- or 16-byte load of
/// halves or bf16s widened in registers.
fn aligned_load(buffer: &crate::Buffer, width: u32, index: &str, name: &str) -> String {
    let p = &buffer.name;
    let mut out = format!("float {name}[{width}];\n");
    match buffer.storage {
        Storage::F32 => {
            for quad in 0..width / 4 {
                let _ = writeln!(
                    out,
                    "{{ const float4 q = *(__global const float4*)({p} + {index} + {}); {name}[{}] = q.s0; {name}[{}] = q.s1; {name}[{}] = q.s2; {name}[{}] = q.s3; }}",
                    4 * quad,
                    4 * quad,
                    4 * quad + 1,
                    4 * quad + 2,
                    4 * quad + 3
                );
            }
        }
        Storage::F16 | Storage::BF16 => {
            let words = width / 2;
            let vector = if words == 4 { "uint4" } else { "uint2" };
            let _ = writeln!(
                out,
                "{{ const {vector} w = *(__global const {vector}*)({p} + {index});"
            );
            let components = ["x", "y", "z", "w"];
            for word in 0..words {
                let c = components[word as usize];
                let (lo, hi) = (2 * word, 2 * word + 1);
                if buffer.storage == Storage::F16 {
                    let _ = writeln!(
                        out,
                        "  {{ const float2 h = tcc_half2_bits_to_float2(w.{c}); {name}[{lo}] = h.x; {name}[{hi}] = h.y; }}"
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "  {name}[{lo}] = as_float(w.{c} << 16); {name}[{hi}] = as_float(w.{c} & 0xFFFF0000u);"
                    );
                }
            }
            out.push_str("}\n");
        }
        _ => unreachable!("aligned loads are for float, half and bf16 buffers"),
    }
    out
}

/// The kernel of a few-row configuration.
pub(super) fn few_rows_kernel(spec: &GemmSpec) -> Result<String, String> {
    let c = spec.config;
    let s = spec.shape;
    if spec.int8() {
        return Err(format!(
            "{}: the few-row form sums floats; int8 products take the tiled int8 form",
            spec.name
        ));
    }
    if spec.b_panel.is_some() || spec.k_window.is_some() || spec.a_element_vector {
        return Err(format!(
            "{}: the few-row form reads A one element and B one row at a time: no weight panels, convolution window loops or float4 A elements",
            spec.name
        ));
    }
    if spec.split_k_scratch.is_some() {
        return Err(format!(
            "{}: the few-row form does not split K over work-groups",
            spec.name
        ));
    }
    let rows = c.tile_m;
    let width = c.work_n;
    let lanes = c.k_lanes;
    let (threads_n, threads) = (c.tile_n / width, c.workgroup_size());
    let vector = rows_load_whole(spec);
    let m = spec.m_extent.clone().unwrap_or_else(|| s.m.to_string());
    // Rows of A past M: a dynamic M, or a tile that does not divide M.
    let rows_guarded = spec.m_extent.is_some() || s.m % rows as i64 != 0;
    let (n, k) = (s.n, s.k);
    let columns_guarded = n % c.tile_n as i64 != 0;

    if c.tile_n > threads {
        return Err(format!(
            "{}: the few-row form's {} columns need at least as many work-items, not {threads}",
            spec.name, c.tile_n
        ));
    }
    let mut out = String::new();
    if spec.a.buffer.storage == Storage::F16 || spec.b.buffer.storage == Storage::F16 {
        out.push_str(crate::buffer::HALF_BITS_HELPERS);
    }
    let _ = writeln!(out, "{}", spec.comment);
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({threads_n}, {lanes}, 1)))"
    );
    let _ = writeln!(out, "{}", spec.signature());
    let loads = if vector {
        "aligned loads"
    } else {
        "element loads"
    };
    let _ = writeln!(
        out,
        "  /* few-row form: {rows} rows x {} columns, {width} per work-item, {lanes} lanes along K ({loads}); M={m} N={n} K={k} batch={} */",
        c.tile_n, s.batch
    );
    // The lanes' partial sums, in passes of `pass` rows.
    let pass = (PARTIAL_FLOATS / (lanes * c.tile_n))
        .min(threads / c.tile_n)
        .clamp(1, rows);
    let outputs = pass * c.tile_n;
    let sharers = (threads / outputs).max(1);
    let _ = writeln!(
        out,
        "  __local float partial[{}];\n  __local float shared_sums[{}];",
        pass * lanes * c.tile_n,
        sharers * outputs
    );
    let _ = writeln!(
        out,
        "  const int tid = (int)(get_local_id(1) * {threads_n} + get_local_id(0));"
    );
    let _ = writeln!(
        out,
        "  const int tn = tid % {threads_n}, lane = tid / {threads_n};"
    );
    let _ = writeln!(
        out,
        "  const tcc_index row0 = (tcc_index)get_group_id(1) * {rows};\n  const tcc_index col0 = (tcc_index)get_group_id(0) * {};\n  const tcc_index b = (tcc_index)get_group_id(2);\n  const tcc_index j0 = col0 + tn * {width};",
        c.tile_n
    );
    let _ = writeln!(
        out,
        "  float acc[{rows}][{width}];\n  #pragma unroll\n  for (int r = 0; r < {rows}; ++r)\n    #pragma unroll\n    for (int c = 0; c < {width}; ++c)\n      acc[r][c] = 0.0f;"
    );
    let a_address = spec
        .a_offset
        .clone()
        .unwrap_or_else(|| spec.a.address("b", "i", "k"));
    let b_address = spec
        .b_offset
        .clone()
        .unwrap_or_else(|| spec.b.address("b", "k", "j"));
    k_loop(
        &mut out,
        spec,
        (&a_address, &b_address),
        vector,
        (rows_guarded, columns_guarded),
        &m,
    );
    sum_lanes_and_store(&mut out, spec, pass, sharers, &m);
    Ok(out)
}

/// The value of `A[i][k]` (`i`, `k` in scope) into `float name`, zero
/// for rows past M where the tile may reach there.
fn a_value(spec: &GemmSpec, a_address: &str, name: &str, guard: Option<&str>) -> String {
    let mut out = format!("float {name} = 0.0f;\n");
    let open = match guard {
        Some(condition) => format!("if ({condition}) {{\n"),
        None => "{\n".to_string(),
    };
    out.push_str(&open);
    match &spec.a_element {
        Some((statements, value)) => {
            for line in statements.lines() {
                let _ = writeln!(out, "  {line}");
            }
            let _ = writeln!(out, "  {name} = {value};");
        }
        None => {
            let _ = writeln!(out, "  {name} = {};", spec.a.buffer.load(a_address));
        }
    }
    out.push_str("}\n");
    out
}

fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines().map(|line| format!("{pad}{line}\n")).collect()
}

/// The K loop: each lane takes rows `lane`, `lane + k_lanes`, ... of K,
/// up to 8 of them ([`rows_in_flight`]) loaded before they are
/// multiplied.
fn k_loop(
    out: &mut String,
    spec: &GemmSpec,
    (a_address, b_address): (&str, &str),
    vector: bool,
    (rows_guarded, columns_guarded): (bool, bool),
    m: &str,
) {
    let c = spec.config;
    let (rows, width, lanes) = (c.tile_m, c.work_n, c.k_lanes);
    let (n, k) = (spec.shape.n, spec.shape.k);
    // One step of K for row `k`: B's row into bv[u][..], A's rows into
    // av[u][..].
    let step = |u: u32| -> String {
        let mut body = String::new();
        if vector {
            let index = spec.b.address("b", "k", "j0");
            if columns_guarded {
                let _ = writeln!(body, "float bv{u}[{width}];");
                let _ = writeln!(
                    body,
                    "if (j0 < {n}) {{\n{}  #pragma unroll\n  for (int c = 0; c < {width}; ++c) bv{u}[c] = loaded[c];\n}} else {{\n  #pragma unroll\n  for (int c = 0; c < {width}; ++c) bv{u}[c] = 0.0f;\n}}",
                    indent(&aligned_load(&spec.b.buffer, width, &index, "loaded"), 2)
                );
            } else {
                body.push_str(&aligned_load(
                    &spec.b.buffer,
                    width,
                    &index,
                    &format!("bv{u}"),
                ));
            }
        } else {
            let _ = writeln!(
                body,
                "float bv{u}[{width}];\n#pragma unroll\nfor (int c = 0; c < {width}; ++c) {{\n  const tcc_index j = j0 + c;\n  bv{u}[c] = {};\n}}",
                if columns_guarded || n % width as i64 != 0 {
                    format!("j < {n} ? {} : 0.0f", spec.b.buffer.load(b_address))
                } else {
                    spec.b.buffer.load(b_address)
                }
            );
        }
        let _ = writeln!(body, "float av{u}[{rows}];");
        for r in 0..rows {
            let guard = rows_guarded.then(|| format!("i < {m}"));
            let _ = writeln!(
                body,
                "{{\n  const tcc_index i = row0 + {r};\n{}  av{u}[{r}] = a_value;\n}}",
                indent(&a_value(spec, a_address, "a_value", guard.as_deref()), 2)
            );
        }
        body
    };
    let fmas = |u: u32| -> String {
        format!(
            "#pragma unroll\nfor (int r = 0; r < {rows}; ++r)\n  #pragma unroll\n  for (int c = 0; c < {width}; ++c)\n    acc[r][c] = fma(av{u}[r], bv{u}[c], acc[r][c]);\n"
        )
    };
    // Rows of K per lane loaded before any is multiplied: as many as the
    // lane has (one trip to memory) up to what the registers hold beside
    // the accumulators.
    let per_lane = (k + lanes as i64 - 1) / lanes as i64;
    let unroll = (rows_in_flight(rows) as i64).min(per_lane).max(1) as u32;
    let whole = k % (unroll * lanes) as i64 == 0;
    let _ = writeln!(
        out,
        "  for (tcc_index k_first = lane; k_first < {k}; k_first += {}) {{",
        unroll * lanes
    );
    for u in 0..unroll {
        let _ = writeln!(
            out,
            "    float bv{u}_keep[{width}], av{u}_keep[{rows}];\n    {{\n      const tcc_index k = k_first + {};",
            u * lanes
        );
        let keep = format!(
            "{}#pragma unroll\nfor (int c = 0; c < {width}; ++c) bv{u}_keep[c] = bv{u}[c];\n#pragma unroll\nfor (int r = 0; r < {rows}; ++r) av{u}_keep[r] = av{u}[r];\n",
            step(u)
        );
        if u == 0 || whole {
            out.push_str(&indent(&keep, 6));
        } else {
            let _ = writeln!(out, "      if (k < {k}) {{");
            out.push_str(&indent(&keep, 8));
            let _ = writeln!(
                out,
                "      }} else {{\n        #pragma unroll\n        for (int c = 0; c < {width}; ++c) bv{u}_keep[c] = 0.0f;\n        #pragma unroll\n        for (int r = 0; r < {rows}; ++r) av{u}_keep[r] = 0.0f;\n      }}"
            );
        }
        let _ = writeln!(out, "    }}");
    }
    for u in 0..unroll {
        out.push_str(&indent(
            &fmas(u)
                .replace(&format!("av{u}[r]"), &format!("av{u}_keep[r]"))
                .replace(&format!("bv{u}[c]"), &format!("bv{u}_keep[c]")),
            4,
        ));
    }
    let _ = writeln!(out, "  }}");
}

/// Rows of K a work-item of `rows` rows loads before multiplying: their B
/// vectors and A values take registers beside its `rows x 8`
/// accumulators. Four at 8 rows measured slower than two (GPT-2 small's
/// decode step at batch 8, fp16, H200: Q/K/V 11.3 -> 15.5 us, FFN up
/// 11.3 -> 16.3).
fn rows_in_flight(rows: u32) -> u32 {
    match rows {
        0..=2 => 8,
        3..=4 => 4,
        _ => 2,
    }
}

/// The lanes' partial sums added per output, in passes of `pass` rows:
/// each lane stores its partials, `sharers` work-items add a share of
/// the lanes of each output (in lane order), and one adds their shares
/// (in order) and runs the epilogue.
fn sum_lanes_and_store(out: &mut String, spec: &GemmSpec, pass: u32, sharers: u32, m: &str) {
    let c = spec.config;
    let (rows, width, lanes, tile_n) = (c.tile_m, c.work_n, c.k_lanes, c.tile_n);
    let outputs = pass * tile_n;
    let n = spec.shape.n;
    let passes = rows.div_ceil(pass);
    for p in 0..passes {
        let first = p * pass;
        let count = pass.min(rows - first);
        if p > 0 {
            let _ = writeln!(out, "  barrier(CLK_LOCAL_MEM_FENCE);");
        }
        let _ = writeln!(
            out,
            "  #pragma unroll\n  for (int r = 0; r < {count}; ++r)\n    #pragma unroll\n    for (int c = 0; c < {width}; ++c)\n      partial[(r * {lanes} + lane) * {tile_n} + tn * {width} + c] = acc[{first} + r][c];\n  barrier(CLK_LOCAL_MEM_FENCE);"
        );
        let active = count * tile_n;
        let _ = writeln!(
            out,
            "  if (tid < {}) {{\n    const int output = tid % {outputs}, share = tid / {outputs};\n    float sum = 0.0f;\n    for (int l = share; l < {lanes}; l += {sharers})\n      sum += partial[((output / {tile_n}) * {lanes} + l) * {tile_n} + output % {tile_n}];\n    shared_sums[share * {outputs} + output] = sum;\n  }}\n  barrier(CLK_LOCAL_MEM_FENCE);",
            sharers * outputs
        );
        let _ = writeln!(out, "  if (tid < {active}) {{");
        let _ = writeln!(
            out,
            "    float total = 0.0f;\n    #pragma unroll\n    for (int share = 0; share < {sharers}; ++share)\n      total += shared_sums[share * {outputs} + tid];"
        );
        let _ = writeln!(
            out,
            "    const tcc_index i = row0 + {first} + tid / {tile_n};\n    const tcc_index j = col0 + tid % {tile_n};"
        );
        let _ = writeln!(out, "    if (i < {m} && j < {n}) {{");
        for line in spec.init_statements.lines() {
            let _ = writeln!(out, "      {line}");
        }
        let _ = writeln!(out, "      const float acc_init = {};", spec.init);
        let _ = writeln!(out, "      const float acc_value = acc_init + total;");
        for line in spec.store.lines() {
            let _ = writeln!(out, "      {line}");
        }
        let _ = writeln!(out, "    }}\n  }}");
    }
    let _ = writeln!(out, "}}");
}
