//! Tests of the few-row form (`few_rows`): what the kernel text reads
//! and how it adds its lanes (its results are checked on a device by
//! `test/models/few_row_products.mlir` and the storage tests).

use super::tests::spec;
use super::*;
use crate::Storage;

/// One row over 768 x 2304 (a decode step's projection), `rows` rows.
fn projection(rows: u32, storage: Storage) -> GemmSpec {
    let mut spec = spec(GemmConfig::few_rows(rows, 8, 2, 128));
    spec.shape = GemmShape {
        batch: 1,
        m: rows as i64,
        n: 2304,
        k: 768,
    };
    spec.a.row_stride = 768;
    spec.b.row_stride = 2304;
    spec.b.buffer = Buffer::new("a2", storage);
    spec.store = "a0[i * 2304 + j] = acc_value;".into();
    spec
}

#[test]
fn half_weights_are_read_16_bytes_a_load_and_widened_in_registers() {
    let text = gemm_kernel(&projection(1, Storage::F16)).unwrap();
    assert!(text.contains("reqd_work_group_size(2, 128, 1)"), "{text}");
    assert!(
        text.contains("const uint4 w = *(__global const uint4*)(a2 + k * 2304 + j0);"),
        "{text}"
    );
    assert!(
        text.contains("const float2 h = tcc_half2_bits_to_float2(w.x);"),
        "{text}"
    );
    // The widening helpers, once per program, a cvt each in PTX.
    assert!(text.contains("#ifndef TCC_HALF_BITS_HELPERS"), "{text}");
    assert!(text.contains("cvt.f32.f16 %0, l;"), "{text}");
    // 768 = 6 rows a lane, all six loaded before any is multiplied (one
    // trip to memory), none past K.
    assert!(
        text.contains("for (tcc_index k_first = lane; k_first < 768; k_first += 768) {"),
        "{text}"
    );
    let loads = text.find("const tcc_index k = k_first + 640;").unwrap();
    let fma = text
        .find("acc[r][c] = fma(av0_keep[r], bv0_keep[c], acc[r][c]);")
        .unwrap();
    assert!(loads < fma, "{text}");
    assert!(!text.contains("if (k < 768)"), "{text}");
}

#[test]
fn rows_in_flight_past_k_are_zeros_and_many_rows_load_fewer_at_once() {
    // K = 1000 over 128 lanes: 8 rows a lane at most, the last ones past K
    // for some lanes.
    let mut spec = projection(1, Storage::F16);
    spec.shape.k = 1000;
    let text = gemm_kernel(&spec).unwrap();
    assert!(text.contains("k_first += 1024) {"), "{text}");
    assert!(text.contains("if (k < 1000) {"), "{text}");
    assert!(text.contains("bv7_keep[c] = 0.0f;"), "{text}");
    // Eight rows: two rows of K in flight beside 64 accumulators.
    let text = gemm_kernel(&projection(8, Storage::F16)).unwrap();
    assert!(text.contains("k_first += 256) {"), "{text}");
    assert!(!text.contains("bv2_keep"), "{text}");
}

#[test]
fn bf16_weights_take_the_top_half_of_each_float() {
    let text = gemm_kernel(&projection(1, Storage::BF16)).unwrap();
    assert!(
        text.contains("bv0[0] = as_float(w.x << 16); bv0[1] = as_float(w.x & 0xFFFF0000u);"),
        "{text}"
    );
    assert!(!text.contains("TCC_HALF_BITS_HELPERS"), "{text}");
}

#[test]
fn float_weights_are_read_as_two_float4_per_row() {
    let text = gemm_kernel(&projection(1, Storage::F32)).unwrap();
    assert!(
        text.contains("const float4 q = *(__global const float4*)(a2 + k * 2304 + j0 + 4);"),
        "{text}"
    );
}

#[test]
fn rows_that_are_not_whole_vectors_load_one_element_at_a_time() {
    let mut spec = projection(2, Storage::F16);
    spec.shape.n = 36;
    spec.b.row_stride = 36;
    let text = gemm_kernel(&spec).unwrap();
    assert!(text.contains("(element loads)"), "{text}");
    assert!(
        text.contains("bv0[c] = j < 36 ? vload_half(k * 36 + j, a2) : 0.0f;"),
        "{text}"
    );
}

#[test]
fn lanes_are_added_in_a_fixed_order_in_passes_of_rows() {
    // Eight rows of 8 columns: partial sums of 4 rows (32 KiB) a pass.
    let text = gemm_kernel(&projection(8, Storage::F32)).unwrap();
    assert!(text.contains("__local float partial[8192];"), "{text}");
    assert_eq!(
        text.matches("for (int l = share; l < 128; l += 4)").count(),
        2,
        "{text}"
    );
    assert!(text.contains("= acc[4 + r][c];"), "{text}");
    assert!(
        text.contains("total += shared_sums[share * 64 + tid];"),
        "{text}"
    );
    assert!(
        text.contains("const tcc_index i = row0 + 4 + tid / 16;"),
        "{text}"
    );
    assert!(text.contains("a0[i * 2304 + j] = acc_value;"), "{text}");
}

#[test]
fn a_dynamic_m_guards_the_rows_of_a() {
    let mut spec = projection(8, Storage::F32);
    spec.m_extent = Some("d0".into());
    spec.scalars = vec!["d0".into()];
    let text = gemm_kernel(&spec).unwrap();
    assert!(text.contains("M=d0 N=2304"), "{text}");
    assert!(text.contains("if (i < d0) {"), "{text}");
    assert!(text.contains("if (i < d0 && j < 2304) {"), "{text}");
}

#[test]
fn forms_it_cannot_run_are_refused() {
    let mut int8 = projection(1, Storage::F32);
    int8.tensor_cores = Some(TensorCores::S8);
    assert!(gemm_kernel(&int8).unwrap_err().contains("int8"));
    let mut vector = projection(1, Storage::F32);
    vector.a_element = Some((String::new(), "x".into()));
    vector.a_element_vector = true;
    assert!(
        gemm_kernel(&vector)
            .unwrap_err()
            .contains("float4 A elements")
    );
}
