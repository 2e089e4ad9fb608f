//! The register-blocked form of the GEMM template, for CPUs: a
//! configuration whose tile is one work-item's outputs (`tile_m ==
//! work_m`, `tile_n == work_n`) launches work-groups of a single
//! work-item, and a work-group of one has nobody to share a local tile
//! with, so it reads its operands straight from global memory (the
//! caches do the staging).
//!
//! Each work-item keeps its `work_m x work_n` block of C in vector
//! registers (`floatW` along n, W the widest of 16, 8, 4 dividing
//! `work_n`) and walks K once: per k it loads `work_n / W` vectors of one
//! row of B and broadcasts one element of A per output row into a fused
//! multiply-add with each. This is the shape of a BLAS microkernel; PoCL
//! compiles each `floatW` operation to the host's SIMD instructions
//! (AVX-512: one `float16` per register), where the tiled form's
//! work-group loops and barriers would vectorize only across work-items.
//!
//! Where A and B are read through their strides (or B in panels), each
//! row's start of A and each B vector's column are pointers set once
//! before the k loop, so that every load in it is a pointer plus k: the
//! multiply-adds take A's broadcast straight from memory and nothing else
//! competes for their ports (see `register_gemm_kernel`).
//!
//! A dynamic M (issue 33: `GemmSpec::m_extent`, a symbolic batch in the
//! rows) is read where the static form writes M: the row tiles of the
//! group's linear index, the clamp and the store guard; the launch's y
//! extent is the call's row tiles. Specialized at run time (its extents
//! build-time constants), the text is the static form's.
//!
//! Rows past M are clamped to the last row (their results are never
//! stored) so that the k loop needs no row guard; a tile reaching past N
//! assembles its B vectors from guarded scalar loads, the others load
//! whole vectors. (B in panels is padded to whole panels: the edge tile
//! loads whole vectors of the panels there are, and zero past them, never
//! bytes past the filter.) Where A is computed (an implicit-GEMM convolution's
//! windows), the computation is written once per output row with that
//! row's `i`, so what depends only on the row (its image and pixel)
//! hoists out of the k loop. A convolution's K is walked as its window's
//! loops (`k_window`), so that the pixel a row reads for one filter tap
//! hoists out of the channel loop too, and with `a_inside` the channel
//! loop of a tap that every row of the block reads inside the image runs
//! a second copy of the body without the padding's checks. (Otherwise,
//! with `a_element_vector`, one computation yields 4 neighbouring k and
//! the k loop steps by 4.)

use std::fmt::Write as _;

use crate::gemm::GemmSpec;
use crate::{Address, Buffer};

/// The widest SIMD vector (in floats) that divides a work-item's columns.
fn vector_width(columns: u32) -> u32 {
    [16, 8, 4, 2]
        .into_iter()
        .find(|w| columns.is_multiple_of(*w))
        .unwrap_or(1)
}

/// The C type of a vector of `width` floats.
fn vector_type(width: u32) -> String {
    if width == 1 {
        "float".into()
    } else {
        format!("float{width}")
    }
}

/// B's address for `(k, j)` when it is stored in panels of `panel`
/// columns (`GemmSpec::b_panel`): `[ceil(N / panel)][K][panel]` from B's
/// offset. Every vector of `width` columns the block loads must lie
/// within one panel, so the panel must hold whole vectors.
fn panel_address(spec: &GemmSpec, panel: i64, width: u32) -> Result<String, String> {
    let (s, columns) = (spec.shape, i64::from(spec.config.work_n));
    let width = i64::from(width);
    if spec.b_offset.is_some()
        || spec.b.batch_stride != 0
        || panel <= 0
        || panel % width != 0
        || (columns % panel != 0 && panel % columns != 0)
    {
        return Err(format!(
            "{}: B in panels of {panel} columns needs them to hold whole vectors of a {columns}-column block, with no batch stride or offset expression",
            spec.name
        ));
    }
    Ok(format!(
        "{} + (j / {panel}) * {} + k * {panel} + (j % {panel})",
        spec.b.offset,
        s.k * panel
    ))
}

/// A pointwise convolution (one tap, stride 1, no padding) whose A is its
/// NHWC image as it is (`GemmSpec::a_image`) reads that image as the
/// `N H W x C` matrix it is, through strides: each row's start a pointer
/// set before the k loop, as a matmul's A. Its computed element
/// (`a_element`) decomposed each row's pixel (`(i / W) % H`, `i % W`)
/// into an address per k, which LLVM kept as SIMD integer arithmetic
/// extracted to scalars every k (`vpextrq`, `vmovq`), on the ports the
/// multiply-adds need (MobileNetV2's last pointwise convolution, 7 x 7 x
/// 320 -> 1280 on PoCL with AVX-512).
fn pointwise_image_as_matrix(spec: &GemmSpec) -> Option<GemmSpec> {
    plain_image(spec)
        .filter(|image| image.is_matrix())
        .map(|image| GemmSpec {
            a: crate::gemm::GemmOperand {
                buffer: image.buffer.clone(),
                offset: image.offset,
                batch_stride: 0,
                row_stride: image.shape[3],
                col_stride: 1,
            },
            a_element: None,
            a_element_vector: false,
            k_window: None,
            ..spec.clone()
        })
}

/// An unpadded convolution whose A is its NHWC image as it is
/// (`GemmSpec::a_image`, walked as its window: `k_window` = taps x
/// channels) reads each row's window through pointers: each row's output
/// pixel's origin in the image set once before the k loops, each tap's
/// row pointers once per tap, and the channel loop's loads a pointer plus
/// the channel. Its computed element (`a_element`) gave each tap's rows
/// their addresses as integer arithmetic that LLVM vectorized across the
/// rows and extracted to scalars every channel (`vpbroadcastq`,
/// `vpextrq`, `vextracti128`) on a port the multiply-adds need: a 3x3
/// convolution over 16 channels (SqueezeNet's expansions, 55 x 55 x 64)
/// ran at 210 GFLOP/s on two AVX-512 cores. Returns the image.
fn image_window_rows(spec: &GemmSpec) -> Option<&crate::gemm::ConvImage> {
    plain_image(spec).filter(|image| {
        image.pads == [0, 0]
            && !image.is_matrix()
            && spec.k_window == Some([image.taps[0], image.taps[1], image.shape[3]])
    })
}

/// The convolution image A is computed from, where its element reads
/// nothing else: no offset table, no padding check, one product, and the
/// image's rows and window covering the product's M and K.
fn plain_image(spec: &GemmSpec) -> Option<&crate::gemm::ConvImage> {
    let image = spec.a_image.as_ref()?;
    (spec.a_element.is_some()
        && spec.a_offset.is_none()
        && spec.a_inside.is_none()
        && spec.shape.batch <= 1
        && image.gemm_extents() == (spec.shape.m, spec.shape.k))
        .then_some(image)
}

/// Instantiates the register-blocked form (see the module comment).
pub(crate) fn register_gemm_kernel(spec: &GemmSpec) -> Result<String, String> {
    let plain = pointwise_image_as_matrix(spec);
    let spec = plain.as_ref().unwrap_or(spec);
    let c = spec.config;
    let s = spec.shape;
    if c.split_k > 1 || spec.split_k_scratch.is_some() {
        return Err(format!(
            "{}: the register-blocked GEMM does not split K",
            spec.name
        ));
    }
    if let Some(window) = spec.k_window
        && (window.iter().product::<i64>() != s.k || (spec.a_element_vector && window[2] % 4 != 0))
    {
        return Err(format!(
            "{}: a convolution window of {window:?} must cover K = {} (with a float4 A element, in whole fours of channels)",
            spec.name, s.k
        ));
    }
    if spec.a_inside.is_some() && (spec.k_window.is_none() || spec.a_element.is_none()) {
        return Err(format!(
            "{}: a bounds check tested per tap (a_inside) needs a convolution window and a computed A element",
            spec.name
        ));
    }
    if spec.a_element_vector && (spec.a_element.is_none() || s.k % 4 != 0) {
        return Err(format!(
            "{}: a float4 A element needs a computed element and K a multiple of 4",
            spec.name
        ));
    }
    let (rows, columns) = (c.work_m, c.work_n);
    let width = vector_width(columns);
    let vectors = columns / width;
    let ty = vector_type(width);
    let mut out = String::new();
    let _ = writeln!(out, "{}", spec.comment);
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))"
    );
    let _ = writeln!(out, "{}", spec.signature());
    // M: the shape's, or a dynamic M's expression (issue 33), which the
    // launch's row tiles, the clamp and the store guard read instead.
    let m = spec.m_extent.clone().unwrap_or_else(|| s.m.to_string());
    let _ = writeln!(
        out,
        "  /* register-blocked: {rows}x{columns} outputs per work-item in {vectors} {ty} per row; M={} N={} K={} batch={} */",
        match &spec.m_extent {
            Some(extent) => format!("{extent} (at most {})", s.m),
            None => s.m.to_string(),
        },
        s.n,
        s.k,
        s.batch
    );
    // The launch is [tiles_n, tiles_m, batch] work-groups (as for the
    // tiled form), which PoCL runs in order along x; walking the row
    // tiles fastest instead lets consecutive groups reuse one column
    // panel of B from the cache.
    let (tiles_n, tiles_m) = c.tiles(&s);
    let tiles_m = match &spec.m_extent {
        Some(extent) => format!("(({extent} + {}) / {rows})", rows - 1),
        None => tiles_m.to_string(),
    };
    let _ = writeln!(
        out,
        "  const tcc_index group = (tcc_index)get_group_id(1) * {tiles_n} + (tcc_index)get_group_id(0);\n  const tcc_index row0 = (group % {tiles_m}) * {rows};\n  const tcc_index col0 = (group / {tiles_m}) * {columns};\n  const tcc_index b = (tcc_index)get_group_id(2);"
    );
    // Each row's index, clamped into the matrix.
    for r in 0..rows {
        let _ = writeln!(
            out,
            "  const tcc_index i{r} = min(row0 + {r}, (tcc_index){});",
            match &spec.m_extent {
                Some(_) => format!("({m} - 1)"),
                None => (s.m - 1).to_string(),
            }
        );
    }
    for r in 0..rows {
        for v in 0..vectors {
            let _ = writeln!(out, "  {ty} acc{r}_{v} = ({ty})(0.0f);");
        }
    }
    let b_address = match (spec.b_panel, &spec.b_offset) {
        (Some(panel), _) => panel_address(spec, panel, width)?,
        (None, Some(offset)) => offset.clone(),
        (None, None) => spec.b.address("b", "k", "j"),
    };
    let b_contiguous =
        spec.b_panel.is_some() || (spec.b_offset.is_none() && spec.b.col_stride == 1);
    // Pointers hoisted out of the k loop: each row's start of A (where A
    // is read through its strides) and each B vector's column (in panels,
    // or as stored with unit column stride), so that the loop's loads are
    // a pointer plus k and nothing else. Written as whole addresses per k,
    // the six rows' `i * K + k` were vectorized into SIMD integer
    // arithmetic and extracted to scalars every k, on the ports the
    // multiply-adds need (`vpextrq`, `vpmovsxdq`): a 6 x 16 block over
    // K = 3072 took 8.1 ms of CPU time so and 5.4 ms with the pointers
    // (pyopencl on PoCL, AVX-512, docs/benchmarks.md).
    let a_rows = (spec.a_element.is_none() && spec.a_offset.is_none()).then(|| {
        (0..rows)
            .map(|r| {
                let pointer = format!("tcc_a{r}");
                let _ = writeln!(
                    out,
                    "  __global const {}* {pointer} = {} + {};",
                    spec.a.buffer.storage.c_type(),
                    spec.a.buffer.name,
                    Address::new(spec.a.offset, vec![spec.a.batch_stride, spec.a.row_stride])
                        .at(&["b".to_string(), format!("i{r}")])
                );
                Buffer::new(pointer, spec.a.buffer.storage)
            })
            .collect::<Vec<_>>()
    });
    let a_k_index = Address::new(0, vec![spec.a.col_stride]).at(&["k"]);
    // An unpadded convolution's rows: their output pixels' origins in the
    // image (the taps' pointers follow in the k loops).
    let window_rows = image_window_rows(spec);
    if let Some(image) = window_rows {
        let [sn, sy, sx] = image.pixel_strides;
        let [oh, ow] = image.output;
        for r in 0..rows {
            let _ = writeln!(
                out,
                "  __global const {ty}* tcc_px{r} = {buffer} + {offset} + (i{r} / {pixels}) * {sn} + ((i{r} / {ow}) % {oh}) * {row_step} + (i{r} % {ow}) * {column_step};",
                ty = image.buffer.storage.c_type(),
                buffer = image.buffer.name,
                offset = image.offset,
                pixels = oh * ow,
                row_step = image.strides[0] * sy,
                column_step = image.strides[1] * sx,
            );
        }
    }
    let b_columns = match (spec.b_panel, &spec.b_offset) {
        (Some(panel), _) => Some((
            format!("k * {panel}"),
            (0..vectors)
                .map(|v| {
                    let j = format!("(col0 + {})", v * width);
                    let offset = match spec.b.offset {
                        0 => String::new(),
                        offset => format!("{offset} + "),
                    };
                    format!(
                        "{offset}({j} / {panel}) * {} + ({j} % {panel})",
                        s.k * panel
                    )
                })
                .collect::<Vec<_>>(),
        )),
        (None, None) if spec.b.col_stride == 1 => Some((
            Address::new(0, vec![spec.b.row_stride]).at(&["k"]),
            (0..vectors)
                .map(|v| {
                    Address::new(spec.b.offset, vec![spec.b.batch_stride, 1])
                        .at(&["b".to_string(), format!("col0 + {}", v * width)])
                })
                .collect(),
        )),
        _ => None,
    };
    let b_vectors = b_columns.as_ref().map(|(k_index, starts)| {
        starts
            .iter()
            .enumerate()
            .map(|(v, start)| {
                let pointer = format!("tcc_b{v}");
                let _ = writeln!(
                    out,
                    "  __global const {}* {pointer} = {} + {start};",
                    spec.b.buffer.storage.c_type(),
                    spec.b.buffer.name
                );
                (Buffer::new(pointer, spec.b.buffer.storage), k_index.clone())
            })
            .collect::<Vec<_>>()
    });
    // Only the last column tile can reach past N.
    let edge = s.n % columns as i64 != 0;
    // The first column of the last column tile (the only one that can
    // reach past N).
    let last_col0 = (tiles_n - 1) * i64::from(columns);
    if edge {
        let _ = writeln!(out, "  const int full = col0 + {columns} <= {};", s.n);
    }
    let step = if spec.a_element_vector { 4 } else { 1 };
    // One step of the k loop (`k_step` in scope): A's value for each row,
    // `step` rows of B, the multiply-adds.
    // Where the last column tile reaches past N and B is loaded as stored,
    // the k loop is written twice, for the tiles inside N (whole vectors)
    // and for the last one (its columns inside N), under one test of
    // `full` outside the loop: a test per k and vector cost a grouped
    // convolution of 34 columns a group a fifth of its time (pyopencl).
    let unswitched = edge && b_contiguous && spec.b_panel.is_none();
    // One step of the k loop for the tiles inside N (`Some(true)`), for
    // the last tile (`Some(false)`), or for either (`None`: `full` tested).
    let k_body_for = |full_tile: Option<bool>| -> String {
        let mut k_body = String::new();
        let out = &mut k_body;
        // A: one value (or float4 of 4 k) per row.
        let a_type = if spec.a_element_vector {
            "float4"
        } else {
            "float"
        };
        for r in 0..rows {
            let _ = writeln!(out, "    {a_type} ra{r};");
            if let Some(image) = window_rows {
                let pointer = Buffer::new(format!("tcc_a{r}"), image.buffer.storage);
                let load = if spec.a_element_vector {
                    pointer.load_vector(4, "k_ch")
                } else {
                    pointer.load("k_ch")
                };
                let _ = writeln!(out, "    ra{r} = {load};");
                continue;
            }
            let _ = writeln!(out, "    {{\n      const tcc_index i = i{r}, k = k_step;");
            match (&spec.a_element, &spec.a_offset) {
                (Some((statements, value)), _) => {
                    for line in statements.lines() {
                        let _ = writeln!(out, "      {line}");
                    }
                    let _ = writeln!(out, "      ra{r} = {value};");
                }
                (None, Some(offset)) => {
                    let _ = writeln!(out, "      ra{r} = {};", spec.a.buffer.load(offset));
                }
                (None, None) => {
                    let load = match &a_rows {
                        Some(pointers) => pointers[r as usize].load(&a_k_index),
                        None => spec.a.buffer.load(&spec.a.address("b", "i", "k")),
                    };
                    let _ = writeln!(out, "      ra{r} = {load};");
                }
            }
            let _ = writeln!(out, "    }}");
        }
        for kk in 0..step {
            let _ = writeln!(out, "    {{\n      const tcc_index k = k_step + {kk};");
            // B: `vectors` vectors of row k; a tile reaching past N loads
            // lane by lane, guarded (`full` is the same for the whole loop).
            for v in 0..vectors {
                let first = v * width;
                let _ = writeln!(out, "      {ty} rb{v};");
                if b_contiguous {
                    let (buffer, address) = match &b_vectors {
                        Some(pointers) => (&pointers[v as usize].0, &pointers[v as usize].1),
                        None => (&spec.b.buffer, &b_address),
                    };
                    let load = if width == 1 {
                        buffer.load(address)
                    } else {
                        buffer.load_vector(width, address)
                    };
                    // Panels hold whole panels of columns, zero past N:
                    // the edge block loads them whole too, but only the
                    // panels there are. A vector past the last panel is
                    // zero in the edge block: loaded, it would read past
                    // the filter, and whatever lies there (the next
                    // weights, denormals among them) would feed its
                    // multiply-adds (ShuffleNet's edge blocks ran 2-6x
                    // slower with some weights than with others so).
                    if let Some(panel) = spec.b_panel
                        && edge
                        && last_col0 + i64::from(first) >= (s.n + panel - 1) / panel * panel
                    {
                        let _ = writeln!(
                            out,
                            "      if (full) {{\n        const tcc_index j = col0 + {first};\n        rb{v} = {load};\n      }} else\n        rb{v} = ({ty})(0.0f);"
                        );
                        continue;
                    }
                    let guarded = edge && spec.b_panel.is_none() && full_tile != Some(true);
                    if full_tile != Some(false) {
                        let _ = writeln!(
                            out,
                            "      {}{{\n        const tcc_index j = col0 + {first};\n        rb{v} = {load};\n      }}",
                            if guarded { "if (full) " } else { "" }
                        );
                    }
                    if !guarded {
                        continue;
                    }
                    // Not `full`: this is the last column tile, whose
                    // columns past N are known here, so the vector is
                    // the loads of its columns inside N (in pieces of
                    // whole vectors) and zeros, without a guard per lane
                    // (a grouped convolution's 28 columns of a group in
                    // 16-wide blocks took 16 guarded loads a k so).
                    let valid = (s.n - last_col0 - i64::from(first)).clamp(0, i64::from(width));
                    let (buffer, address) = match &b_vectors {
                        Some(pointers) => (&pointers[v as usize].0, &pointers[v as usize].1),
                        None => (&spec.b.buffer, &b_address),
                    };
                    let mut parts = Vec::new();
                    let mut offset = 0i64;
                    for piece in [16i64, 8, 4, 2, 1] {
                        while valid - offset >= piece {
                            let at = format!("({address}) + {offset}");
                            parts.push(if piece == 1 {
                                buffer.load(&at)
                            } else {
                                buffer.load_vector(piece as u32, &at)
                            });
                            offset += piece;
                        }
                    }
                    parts.extend((valid..i64::from(width)).map(|_| "0.0f".to_string()));
                    let value = if width == 1 || parts.len() == 1 {
                        parts.remove(0)
                    } else {
                        format!("({ty})({})", parts.join(", "))
                    };
                    let _ = writeln!(
                        out,
                        "      {}{{\n        const tcc_index j = col0 + {first};\n        rb{v} = {value};\n      }}",
                        if full_tile.is_none() { "else " } else { "" }
                    );
                    continue;
                }
                let _ = writeln!(
                    out,
                    "      {{\n        float lanes[{width}];\n        for (int lane = 0; lane < {width}; ++lane) {{\n          const tcc_index j = col0 + {first} + lane;\n          lanes[lane] = j < {n} ? {load} : 0.0f;\n        }}\n        rb{v} = {gather};\n      }}",
                    n = s.n,
                    load = spec.b.buffer.load(&b_address),
                    gather = if width == 1 {
                        "lanes[0]".to_string()
                    } else {
                        format!("vload{width}(0, lanes)")
                    }
                );
            }
            for r in 0..rows {
                let a = if spec.a_element_vector {
                    format!("ra{r}.s{kk}")
                } else {
                    format!("ra{r}")
                };
                let _ = write!(out, "      {{ const {ty} a = ({ty})({a});");
                for v in 0..vectors {
                    let _ = write!(out, " acc{r}_{v} = fma(a, rb{v}, acc{r}_{v});");
                }
                let _ = writeln!(out, " }}");
            }
            let _ = writeln!(out, "    }}");
        }
        k_body
    };
    // The k loops (a convolution's window, or flat) around `k_body`.
    let k_loops = |k_body: &str| -> String {
        let mut loops = String::new();
        let out = &mut loops;
        match spec.k_window {
            // A convolution's window as three loops: the row's coordinates for
            // a tap are loop-invariant in the channel loop, which the compiler
            // hoists out of it.
            Some([taps_y, taps_x, channels]) => {
                let _ = writeln!(
                    out,
                    "  for (tcc_index k_ky = 0; k_ky < {taps_y}; ++k_ky)\n  for (tcc_index k_kx = 0; k_kx < {taps_x}; ++k_kx) {{"
                );
                if let Some(image) = window_rows {
                    let [_, sy, sx] = image.pixel_strides;
                    for r in 0..rows {
                        let _ = writeln!(
                            out,
                            "  __global const {}* tcc_a{r} = tcc_px{r} + k_ky * {} + k_kx * {};",
                            image.buffer.storage.c_type(),
                            image.dilations[0] * sy,
                            image.dilations[1] * sx
                        );
                    }
                }
                let channel_loop = format!(
                    "  for (tcc_index k_ch = 0; k_ch < {channels}; k_ch += {step}) {{\n    const tcc_index k_step = (k_ky * {taps_x} + k_kx) * {channels} + k_ch;\n{k_body}  }}\n"
                );
                match (&spec.a_inside, &spec.a_element) {
                    // The padding's check once per tap for every row (the
                    // statements at channel 0), then the channel loop without
                    // it where all rows are inside the image, with it elsewhere.
                    (Some(condition), Some((statements, _))) => {
                        let _ = writeln!(out, "  bool tcc_all_inside = true;");
                        for r in 0..rows {
                            let _ = writeln!(
                                out,
                                "  {{\n    const bool tcc_inside = false;\n    const tcc_index i = i{r}, k_ch = 0, k = (k_ky * {taps_x} + k_kx) * {channels};"
                            );
                            for line in statements.lines() {
                                let _ = writeln!(out, "    {line}");
                            }
                            let _ = writeln!(
                                out,
                                "    tcc_all_inside = tcc_all_inside && {condition};\n  }}"
                            );
                        }
                        let _ = write!(
                            out,
                            "  if (tcc_all_inside) {{\n  const bool tcc_inside = true;\n{channel_loop}  }} else {{\n  const bool tcc_inside = false;\n{channel_loop}  }}\n"
                        );
                    }
                    _ => out.push_str(&channel_loop),
                }
                let _ = writeln!(out, "  }}");
            }
            None => {
                let _ = writeln!(
                    out,
                    "  for (tcc_index k_step = 0; k_step < {}; k_step += {step}) {{\n{k_body}  }}",
                    s.k
                );
            }
        }
        loops
    };
    if unswitched {
        let _ = write!(
            out,
            "  if (full) {{\n{}  }} else {{\n{}  }}\n",
            k_loops(&k_body_for(Some(true))),
            k_loops(&k_body_for(Some(false)))
        );
    } else {
        out.push_str(&k_loops(&k_body_for(None)));
    }
    // The epilogue, per output element, from a private copy of the block
    // (a loop rather than rows x columns copies of the epilogue's code).
    // The block is aligned to the vector and each accumulator stored whole:
    // `vstoreN` is PoCL's library call, which LLVM splits into 128-bit
    // stores, and the epilogue's 512-bit loads of those bytes then miss
    // store-to-load forwarding (a stall of about 15 cycles each: a third of
    // a 1x1 convolution's time at K = 16 on AVX-512).
    if width == 1 {
        let _ = writeln!(out, "  float block[{rows}][{columns}];");
    } else {
        let _ = writeln!(
            out,
            "  float block[{rows}][{columns}] __attribute__((aligned({})));",
            width * 4
        );
    }
    for r in 0..rows {
        for v in 0..vectors {
            if width == 1 {
                let _ = writeln!(out, "  block[{r}][{v}] = acc{r}_{v};");
            } else {
                let _ = writeln!(
                    out,
                    "  *(float{width}*)&block[{r}][{}] = acc{r}_{v};",
                    v * width
                );
            }
        }
    }
    // The per-element epilogue, in a column loop without an exit where the
    // block lies inside N (the compiler vectorizes that loop); a block
    // reaching past N stops at the edge.
    let mut element = String::new();
    for line in spec.init_statements.lines() {
        let _ = writeln!(element, "      {line}");
    }
    let _ = writeln!(element, "      const float acc_init = {};", spec.init);
    let _ = writeln!(
        element,
        "      const float acc_value = acc_init + block[wm][wn];"
    );
    for line in spec.store.lines() {
        let _ = writeln!(element, "      {line}");
    }
    // The loop without an exit is vectorized at the block's own width:
    // PoCL's vectorizer picks 8 lanes on AVX-512 hosts (LLVM prefers
    // 256-bit vectors there), which halved the throughput of a SiLU
    // epilogue's exp against the block's `float16`.
    let column_loop = |guard: &str| {
        let vectorize = if width > 1 && guard.is_empty() {
            format!("    #pragma clang loop vectorize_width({width})\n")
        } else {
            String::new()
        };
        format!(
            "{vectorize}    for (int wn = 0; wn < {columns}; ++wn) {{\n      const tcc_index j = col0 + wn;\n{guard}{element}    }}\n"
        )
    };
    let _ = writeln!(
        out,
        "  for (int wm = 0; wm < {rows}; ++wm) {{\n    const tcc_index i = row0 + wm;\n    if (i >= {m}) break;"
    );
    if edge {
        let _ = write!(
            out,
            "    if (full) {{\n{}    }} else {{\n{}    }}\n",
            column_loop(""),
            column_loop(&format!("      if (j >= {}) break;\n", s.n))
        );
    } else {
        out.push_str(&column_loop(""));
    }
    let _ = writeln!(out, "  }}\n}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::gemm::tests::spec;
    use crate::{GemmConfig, gemm_kernel};

    #[test]
    fn the_epilogue_of_a_block_inside_n_has_no_exit_in_its_column_loop() {
        // N = 64: every 32-column block lies inside N.
        let mut inside = spec(GemmConfig::register_blocked(4, 32));
        inside.shape.n = 64;
        let text = gemm_kernel(&inside).unwrap();
        assert!(!text.contains("if (j >="), "{text}");
        // The accumulators stored whole into the aligned block (a
        // `vstore16` is split into 128-bit stores, whose bytes the loop's
        // 512-bit loads cannot forward).
        assert!(
            text.contains("float block[4][32] __attribute__((aligned(64)));"),
            "{text}"
        );
        assert!(
            text.contains("*(float16*)&block[3][16] = acc3_1;"),
            "{text}"
        );
        assert!(!text.contains("if (full)"), "{text}");
        // ... vectorized at the block's vector width (two float16 a row).
        assert!(
            text.contains(
                "    #pragma clang loop vectorize_width(16)\n    for (int wn = 0; wn < 32; ++wn) {"
            ),
            "{text}"
        );
        // N = 50: the last block stops at the edge, the others do not.
        let text = gemm_kernel(&spec(GemmConfig::register_blocked(4, 32))).unwrap();
        let epilogue = &text[text.find("float block[").unwrap()..];
        assert_eq!(
            epilogue.matches("if (j >= 50) break;").count(),
            1,
            "{epilogue}"
        );
        assert!(epilogue.contains("if (full) {"), "{epilogue}");
        // Only the loop without an exit carries the vectorize pragma.
        assert_eq!(
            epilogue.matches("vectorize_width(16)").count(),
            1,
            "{epilogue}"
        );
        assert_eq!(
            epilogue.matches("a0[i * 50 + j] = acc_value;").count(),
            2,
            "{epilogue}"
        );
    }

    #[test]
    fn a_dynamic_m_is_read_where_the_static_form_writes_m() {
        // A symbolic batch in the rows (issue 33): the row tiles, the
        // clamp and the store guard read the call's M; the scalar is a
        // parameter after the buffers; no static M is left.
        let mut dynamic = spec(GemmConfig::register_blocked(4, 32));
        dynamic.shape.m = 64;
        dynamic.m_extent = Some("(m * 4)".to_string());
        dynamic.scalars = vec!["m".to_string()];
        let text = gemm_kernel(&dynamic).unwrap();
        for expected in [
            "    const tcc_index m) {",
            "M=(m * 4) (at most 64) N=50",
            "const tcc_index row0 = (group % (((m * 4) + 3) / 4)) * 4;",
            "const tcc_index col0 = (group / (((m * 4) + 3) / 4)) * 32;",
            "const tcc_index i3 = min(row0 + 3, (tcc_index)((m * 4) - 1));",
            "if (i >= (m * 4)) break;",
        ] {
            assert!(text.contains(expected), "{expected} in {text}");
        }
        assert!(!text.contains("63"), "{text}");
        assert!(!text.contains(">= 64"), "{text}");
        // The static form is unchanged: M from the shape.
        let mut fixed = dynamic;
        fixed.m_extent = None;
        fixed.scalars.clear();
        let text = gemm_kernel(&fixed).unwrap();
        assert!(text.contains("(tcc_index)63);"), "{text}");
        assert!(
            text.contains("const tcc_index row0 = (group % 16) * 4;"),
            "{text}"
        );
    }

    #[test]
    fn b_in_panels_loads_a_blocks_columns_contiguous_in_k() {
        let mut panels = spec(GemmConfig::register_blocked(4, 32));
        panels.shape.n = 64;
        panels.b.offset = 8;
        panels.b_panel = Some(16);
        let text = gemm_kernel(&panels).unwrap();
        // K = 30: each panel is 30 rows of 16; the block's two float16 per
        // k come from two panels, 16 floats on per k.
        assert!(
            text.contains(
                "__global const float* tcc_b1 = a2 + 8 + ((col0 + 16) / 16) * 480 + ((col0 + 16) % 16);"
            ),
            "{text}"
        );
        assert!(
            text.contains("rb1 = vload16(0, tcc_b1 + k * 16);"),
            "{text}"
        );
        assert!(!text.contains("lanes["), "{text}");
    }

    #[test]
    fn b_in_panels_reaching_past_n_loads_the_padded_panel_whole() {
        // N = 50: the last 32-column block reaches past N; its panels are
        // padded with zero columns, so it loads whole vectors too.
        let mut ragged = spec(GemmConfig::register_blocked(4, 32));
        ragged.b_panel = Some(16);
        let text = gemm_kernel(&ragged).unwrap();
        assert!(!text.contains("lanes["), "{text}");
        assert!(
            !text.contains("if (full) {\n        const tcc_index j"),
            "{text}"
        );
        assert!(text.contains("if (j >= 50) break;"), "{text}");
    }

    #[test]
    fn b_in_panels_never_loads_past_the_last_panel() {
        // N = 34 in panels of 16: three panels (48 columns). The last
        // 32-column block starts at 32: its first vector is panel 2, its
        // second would be a fourth panel, past the filter: zero there.
        let mut ragged = spec(GemmConfig::register_blocked(4, 32));
        ragged.shape.n = 34;
        ragged.b_panel = Some(16);
        let text = gemm_kernel(&ragged).unwrap();
        assert!(
            text.contains("      {\n        const tcc_index j = col0 + 0;\n        rb0 = vload16("),
            "{text}"
        );
        assert!(
            text.contains(
                "      if (full) {\n        const tcc_index j = col0 + 16;\n        rb1 = vload16(0, tcc_b1 + k * 16);\n      } else\n        rb1 = (float16)(0.0f);"
            ),
            "{text}"
        );
        // N = 68 in 64-column blocks: five panels; the edge block (at 64)
        // has one, its other three vectors are zero there.
        let mut wide = spec(GemmConfig::register_blocked(4, 64));
        wide.shape.n = 68;
        wide.b_panel = Some(16);
        let text = gemm_kernel(&wide).unwrap();
        assert_eq!(text.matches("} else\n        rb").count(), 3, "{text}");
        assert!(!text.contains("rb0 = (float16)(0.0f)"), "{text}");
    }

    #[test]
    fn b_in_panels_must_hold_the_blocks_vectors() {
        // A float16 vector does not fit in panels of 8.
        let mut narrow = spec(GemmConfig::register_blocked(4, 32));
        narrow.shape.n = 64;
        narrow.b_panel = Some(8);
        let error = gemm_kernel(&narrow).unwrap_err();
        assert!(error.contains("panels of 8 columns"), "{error}");
        // The tiled forms read B as stored.
        let mut tiled = spec(crate::gemm::tests::tiles(crate::gemm::tests::SMALL_TILES));
        tiled.shape.n = 64;
        tiled.b_panel = Some(16);
        let error = gemm_kernel(&tiled).unwrap_err();
        assert!(error.contains("register-blocked GEMM only"), "{error}");
    }

    #[test]
    fn one_work_item_keeps_its_block_in_vector_registers() {
        let text = gemm_kernel(&spec(GemmConfig::register_blocked(4, 32))).unwrap();
        assert!(text.contains("reqd_work_group_size(1, 1, 1)"), "{text}");
        assert!(!text.contains("__local"), "{text}");
        assert!(!text.contains("barrier"), "{text}");
        // 4 rows x 2 float16 accumulators; row 3 clamped into M = 100.
        assert!(text.contains("float16 acc3_1 = (float16)(0.0f);"), "{text}");
        assert!(!text.contains("acc4_0"), "{text}");
        assert!(
            text.contains("const tcc_index i3 = min(row0 + 3, (tcc_index)99);"),
            "{text}"
        );
        // Each row's start of A and each B vector's column hoisted out of
        // the k loop, which reads them at k.
        assert!(
            text.contains("__global const float* tcc_a3 = a1 + i3 * 30;"),
            "{text}"
        );
        assert!(text.contains("ra3 = tcc_a3[k];"), "{text}");
        assert!(
            text.contains("__global const float* tcc_b1 = a2 + col0 + 16;"),
            "{text}"
        );
        assert!(
            text.contains("rb1 = vload16(0, tcc_b1 + k * 50);"),
            "{text}"
        );
        let k_loop =
            &text[text.find("for (tcc_index k_step").unwrap()..text.find("float block[").unwrap()];
        assert!(!k_loop.contains(" a1["), "{k_loop}");
        assert!(!k_loop.contains("a2 +"), "{k_loop}");
        // 25 row tiles of 4 (M = 100) walked fastest, then 2 column tiles.
        assert!(
            text.contains("const tcc_index group = (tcc_index)get_group_id(1) * 2 + (tcc_index)get_group_id(0);"),
            "{text}"
        );
        assert!(
            text.contains("const tcc_index row0 = (group % 25) * 4;"),
            "{text}"
        );
        assert!(
            text.contains("const tcc_index col0 = (group / 25) * 32;"),
            "{text}"
        );
        assert!(
            text.contains("acc3_0 = fma(a, rb0, acc3_0); acc3_1 = fma(a, rb1, acc3_1);"),
            "{text}"
        );
        assert!(text.contains("a0[i * 50 + j] = acc_value;"), "{text}");
    }

    #[test]
    fn strided_operands_hoist_their_batch_and_row_but_keep_their_strides() {
        // A read transposed (column stride 100) and batched; B with a
        // column stride of 2 (not vector-loadable): A's rows are still
        // hoisted, each k a stride on; B keeps its whole address.
        let mut strided = spec(GemmConfig::register_blocked(2, 16));
        strided.shape.n = 64;
        strided.shape.batch = 3;
        strided.a.row_stride = 1;
        strided.a.col_stride = 100;
        strided.a.batch_stride = 3000;
        strided.a.offset = 4;
        strided.b.col_stride = 2;
        let text = gemm_kernel(&strided).unwrap();
        assert!(
            text.contains("__global const float* tcc_a1 = a1 + 4 + b * 3000 + i1;"),
            "{text}"
        );
        assert!(text.contains("ra1 = tcc_a1[k * 100];"), "{text}");
        assert!(!text.contains("tcc_b0"), "{text}");
        assert!(text.contains("a2[k * 50 + j * 2]"), "{text}");
    }

    #[test]
    fn a_tile_reaching_past_n_loads_only_b_inside_n_in_a_k_loop_of_its_own() {
        // N = 50 is not a multiple of 32: the k loop comes twice, for the
        // tiles inside N and for the last one, under one test of `full`.
        let text = gemm_kernel(&spec(GemmConfig::register_blocked(4, 32))).unwrap();
        assert!(text.contains("const int full = col0 + 32 <= 50;"), "{text}");
        assert!(
            text.contains("  if (full) {\n  for (tcc_index k_step = 0;"),
            "{text}"
        );
        assert!(
            text.contains("  } else {\n  for (tcc_index k_step = 0;"),
            "{text}"
        );
        assert_eq!(
            text.matches("for (tcc_index k_step = 0;").count(),
            2,
            "{text}"
        );
        // Inside N whole vectors, unguarded.
        assert!(
            text.contains("{\n        const tcc_index j = col0 + 16;\n        rb1 = vload16(0, tcc_b1 + k * 50);"),
            "{text}"
        );
        // The last tile (columns 32..49): its first vector whole, of its
        // second the 2 columns inside N and zeros; no per-lane guard.
        assert!(
            text.contains("rb1 = (float16)(vload2(0, tcc_b1 + (k * 50) + 0), 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);"),
            "{text}"
        );
        assert!(
            text.contains("rb0 = vload16(0, tcc_b0 + (k * 50) + 0);"),
            "{text}"
        );
        assert!(!text.contains("lanes["), "{text}");
        assert!(!text.contains("      if (full)"), "{text}");
        // 10 columns divide into 5 float2 per row and no tile reaches past N.
        let mut narrow = spec(GemmConfig::register_blocked(2, 10));
        narrow.shape.n = 10;
        let text = gemm_kernel(&narrow).unwrap();
        assert!(text.contains("float2 acc1_4"), "{text}");
        assert!(!text.contains("full"), "{text}");
    }

    #[test]
    fn a_float4_a_element_steps_k_by_four() {
        let mut spec = spec(GemmConfig::register_blocked(2, 16));
        spec.shape.k = 32;
        spec.a_element = Some((
            "const int inside = i < 90;".into(),
            "(inside ? vload4(0, a1 + i * 32 + k) : (float4)(0.0f))".into(),
        ));
        spec.a_element_vector = true;
        let text = gemm_kernel(&spec).unwrap();
        assert!(text.contains("k_step += 4"), "{text}");
        assert!(text.contains("float4 ra1;"), "{text}");
        assert!(text.contains("const int inside = i < 90;"), "{text}");
        // The fourth k of the step broadcasts the fourth lane.
        assert!(text.contains("const tcc_index k = k_step + 3;"), "{text}");
        assert!(text.contains("(float16)(ra1.s3)"), "{text}");
        // K must come in fours.
        spec.shape.k = 30;
        assert!(gemm_kernel(&spec).is_err());
    }

    #[test]
    fn an_unpadded_windows_rows_are_read_through_tap_pointers() {
        // 3x3, stride 2 in x, no padding over a 2 x 10 x 9 x 8 image
        // (output 8 x 4 a image: 64 rows, K = 72): each row's pixel origin
        // once, each tap's row pointers once per tap, loads pointer +
        // channel.
        let mut spec = spec(GemmConfig::register_blocked(2, 16));
        spec.shape.m = 64;
        spec.shape.k = 72;
        spec.a_element = Some((
            "const tcc_index v0 = ((i / 4) % 8) + k_ky;".into(),
            "a1[(i / 32) * 720 + v0 * 72 + ((i % 4) * 2 + k_kx) * 8 + k_ch]".into(),
        ));
        spec.k_window = Some([3, 3, 8]);
        let image = crate::gemm::ConvImage {
            buffer: crate::Buffer::f32("a1"),
            offset: 0,
            shape: [2, 10, 9, 8],
            pixel_strides: [720, 72, 8],
            output: [8, 4],
            taps: [3, 3],
            strides: [1, 2],
            dilations: [1, 1],
            pads: [0, 0],
        };
        spec.a_image = Some(image.clone());
        let text = gemm_kernel(&spec).unwrap();
        assert!(
            text.contains(
                "__global const float* tcc_px1 = a1 + 0 + (i1 / 32) * 720 + ((i1 / 4) % 8) * 72 + (i1 % 4) * 16;"
            ),
            "{text}"
        );
        assert!(
            text.contains("  for (tcc_index k_kx = 0; k_kx < 3; ++k_kx) {\n  __global const float* tcc_a0 = tcc_px0 + k_ky * 72 + k_kx * 8;"),
            "{text}"
        );
        assert!(text.contains("    ra1 = tcc_a1[k_ch];"), "{text}");
        assert!(!text.contains("v0"), "{text}");
        // Padding (checked per tap) keeps the computed element.
        let mut padded = spec.clone();
        padded.a_image = Some(crate::gemm::ConvImage {
            pads: [1, 1],
            ..image
        });
        let text = gemm_kernel(&padded).unwrap();
        assert!(text.contains("v0"), "{text}");
        assert!(!text.contains("tcc_px0"), "{text}");
    }

    #[test]
    fn a_pointwise_convolutions_image_is_read_as_its_matrix() {
        // 1x1, stride 1, no padding over a 1 x 10 x 9 x 8 image: A is the
        // image as a 90 x 8 matrix, read through row pointers.
        let mut spec = spec(GemmConfig::register_blocked(2, 16));
        spec.shape.m = 90;
        spec.shape.k = 8;
        spec.a_element = Some((
            String::new(),
            "a1[0 * 720 + ((i / 9) % 10) * 72 + (i % 9) * 8 + k_ch]".into(),
        ));
        spec.k_window = Some([1, 1, 8]);
        let image = crate::gemm::ConvImage {
            buffer: crate::Buffer::f32("a1"),
            offset: 0,
            shape: [1, 10, 9, 8],
            pixel_strides: [720, 72, 8],
            output: [10, 9],
            taps: [1, 1],
            strides: [1, 1],
            dilations: [1, 1],
            pads: [0, 0],
        };
        spec.a_image = Some(image.clone());
        let text = gemm_kernel(&spec).unwrap();
        assert!(
            text.contains("__global const float* tcc_a0 = a1 + i0 * 8;"),
            "{text}"
        );
        assert!(text.contains("ra0 = tcc_a0[k];"), "{text}");
        assert!(!text.contains("(i / 9) % 10"), "{text}");
        // Near misses keep the computed element: a 3x3 window, a stride.
        for near in [
            crate::gemm::ConvImage {
                taps: [3, 3],
                pads: [1, 1],
                ..image.clone()
            },
            crate::gemm::ConvImage {
                strides: [2, 2],
                output: [5, 5],
                ..image.clone()
            },
        ] {
            let mut other = spec.clone();
            other.a_image = Some(near);
            let text = gemm_kernel(&other).unwrap();
            assert!(text.contains("(i / 9) % 10"), "{text}");
            assert!(!text.contains("tcc_a0"), "{text}");
        }
    }

    #[test]
    fn a_convolution_window_is_walked_as_its_loops() {
        // A 3x3 window over 8 channels: K = 72.
        let mut spec = spec(GemmConfig::register_blocked(2, 16));
        spec.shape.k = 72;
        spec.a_element = Some((
            "const bool inside = (i % 10) + k_kx >= 1;\nconst float value = a1[i * 8 + k_ch];"
                .into(),
            "((tcc_inside | inside) ? value : 0.0f)".into(),
        ));
        spec.k_window = Some([3, 3, 8]);
        let text = gemm_kernel(&spec).unwrap();
        assert!(
            text.contains("for (tcc_index k_ky = 0; k_ky < 3; ++k_ky)\n  for (tcc_index k_kx = 0; k_kx < 3; ++k_kx) {"),
            "{text}"
        );
        assert!(
            text.contains("for (tcc_index k_ch = 0; k_ch < 8; k_ch += 1) {\n    const tcc_index k_step = (k_ky * 3 + k_kx) * 8 + k_ch;"),
            "{text}"
        );
        // B's row is the flat k.
        assert!(
            text.contains("rb0 = vload16(0, tcc_b0 + k * 50);"),
            "{text}"
        );
        // Without a per-tap check the channel loop comes once per kind of
        // column tile (N = 50: the last tile reaches past N).
        assert_eq!(text.matches("k_ch < 8").count(), 2, "{text}");
        assert!(!text.contains("tcc_all_inside"), "{text}");

        // With it: every row's check at channel 0, then the channel loop
        // twice, the bounds checks folded away in the first.
        spec.a_inside = Some("inside".into());
        let text = gemm_kernel(&spec).unwrap();
        assert!(
            text.contains("const tcc_index i = i1, k_ch = 0, k = (k_ky * 3 + k_kx) * 8;"),
            "{text}"
        );
        assert!(
            text.contains("tcc_all_inside = tcc_all_inside && inside;"),
            "{text}"
        );
        assert!(
            text.contains(
                "if (tcc_all_inside) {\n  const bool tcc_inside = true;\n  for (tcc_index k_ch = 0;"
            ),
            "{text}"
        );
        assert!(
            text.contains("} else {\n  const bool tcc_inside = false;\n  for (tcc_index k_ch = 0;"),
            "{text}"
        );
        assert_eq!(text.matches("k_ch < 8").count(), 4, "{text}");

        // The window must cover K, one k per step.
        spec.shape.k = 70;
        assert!(gemm_kernel(&spec).is_err());
        spec.shape.k = 72;
        // A float4 element (a producer's arithmetic 4 channels at a time)
        // steps the channel loop by 4, in whole fours of channels.
        spec.a_element_vector = true;
        let text = gemm_kernel(&spec).unwrap();
        assert!(
            text.contains("for (tcc_index k_ch = 0; k_ch < 8; k_ch += 4) {"),
            "{text}"
        );
        assert!(text.contains("(float16)(ra1.s3)"), "{text}");
        spec.k_window = Some([3, 3, 6]);
        spec.shape.k = 54;
        assert!(gemm_kernel(&spec).is_err());
        spec.k_window = Some([3, 3, 8]);
        spec.shape.k = 72;
        // A per-tap check needs the window.
        spec.a_element_vector = false;
        spec.k_window = None;
        assert!(gemm_kernel(&spec).is_err());
    }

    #[test]
    fn split_k_is_refused() {
        let mut config = GemmConfig::register_blocked(4, 16);
        config.split_k = 2;
        assert!(config.validate().is_err());
        assert!(gemm_kernel(&spec(config)).is_err());
    }
}
