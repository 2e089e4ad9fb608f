//! Tests of the tiled GEMM template.

use super::*;
use crate::Storage;

/// 32x32x8 tiles of 2x2 outputs per work-item, no split (see [`tiles`]).
pub(crate) const SMALL_TILES: [u32; 6] = [32, 32, 8, 2, 2, 1];

/// A configuration from `[tile_m, tile_n, tile_k, work_m, work_n, split_k]`.
pub(crate) fn tiles([tile_m, tile_n, tile_k, work_m, work_n, split_k]: [u32; 6]) -> GemmConfig {
    GemmConfig {
        tile_k,
        work_m,
        work_n,
        split_k,
        ..GemmConfig::register_blocked(tile_m, tile_n)
    }
}

/// A 100x50x30 product of two row-major matrices, a1 and a2, into a0.
pub(crate) fn spec(config: GemmConfig) -> GemmSpec {
    let operand = |p: &str, rs: i64| GemmOperand {
        buffer: Buffer::f32(p),
        offset: 0,
        batch_stride: 0,
        row_stride: rs,
        col_stride: 1,
    };
    GemmSpec {
        name: "matmul_0".into(),
        parameters: KernelParameters::floats(&[true]),
        comment: "/* test */".into(),
        config,
        shape: GemmShape {
            batch: 1,
            m: 100,
            n: 50,
            k: 30,
        },
        a: operand("a1", 30),
        a_offset: None,
        a_element: None,
        a_element_vector: false,
        k_window: None,
        a_inside: None,
        a_image: None,
        b: operand("a2", 50),
        b_offset: None,
        b_panel: None,
        init_statements: String::new(),
        init: "0.0f".into(),
        store: "a0[i * 50 + j] = acc_value;".into(),
        vector_store: None,
        split_k_scratch: None,
        tensor_map_slots: None,
        dynamic_local: false,
        m_extent: None,
        scalars: Vec::new(),
        tensor_cores: None,
    }
}

#[test]
fn instantiates_with_guards_and_local_tiles() {
    let text = gemm_kernel(&spec(tiles(SMALL_TILES))).unwrap();
    assert!(text.contains("reqd_work_group_size(16, 16, 1)"), "{text}");
    assert!(
        text.contains("__local float tile_a[8][33] __attribute__((aligned(16)));"),
        "{text}"
    );
    assert!(
        text.contains("(i < 100 && k < 30) ? a1[i * 30 + k] : 0.0f"),
        "{text}"
    );
    assert!(text.contains("a0[i * 50 + j] = acc_value;"), "{text}");
}

#[test]
fn custom_a_offsets_replace_the_strided_address() {
    let mut spec = spec(tiles(SMALL_TILES));
    spec.a_offset = Some("conv_offset(i, k)".into());
    let text = gemm_kernel(&spec).unwrap();
    assert!(text.contains("? a1[conv_offset(i, k)] : 0.0f"), "{text}");
}

#[test]
fn computed_a_elements_replace_the_load_inside_the_guard() {
    let mut spec = spec(tiles(SMALL_TILES));
    spec.a_element = Some((
        "const tcc_index y = i - 1;\nconst float v = a1[y < 0 ? 0 : y];".into(),
        "(y >= 0 ? v : 0.5f)".into(),
    ));
    let text = gemm_kernel(&spec).unwrap();
    assert!(
        text.contains(
            "      float element = 0.0f;\n      if (i < 100 && k < 30) {\n        const tcc_index y = i - 1;\n        const float v = a1[y < 0 ? 0 : y];\n        element = (y >= 0 ? v : 0.5f);\n      }\n      fetch_a[r] = element;"
        ),
        "{text}"
    );
    assert!(!text.contains("vload4(0, a1"), "{text}");
    assert!(
        text.contains("      tile_a[kk][mm] = fetch_a[r];"),
        "{text}"
    );
}

#[test]
fn the_next_tiles_loads_are_issued_before_the_current_tiles_arithmetic() {
    let text = gemm_kernel(&spec(tiles(SMALL_TILES))).unwrap();
    let first_fetch = text.find("fetch_a[r] =").unwrap();
    let k_loop = text
        .find("for (tcc_index k0 = 0; k0 < 30; k0 += 8)")
        .unwrap();
    let store = text.find("tile_a[kk][mm] = fetch_a[r];").unwrap();
    let barrier = text[store..].find("barrier(CLK_LOCAL_MEM_FENCE);").unwrap() + store;
    let next = text.find("if (k0 + 8 < 30) {").unwrap();
    let next_fetch = text[next..].find("fetch_a[r] =").unwrap() + next;
    let arithmetic = text.find("acc[wm][wn] = fma(").unwrap();
    assert!(first_fetch < k_loop, "{text}");
    assert!(
        k_loop < store && store < barrier && barrier < next,
        "{text}"
    );
    assert!(next < next_fetch && next_fetch < arithmetic, "{text}");
}

/// `spec` at M = 64, N = 64, K = 32 with row-major operands whose rows
/// keep float4 alignment.
fn aligned_64(config: GemmConfig) -> GemmSpec {
    let mut spec = spec(config);
    spec.shape = GemmShape {
        batch: 1,
        m: 64,
        n: 64,
        k: 32,
    };
    spec.a.row_stride = 32;
    spec.b.row_stride = 64;
    spec
}

#[test]
fn aligned_operands_are_loaded_as_float4() {
    let text = gemm_kernel(&aligned_64(tiles(SMALL_TILES))).unwrap();
    assert!(text.contains("vload4(0, a1 + i * 32 + k)"), "{text}");
    assert!(
        text.contains("fetch_b[r] = (k < 32 && j < 64) ? vload4(0, a2 + k * 64 + j)"),
        "{text}"
    );
    assert!(
        text.contains("vstore4(fetch_b[r], 0, &tile_b[kk][nn]);"),
        "{text}"
    );
}

#[test]
fn fours_of_outputs_read_their_operands_as_float4() {
    let text = gemm_kernel(&spec(tiles([128, 128, 16, 8, 8, 1]))).unwrap();
    for expected in [
        // Rows padded by 4 words keep float4 alignment (two stages, each
        // a k step of 8: see `GemmConfig::fma_config`).
        "__local float tile_a[2][8][132] __attribute__((aligned(16)));",
        "k0 += 8;",
        "const float4 v = *(__local const float4*)&tile_a[0][kk][g * 64 + ty * 4];",
        "const float4 v = *(__local const float4*)&tile_b[1][kk][g * 64 + tx * 4];",
        // Work-item ty owns rows 4 ty .. 4 ty + 3 of each 64.
        "const tcc_index i = row0 + ((wm / 4) * 64 + ty * 4 + wm % 4);",
        "const tcc_index j = col0 + ((wn / 4) * 64 + tx * 4 + wn % 4);",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
}

#[test]
fn float4_tiles_are_double_buffered_with_one_barrier_per_k_step() {
    let config = tiles([64, 64, 16, 4, 4, 1]);
    assert_eq!(config.local_stages(), 2);
    assert_eq!(config.local_bytes(), 2 * 4 * 16 * 128);
    assert_eq!(tiles(SMALL_TILES).local_stages(), 1);
    let text = gemm_kernel(&spec(config)).unwrap();
    assert_contains(
        &text,
        &[
            "__local float tile_a[2][16][68] __attribute__((aligned(16)));",
            "__local float tile_b[2][16][64] __attribute__((aligned(16)));",
            // Warps of 8x4 work-items: a warp reads 8 float4 of B and 4 of A
            // per k.
            "const int tid = (int)get_local_id(1) * 16 + (int)get_local_id(0);",
            "const int tx = (tid / 32 % 2) * 8 + tid % 8;",
            "const int ty = (tid / 32 / 2) * 4 + tid % 32 / 8;",
            "tile_a[0][kk][mm] = fetch_a[r];",
        ],
    );
    // The loop runs two steps per iteration, each: prefetch A's next tile,
    // multiply half of the current set, store A into the other set; the
    // same for B; one barrier.
    let k_loop = text.find("for (tcc_index k0 = 0; k0 < 30;) {").unwrap();
    let body = &text[k_loop..text.find("acc_init").unwrap()];
    let order = [
        "if (k0 + 16 < 30) {",
        "fetch_a[r] = (i < 100 && k < 30) ? a1[i * 30 + k] : 0.0f;",
        "for (int kk = 0; kk < 8; ++kk)",
        "&tile_a[0][kk]",
        "tile_a[1][kk][mm] = fetch_a[r];",
        "fetch_b[r] = (k < 30 && j < 50) ? a2[k * 50 + j] : 0.0f;",
        "for (int kk = 8; kk < 16; ++kk)",
        "tile_b[1][kk][nn] = fetch_b[r];",
        "barrier(CLK_LOCAL_MEM_FENCE);",
        "k0 += 16;",
        "if (k0 >= 30) break;",
        "&tile_a[1][kk]",
        "tile_a[0][kk][mm] = fetch_a[r];",
        "barrier(CLK_LOCAL_MEM_FENCE);",
    ];
    let mut at = 0;
    for expected in order {
        at += body[at..]
            .find(expected)
            .unwrap_or_else(|| panic!("`{expected}` out of order in:\n{body}"));
    }
    assert_eq!(body.matches("barrier(").count(), 2, "{text}");
    // The first tile is in place before the loop.
    assert!(
        text[..k_loop].contains("barrier(CLK_LOCAL_MEM_FENCE);"),
        "{text}"
    );
}

#[test]
fn a_dynamic_m_keeps_every_m_guard() {
    // The tiles divide the declared maximum M = 64, so the static kernel
    // drops its M checks; a call's M (the scalar `m`) may be any smaller
    // extent, so the dynamic one keeps them, and declares the scalar.
    let mut dynamic = aligned_64(tiles([64, 64, 16, 4, 4, 1]));
    dynamic.m_extent = Some("(m * 4)".to_string());
    dynamic.scalars = vec!["m".to_string()];
    let text = gemm_kernel(&dynamic).unwrap();
    assert_contains(
        &text,
        &[
            "    const tcc_index m) {",
            "M=(m * 4) (at most 64) N=64 K=32",
            "fetch_a[r] = (i < (m * 4)) ? *(__global const float4*)(a1 + i * 32 + k) : (float4)(0.0f);",
            "fetch_b[r] = *(__global const float4*)(a2 + k * 64 + j);",
            "if (i < (m * 4) && j < 64) {",
        ],
    );
    assert!(!text.contains("i < 64"), "{text}");
    // Split-K takes it: the slices meet per tile of the maximum's layout,
    // and the last slice's stores keep the guard.
    let mut split = dynamic.clone();
    split.config.split_k = 2;
    split.split_k_scratch = Some((Buffer::f32("a3"), Buffer::f32("a4")));
    let text = gemm_kernel(&split).unwrap();
    assert_contains(
        &text,
        &[
            "const tcc_index tile = (b * 1 + (tcc_index)get_group_id(1)) * 1 + (tcc_index)get_group_id(0);",
            "if (i < (m * 4) && j < 64) {",
        ],
    );
    assert!(!text.contains("i < 64"), "{text}");
    // The int8 form refuses it, named.
    let mut int8 = dynamic.clone();
    int8.tensor_cores = Some(TensorCores::S8);
    let error = gemm_kernel(&int8).unwrap_err();
    assert!(error.contains("not the int8 form"), "{error}");
    // Tensor cores take it through mma.sync (never wgmma, whose tensor
    // maps are sized by a static M), every M guard kept in both bodies.
    let mut tf32 = dynamic;
    tf32.tensor_cores = Some(TensorCores::Tf32);
    let text = gemm_kernel(&tf32).unwrap();
    assert!(text.starts_with("#ifdef TCC_PTX\n"), "{text}");
    assert!(text.contains("on TF32 tensor cores"), "{text}");
    assert!(!text.contains("wgmma") && !text.contains("SM90"), "{text}");
    assert!(!text.contains("i < 64"), "{text}");
    assert_eq!(
        text.matches("if (i < (m * 4) && j < 64) {").count(),
        2,
        "{text}"
    );
}

#[test]
fn double_buffered_fetches_skip_bounds_the_tiles_divide() {
    // M = 64, N = 64, K = 32 in 64x64x16 tiles: no guard at all, and
    // float4 loads through aligned pointers.
    let aligned = aligned_64(tiles([64, 64, 16, 4, 4, 1]));
    let text = gemm_kernel(&aligned).unwrap();
    assert_contains(
        &text,
        &[
            "fetch_a[r] = *(__global const float4*)(a1 + i * 32 + k);",
            "fetch_b[r] = *(__global const float4*)(a2 + k * 64 + j);",
        ],
    );
    assert!(!text.contains("vload4"), "{text}");
    // Split in two: a slice's first tile may start past K, so it keeps
    // the k check; the next tiles of a slice do not.
    let mut split = aligned.clone();
    split.config.split_k = 2;
    split.split_k_scratch = Some((Buffer::f32("a3"), Buffer::f32("a4")));
    let text = gemm_kernel(&split).unwrap();
    let k_loop = text
        .find("for (tcc_index k0 = k_begin; k0 < k_end;) {")
        .unwrap();
    assert!(
        text[..k_loop].contains(
            "fetch_a[r] = (k < 32) ? *(__global const float4*)(a1 + i * 32 + k) : (float4)(0.0f);"
        ),
        "{text}"
    );
    assert!(
        text[k_loop..].contains("fetch_a[r] = *(__global const float4*)(a1 + i * 32 + k);"),
        "{text}"
    );
}

#[test]
fn eight_by_eight_outputs_step_k_by_8_in_the_fp32_body_only() {
    let large = tiles([128, 128, 16, 8, 8, 1]);
    assert_eq!(large.fma_config().tile_k, 8);
    assert_eq!(tiles([64, 64, 16, 4, 4, 1]).fma_config().tile_k, 16);
    assert_eq!(tiles(SMALL_TILES).fma_config(), tiles(SMALL_TILES));
    let text = gemm_kernel(&aligned_spec(large, TensorCores::Tf32)).unwrap();
    let (mma, fma) = bodies(&text);
    assert!(mma.contains("/* tile 128x128x16,"), "{mma}");
    assert!(fma.contains("/* tile 128x128x8,"), "{fma}");
}

#[test]
fn warps_keep_the_local_ids_where_8x4_does_not_divide_the_group() {
    // 16x4 outputs of 4x4: 4x4 work-items, no 8x4 warp.
    let text = gemm_kernel(&spec(tiles([16, 16, 16, 4, 4, 1]))).unwrap();
    assert_contains(
        &text,
        &[
            "const int tx = (int)get_local_id(0);",
            "__local float tile_a[2][16][20]",
        ],
    );
}

/// `spec` with 16-byte aligned row-major operands (M = 256, N = 192, K =
/// 64): what `cp.async` copies.
pub(super) fn aligned_spec(config: GemmConfig, precision: TensorCores) -> GemmSpec {
    let mut spec = spec(config);
    spec.shape = GemmShape {
        batch: 1,
        m: 256,
        n: 192,
        k: 64,
    };
    spec.a.row_stride = 64;
    spec.b.row_stride = 192;
    spec.store = "a0[i * 192 + j] = acc_value;".into();
    spec.tensor_cores = Some(precision);
    spec
}

/// The PTX and fp32 bodies of a kernel with tensor cores.
pub(super) fn bodies(text: &str) -> (&str, &str) {
    text.strip_prefix("#ifdef TCC_PTX\n")
        .and_then(|t| t.strip_suffix("#endif\n"))
        .and_then(|t| t.split_once("#else\n"))
        .expect("two bodies")
}

pub(super) fn assert_contains(text: &str, expected: &[&str]) {
    for e in expected {
        assert!(text.contains(e), "missing `{e}` in:\n{text}");
    }
}

#[test]
fn tf32_puts_a_tensor_core_body_under_tcc_ptx_and_keeps_fp32_otherwise() {
    let config = tiles([64, 64, 16, 4, 4, 1]);
    let mut spec = aligned_spec(config, TensorCores::Tf32);
    let text = gemm_kernel(&spec).unwrap();
    // 8 warps over 64x64: 2x4 warps of 32x16 (2x2 mma tiles of 16x8),
    // the squarest warp tiles; 4 stages of 9.5 KiB.
    let pipeline = Pipeline::new(&config, TensorCores::Tf32).unwrap();
    assert_eq!(pipeline.stages, 4);
    assert_eq!(
        Layout::mma(&config, TensorCores::Tf32),
        Some(Layout::Mma {
            warps_m: 2,
            warps_n: 4,
            mi: 2,
            ni: 2,
            precision: TensorCores::Tf32,
            pipeline,
        })
    );
    let (ptx, fp32) = bodies(&text);
    assert_contains(
        ptx,
        &[
            "on TF32 tensor cores (2x4 warps of 2x2 mma tiles)",
            "__local float tile_a[4][64][20] __attribute__((aligned(16)));",
            "__local float tile_b[4][16][72] __attribute__((aligned(16)));",
            "const int warp_row = (warp / 4) * 32, warp_col = (warp % 4) * 16;",
            "float acc[4][4];",
            "/* 4-stage local pipeline: A by cp.async, B by cp.async */",
            // Three tiles in flight before the loop, then one per step.
            "if (2 < k_tiles) {\n    const tcc_index k_first = 0 + 32;",
            "tcc_cp_async16(&tile_a[0][mm][kk], a1 + (inside ? i * 64 + k : 0), inside ? 16 : 0);",
            "tcc_cp_async16(&tile_b[ahead_stage][kk][nn], a2 + (inside ? k * 192 + j : 0), inside ? 16 : 0);",
            "TCC_CP_ASYNC_WAIT(2);\n    barrier(CLK_LOCAL_MEM_FENCE);",
            "TCC_LDMATRIX_X4(fa[m][0], fa[m][1], fa[m][2], fa[m][3], &tile_a[stage][warp_row + m * 16 + lane % 16][ks + (lane / 16) * 4]);",
            "fa[m][0] += 0x1000u;",
            "fb[n][1] = as_uint(tile_b[stage][ks + tig + 4][col]) + 0x1000u;",
            "TCC_MMA_TF32(acc[2 * m][2 * n], acc[2 * m][2 * n + 1], acc[2 * m + 1][2 * n], acc[2 * m + 1][2 * n + 1]",
            "const tcc_index i = row0 + (warp_row + (wm / 2) * 16 + (wm % 2) * 8 + group);",
            "const tcc_index j = col0 + (warp_col + (wn / 2) * 8 + tig * 2 + wn % 2);",
            "a0[i * 192 + j] = acc_value;",
        ],
    );
    // Nothing goes through registers, and one barrier per k step.
    assert!(
        !ptx.contains("fetch_a") && !ptx.contains("fetch_b"),
        "{ptx}"
    );
    assert_eq!(ptx.matches("barrier(").count(), 1, "{ptx}");
    assert!(!fp32.contains("TCC_MMA_TF32"), "{fp32}");
    assert!(
        fp32.contains("acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);"),
        "{fp32}"
    );
    // Both bodies define the same kernel with the same work-group.
    assert_eq!(ptx.matches("void matmul_0(").count(), 1);
    assert_eq!(fp32.matches("void matmul_0(").count(), 1);
    // Without tensor cores, or with tiles no warp grid fits, one fp32 body.
    spec.tensor_cores = None;
    assert!(!gemm_kernel(&spec).unwrap().contains("TCC_PTX"));
    assert_eq!(
        Layout::mma(
            &GemmConfig {
                tile_m: 8,
                ..config
            },
            TensorCores::Tf32
        ),
        None,
        "16 rows per warp tile at least"
    );
}

#[test]
fn large_tiles_fit_two_stages_in_48_kib() {
    let config = tiles([128, 128, 16, 8, 8, 1]);
    for precision in [TensorCores::Tf32, TensorCores::Fp16, TensorCores::Bf16] {
        // Tiles of halves take half the bytes: four stages of 128x128x16.
        let stages = if precision == TensorCores::Tf32 { 2 } else { 4 };
        let pipeline = Pipeline::new(&config, precision).unwrap();
        assert_eq!(pipeline.stages, stages, "{precision:?}");
        let text = gemm_kernel(&aligned_spec(config, precision)).unwrap();
        let (ptx, _) = bodies(&text);
        assert_contains(
            ptx,
            &[
                "(2x4 warps of 4x4 mma tiles)",
                &format!("TCC_CP_ASYNC_WAIT({});", stages - 2),
                &format!(
                    "const int ahead = kt + {}, ahead_stage = ahead % {stages}, stage = kt % {stages};",
                    stages - 1
                ),
            ],
        );
    }
    // 64 of k per stage would not fit two.
    let deep = GemmConfig {
        tile_k: 64,
        ..config
    };
    assert_eq!(Pipeline::new(&deep, TensorCores::Tf32), None);
    // Split-K's arrival flag takes a stage that would fill 48 KiB exactly:
    // 4 x (64 x 20 + 16 x 176) bytes = 16 KiB a stage, 3 of them unsplit.
    let exact = tiles([64, 168, 16, 4, 21, 1]);
    assert_eq!(
        Pipeline::new(&exact, TensorCores::Tf32).map(|p| p.stages),
        Some(3)
    );
    let split = GemmConfig {
        split_k: 2,
        ..exact
    };
    assert_eq!(
        Pipeline::new(&split, TensorCores::Tf32).map(|p| p.stages),
        Some(2)
    );
}

#[test]
fn fp16_tiles_hold_halves_and_fragments_read_them_as_words() {
    let config = tiles([64, 64, 16, 4, 4, 1]);
    // fp32 operands: fetched into registers and rounded to half as they
    // are stored into the 16-bit tiles (four stages of halves fit).
    let text = gemm_kernel(&aligned_spec(config, TensorCores::Fp16)).unwrap();
    let (ptx, _) = bodies(&text);
    assert_contains(
        ptx,
        &[
            "on FP16 tensor cores (2x4 warps of 2x2 mma tiles)",
            "4-stage local pipeline: A through registers, B through registers",
            "__local ushort tile_a[4][64][24] __attribute__((aligned(16)));",
            "__local ushort tile_b[4][16][68] __attribute__((aligned(16)));",
            "vstore4((ushort4)(tcc_f16_bits(fetch_a[r].x), tcc_f16_bits(fetch_a[r].y), tcc_f16_bits(fetch_a[r].z), tcc_f16_bits(fetch_a[r].w)), 0, &tile_a[ahead_stage][mm][kk]);",
            "for (int ks = 0; ks < 16; ks += 16) {",
            "fa[m][0] = *(__local const uint*)&tile_a[stage][r][ks + 2 * tig];",
            "fa[m][3] = *(__local const uint*)&tile_a[stage][r + 8][ks + 2 * tig + 8];",
            "fb[n][1] = (uint)tile_b[stage][ks + 2 * tig + 8][col] | ((uint)tile_b[stage][ks + 2 * tig + 9][col] << 16);",
            "TCC_MMA_F16(acc[2 * m][2 * n]",
        ],
    );
    assert!(!ptx.contains("tcc_f16x2"), "{ptx}");
    // A k step shorter than one m16n8k16 keeps the fp32 body.
    let short = tiles([64, 64, 8, 4, 4, 1]);
    assert_eq!(Layout::mma(&short, TensorCores::Fp16), None);
    assert_eq!(Layout::mma(&short, TensorCores::Bf16), None);
    assert!(Layout::mma(&short, TensorCores::Tf32).is_some());
}

#[test]
fn half_stored_operands_are_copied_into_the_tiles_by_8_byte_cp_async() {
    let config = tiles([64, 64, 16, 4, 4, 1]);
    for (precision, storage, mma) in [
        (TensorCores::Fp16, Storage::F16, "TCC_MMA_F16("),
        (TensorCores::Bf16, Storage::BF16, "TCC_MMA_BF16("),
    ] {
        let mut spec = aligned_spec(config, precision);
        spec.a.buffer = Buffer::new("a1", storage);
        spec.b.buffer = Buffer::new("a2", storage);
        let text = gemm_kernel(&spec).unwrap();
        let (ptx, fp32) = bodies(&text);
        assert_contains(
            ptx,
            &[
                "4-stage local pipeline: A by cp.async, B by cp.async",
                "__local ushort tile_a[4][64][24]",
                "tcc_cp_async8(&tile_a[ahead_stage][mm][kk], a1 + (inside ? ",
                "tcc_cp_async8(&tile_b[ahead_stage][kk][nn], a2 + (inside ? ",
                "inside ? 8 : 0);",
                mma,
            ],
        );
        assert!(!ptx.contains("tcc_cp_async16"), "{ptx}");
        // A half operand of another type (bf16 data on FP16 tensor cores)
        // is converted through registers, never copied as raw bits.
        let other = if storage == Storage::F16 {
            Storage::BF16
        } else {
            Storage::F16
        };
        let mut mixed = spec.clone();
        mixed.b.buffer = Buffer::new("a2", other);
        let text = gemm_kernel(&mixed).unwrap();
        let (mixed_ptx, _) = bodies(&text);
        assert_contains(
            mixed_ptx,
            &["4-stage local pipeline: A by cp.async, B through registers"],
        );
        // The fp32 body (other devices) reads the halves as floats.
        let load = match storage {
            Storage::F16 => "vload_half4(",
            _ => "as_float4(convert_uint4(vload4(",
        };
        assert_contains(fp32, &[load]);
    }
}

#[test]
fn unaligned_and_computed_operands_are_staged_through_registers() {
    // The 100x50x30 spec: rows of 30 and 50 floats are not 16-byte aligned.
    let mut spec = spec(tiles([64, 64, 16, 4, 4, 1]));
    spec.tensor_cores = Some(TensorCores::Tf32);
    let text = gemm_kernel(&spec).unwrap();
    let (ptx, _) = bodies(&text);
    assert_contains(
        ptx,
        &[
            "/* 4-stage local pipeline: A through registers, B through registers */",
            "fetch_a[r] = (i < 100 && k < 30) ? a1[i * 30 + k] : 0.0f;",
            // The prologue stores its tiles at once; the loop after the step.
            "tile_a[0][mm][kk] = fetch_a[r];",
            "tile_b[ahead_stage][kk][nn] = fetch_b[r];",
        ],
    );
    assert!(!ptx.contains("tcc_cp_async16("), "{ptx}");
    // A convolution's computed float4 elements: A through registers (as
    // float4, stored along k), B (aligned) by cp.async.
    let mut conv = aligned_spec(tiles([64, 64, 16, 4, 4, 1]), TensorCores::Tf32);
    conv.a_element = Some(("const float4 v = (float4)(1.0f);".into(), "v".into()));
    conv.a_element_vector = true;
    let text = gemm_kernel(&conv).unwrap();
    let (ptx, _) = bodies(&text);
    assert_contains(
        ptx,
        &[
            "A through registers, B by cp.async",
            "float4 fetch_a[",
            "vstore4(fetch_a[r], 0, &tile_a[ahead_stage][mm][kk]);",
        ],
    );
}

#[test]
fn split_k_slices_run_the_tensor_core_pipeline_over_their_k_range() {
    let mut spec = aligned_spec(tiles([64, 64, 16, 4, 4, 2]), TensorCores::Tf32);
    spec.split_k_scratch = Some((Buffer::f32("a3"), Buffer::new("a4", crate::Storage::I32)));
    let text = gemm_kernel(&spec).unwrap();
    let (ptx, _) = bodies(&text);
    assert_contains(
        ptx,
        &[
            "const int k_tiles = (int)((k_end - k_begin + 15) / 16);",
            "const tcc_index k_next = k_begin + (tcc_index)ahead * 16;",
            // Four accumulators a store and a load, in work-item order.
            "((__global float4*)partial)[(wm * 1 + wn / 4) * 256 + tid] = (float4)(acc[wm][wn + 0], acc[wm][wn + 1], acc[wm][wn + 2], acc[wm][wn + 3]);",
            "last_to_arrive = tcc_split_arrive(&a4[tile]) == 1;",
            "const float4 v = tcc_load_l2_float4(partials + s * 4096 + ((wm * 1 + wn / 4) * 256 + tid) * 4);",
        ],
    );
}

#[test]
fn rejects_tiles_that_do_not_divide() {
    assert!(gemm_kernel(&spec(tiles([30, 32, 8, 4, 2, 1]))).is_err());
}

#[test]
fn split_k_publishes_partials_and_the_last_group_sums_them_in_order() {
    let config = tiles([32, 32, 8, 2, 2, 4]);
    let mut spec = spec(config);
    // Without scratch buffers a split is refused, and the reverse.
    assert!(gemm_kernel(&spec).is_err());
    spec.split_k_scratch = Some((Buffer::f32("a3"), Buffer::new("a4", crate::Storage::I32)));
    let text = gemm_kernel(&spec).unwrap();
    // K = 30 is 4 steps of 8: one step per slice.
    assert_eq!(config.split_k_slice(30), 8);
    // 100 x 50 is 4 x 2 tiles of 32 x 32: 8 tiles of 4 partials.
    assert_eq!(config.split_k_scratch(&spec.shape), (8 * 4 * 1024, 8));
    for expected in [
        "const tcc_index b = (tcc_index)get_group_id(2) / 4;",
        "const int split = (int)(get_group_id(2) % 4);",
        "const tcc_index k_end = min(k_begin + 8, (tcc_index)30);",
        "for (tcc_index k0 = k_begin; k0 < k_end; k0 += 8) {",
        "const tcc_index tile = (b * 4 + (tcc_index)get_group_id(1)) * 2 + (tcc_index)get_group_id(0);",
        "__global float* partial = a3 + (tile * 4 + split) * 1024;",
        // Partials in work-item order: 2 x 2 accumulators of 256 work-items.
        "partial[(wm * 2 + wn) * 256 + tid] = acc[wm][wn];",
        "last_to_arrive = tcc_split_arrive(&a4[tile]) == 3;",
        "last_to_arrive = atomic_inc((volatile __global uint*)&a4[tile]) == 3;",
        "if (!last_to_arrive) return;",
        "for (int s = 0; s < 4; ++s) sum += partials[s * 1024 + (wm * 2 + wn) * 256 + tid];",
        "if (tid == 0) a4[tile] = 0;",
        "a0[i * 50 + j] = acc_value;",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    spec.config.split_k = 1;
    assert!(gemm_kernel(&spec).is_err());
}

#[test]
fn operand_addresses_skip_zero_and_unit_strides() {
    let op = GemmOperand {
        buffer: Buffer::f32("p"),
        offset: 7,
        batch_stride: 0,
        row_stride: 1,
        col_stride: 12,
    };
    assert_eq!(op.address("b", "i", "k"), "7 + i + k * 12");
}

#[test]
fn the_tiled_forms_refuse_a_convolution_window() {
    let mut spec = spec(tiles(SMALL_TILES));
    spec.k_window = Some([1, 1, 30]);
    assert!(gemm_kernel(&spec).unwrap_err().contains("k_window"));
}
