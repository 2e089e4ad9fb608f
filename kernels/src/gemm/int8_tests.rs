//! Tests of the GEMM template's int8 form (`int8`).

use super::tests::{aligned_spec, assert_contains, bodies, tiles as config};
use super::*;
use crate::Storage;

/// `config` over int8 operands a1 (M x K) and a2 (K x N), both row-major,
/// M = 256, N = 192, K = 64 (16-byte aligned rows).
fn int8_spec(config: GemmConfig) -> GemmSpec {
    let mut spec = aligned_spec(config, TensorCores::S8);
    spec.a.buffer = Buffer::new("a1", Storage::I8);
    spec.b.buffer = Buffer::new("a2", Storage::I8);
    spec.init = "0".into();
    spec.store = "a0[i * 192 + j] = (float)acc_value;".into();
    spec
}

#[test]
fn int8_products_run_on_s8_tensor_cores_with_int_accumulators() {
    let c = config([64, 64, 32, 4, 4, 1]);
    let text = gemm_kernel(&int8_spec(c)).unwrap();
    let (ptx, opencl) = bodies(&text);
    // 64 + 64 rows of 32 + 16 bytes a stage: 4 stages.
    assert_eq!(Pipeline::new(&c, TensorCores::S8).unwrap().stages, 4);
    assert_contains(
        ptx,
        &[
            "on int8 tensor cores (2x4 warps of 2x2 mma tiles)",
            "__local char tile_a[4][64][48] __attribute__((aligned(16)));",
            "__local char tile_b[4][64][48] __attribute__((aligned(16)));",
            "int acc[4][4];",
            "acc[wm][wn] = 0;",
            // A: a plain aligned int8 matrix, copied 16 bytes at a time.
            "A by cp.async, B through registers",
            "tcc_cp_async16((__local float*)&tile_a[0][mm][kk], (__global const float*)(a1 + (inside ? i * 64 + k : 0)), inside ? 16 : 0);",
            // B: 4 rows of 4 columns, transposed into 4 words of 4 k.
            "const char4 v = (k < 64 && j < 192) ? vload4(0, a2 + k * 192 + j) : (char4)(0);",
            "*(__local uint*)&tile_b[ahead_stage][nn + c][kk] = fetch_b[r][c];",
            // Fragments: A and pairs of B blocks by ldmatrix, k 0-15 then 16-31.
            "TCC_LDMATRIX_X4(fa[m][0], fa[m][1], fa[m][2], fa[m][3], &tile_a[stage][warp_row + m * 16 + lane % 16][ks + (lane / 16) * 16]);",
            "TCC_LDMATRIX_X4(fb[n][0], fb[n][1], fb[n + 1][0], fb[n + 1][1], &tile_b[stage][warp_col + (n + lane / 16) * 8 + lane % 8][ks + ((lane / 8) % 2) * 16]);",
            "for (int ks = 0; ks < 32; ks += 32) {",
            "TCC_MMA_S8(acc[2 * m][2 * n], acc[2 * m][2 * n + 1], acc[2 * m + 1][2 * n], acc[2 * m + 1][2 * n + 1], fa[m][0], fa[m][1], fa[m][2], fa[m][3], fb[n][0], fb[n][1]);",
            "const int acc_init = 0;",
            "const int acc_value = acc_init + acc[wm][wn];",
            "a0[i * 192 + j] = (float)acc_value;",
        ],
    );
    assert!(!ptx.contains("float acc"), "{ptx}");
    // The OpenCL C body: one stage, A through registers as words, 4
    // integer products per char4 pair, strided outputs.
    assert_contains(
        opencl,
        &[
            "__local char tile_a[64][48] __attribute__((aligned(16)));",
            "word = as_uint(vload4(0, a1 + i * 64 + k));",
            "*(__local uint*)&tile_a[l / 8][(l % 8) * 4] = fetch_a[r];",
            "ra[w] = convert_int4(*(__local const char4*)&tile_a[ty + w * 16][kk]);",
            "rb[w] = convert_int4(*(__local const char4*)&tile_b[tx + w * 16][kk]);",
            "acc[wm][wn] += ra[wm].x * rb[wn].x + ra[wm].y * rb[wn].y + ra[wm].z * rb[wn].z + ra[wm].w * rb[wn].w;",
            "const tcc_index i = row0 + (ty + wm * 16);",
            "const int acc_value = acc_init + acc[wm][wn];",
        ],
    );
    assert!(
        !opencl.contains("TCC_MMA_S8") && !opencl.contains("fma("),
        "{opencl}"
    );
}

#[test]
fn computed_int8_elements_are_packed_four_guarded_bytes_to_a_word() {
    let mut spec = int8_spec(config([64, 64, 32, 4, 4, 1]));
    spec.shape.k = 27;
    spec.a_element = Some((
        "const tcc_index y = i - 1;".into(),
        "(y >= 0 ? a1[y * 27 + k] : (char)0)".into(),
    ));
    let text = gemm_kernel(&spec).unwrap();
    assert_contains(
        bodies(&text).0,
        &[
            "A through registers, B through registers",
            "for (int q = 0; q < 4; ++q) {\n        const tcc_index k = k4 + q;\n        if (i < 256 && k < 27) {\n          const tcc_index y = i - 1;\n          word |= (uint)(uchar)((y >= 0 ? a1[y * 27 + k] : (char)0)) << (8 * q);",
            "fetch_a[r] = word;",
        ],
    );
}

#[test]
fn odd_warp_columns_read_b_fragments_as_words() {
    // 8 warps over 64x16: 4x2 warps of one 16x8 mma tile.
    let text = gemm_kernel(&int8_spec(config([64, 16, 32, 4, 1, 1]))).unwrap();
    assert_contains(
        bodies(&text).0,
        &[
            "(4x2 warps of 1x1 mma tiles)",
            "fb[n][0] = *(__local const uint*)&tile_b[stage][col][ks + 4 * tig];",
            "fb[n][1] = *(__local const uint*)&tile_b[stage][col][ks + 16 + 4 * tig];",
        ],
    );
}

#[test]
fn int8_split_k_carries_the_int_sums_as_their_bits() {
    let mut spec = int8_spec(config([64, 64, 32, 4, 4, 2]));
    spec.split_k_scratch = Some((Buffer::f32("a3"), Buffer::new("a4", Storage::I32)));
    let text = gemm_kernel(&spec).unwrap();
    let (ptx, portable) = bodies(&text);
    for body in [ptx, portable] {
        assert_contains(
            body,
            &["as_float(acc[wm][wn + 0]), as_float(acc[wm][wn + 1])"],
        );
    }
    // PTX reads four words a load; the portable body word by word.
    assert_contains(
        ptx,
        &[
            "int sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;",
            "sum0 += as_int(v.s0);",
            "sum3 += as_int(v.s3);",
        ],
    );
    assert_contains(
        portable,
        &["int sum = 0;", "sum += as_int(partials[s * 4096 + "],
    );
}

#[test]
fn int8_tiles_need_k_steps_and_columns_in_fours() {
    assert!(gemm_kernel(&int8_spec(config([64, 64, 30, 4, 4, 1]))).is_err());
    assert!(gemm_kernel(&int8_spec(config([64, 62, 32, 4, 2, 1]))).is_err());
}
