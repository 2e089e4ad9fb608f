//! Tests of the `wgmma` TF32 body's selection and emitted structure.

use super::tests::{aligned_spec, assert_contains, tiles};
use super::*;
use crate::Storage;

/// The 128x128 tile of 8x8 outputs per work-item (256 work-items) that
/// large products take on NVIDIA.
const BIG_TILES: [u32; 6] = [128, 128, 16, 8, 8, 1];

/// A 256x256x64 TF32 product of aligned row-major matrices on the big
/// tiles.
fn tf32_spec() -> GemmSpec {
    let mut spec = aligned_spec(tiles(BIG_TILES), TensorCores::Tf32);
    spec.shape.n = 256;
    spec.b.row_stride = 256;
    spec.store = "a0[i * 256 + j] = acc_value;".into();
    spec.tensor_map_slots = Some(Buffer::new("a3", Storage::I8));
    spec
}

const WGMMA_GUARD: &str = "#if defined(TCC_PTX) && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";

#[test]
fn a_qualifying_tf32_product_has_a_wgmma_body_before_mma_sync_and_fp32() {
    let text = gemm_kernel(&tf32_spec()).unwrap();
    let wgmma = text.find(WGMMA_GUARD).expect("wgmma body");
    let mma = text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body");
    let fp32 = text.find("#else\n").expect("fp32 body");
    assert!(wgmma == 0 && wgmma < mma && mma < fp32, "{text}");
    let body = &text[..mma];
    // Four m64n128k8 per stage (4 k steps), between a fence and a
    // commit, waited for before the next stage's barrier.
    assert_eq!(
        body.matches("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32")
            .count(),
        4,
        "{body}"
    );
    for needle in [
        "__local float tile_a[2][4096] __attribute__((aligned(1024)));",
        "__local ulong tile_a_full[2] __attribute__((aligned(8)));",
        "wgmma.fence.sync.aligned;",
        "wgmma.commit_group.sync.aligned;",
        "wgmma.wait_group.sync.aligned 0;",
        "for (int kt = 0; kt < 2; ++kt) {",
        "ld.global.cg.v2.f32 {%0, %1}, [%4]; ld.global.cg.v2.f32 {%2, %3}, [%5];",
        "a0[i * 256 + j] = acc_value;",
        // The work-group's slot, and its map of A: the 64x64 A's base for
        // batch b, extents K = 64 and M = 256, rows of 256 bytes.
        "__global uint* a_map = (__global uint*)(a3 + 128 * ((get_group_id(2) * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) + get_group_id(0)));",
        "__global const float* a_base = a1 + i * 64 + k;",
        "tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;\" :: \"l\"(a_map), \"l\"(a_base)",
        "tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;\" :: \"l\"(a_map), \"r\"(64)",
        "tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"(a_map), \"r\"(256)",
        "tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;\" :: \"l\"(a_map), \"l\"((ulong)256)",
        "tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%0], 3;",
        "fence.proxy.tensormap::generic.acquire.gpu [%0], 128;",
        // Each stage's mbarrier expects a 16 KiB tile, which one bulk
        // tensor copy brings; waits on the stage's phase.
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16384;",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];",
        "\"r\"((int)(kt + 1) * 32), \"r\"((int)row0)",
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;",
        "\"r\"((uint)(kt / 2) & 1u)",
        "if (tid == 0 && kt >= 1 && kt + 1 < 2) {",
    ] {
        assert!(body.contains(needle), "{needle} not in {body}");
    }
    // No per-work-item copies of A any more.
    assert!(!body.contains("tcc_cp_async16"), "{body}");
    assert!(!body.contains("TCC_MMA_TF32"), "{body}");
    assert!(text[mma..fp32].contains("TCC_MMA_TF32"), "{text}");
}

#[test]
fn the_descriptor_and_accumulator_order_follow_the_core_matrix_layout() {
    let text = gemm_kernel(&tf32_spec()).unwrap();
    // k step 1 starts 32 bytes into the swizzled rows; leading offset 16
    // bytes (1), stride offset 1024 (64), 128-byte swizzle (mode 1).
    let fields = (1u64 << 16) | (64u64 << 32) | (1u64 << 62);
    assert!(
        text.contains(&format!(
            "const ulong desc1 = (ulong)(((a_stage + 32) & 0x3FFFF) >> 4) | {fields}ul;"
        )),
        "{text}"
    );
    // D element 4 j + e is acc[2 j + e % 2][e / 2].
    assert!(
        text.contains(
            ": \"+f\"(acc[0][0]), \"+f\"(acc[1][0]), \"+f\"(acc[0][1]), \"+f\"(acc[1][1]), \"+f\"(acc[2][0]),"
        ),
        "{text}"
    );
    assert!(text.contains("\"+f\"(acc[31][1])"), "{text}");
    assert!(text.contains("float acc[32][2];"), "{text}");
    assert!(
        text.contains("const tcc_index j = col0 + (wg_col + wn);"),
        "{text}"
    );
}

#[test]
fn other_products_keep_mma_sync_or_fp32() {
    let no_wgmma = |spec: GemmSpec| {
        let text = gemm_kernel(&spec).unwrap();
        assert!(!text.contains("wgmma"), "{text}");
    };
    // N not a multiple of the 128-column tile.
    let mut narrow = tf32_spec();
    narrow.shape.n = 320;
    narrow.b.row_stride = 320;
    no_wgmma(narrow);
    // K not a multiple of the stage's 32.
    let mut short = tf32_spec();
    short.shape.k = 200;
    short.a.row_stride = 200;
    no_wgmma(short);
    // Other arithmetic.
    for precision in [None, Some(TensorCores::Fp16)] {
        let mut other = tf32_spec();
        other.tensor_cores = precision;
        no_wgmma(other);
    }
    // A computed A (a convolution's windows).
    let mut computed = tf32_spec();
    computed.a_offset = Some("conv_offset(i, k)".into());
    no_wgmma(computed);
    // Another tile.
    let mut small = tf32_spec();
    small.config = tiles([64, 64, 16, 4, 4, 1]);
    no_wgmma(small);
    // No tensor-map slots passed.
    let mut no_slots = tf32_spec();
    no_slots.tensor_map_slots = None;
    no_wgmma(no_slots);
}

#[test]
fn slots_are_one_tensor_map_per_work_group_of_a_qualifying_tile() {
    let config = tiles(BIG_TILES);
    let shape = |batch, m, n, k| GemmShape { batch, m, n, k };
    // 2 batches of 2 x 3 work-groups.
    assert_eq!(
        tensor_map_slot_bytes(&config, &shape(2, 256, 384, 64)),
        Some(2 * 2 * 3 * TENSOR_MAP_BYTES)
    );
    assert_eq!(
        tensor_map_slot_bytes(&config, &shape(1, 256, 384, 48)),
        None
    );
    assert_eq!(
        tensor_map_slot_bytes(&config, &shape(1, 200, 384, 64)),
        None
    );
    assert_eq!(
        tensor_map_slot_bytes(&tiles([64, 64, 16, 4, 4, 1]), &shape(1, 256, 256, 64)),
        None
    );
}

/// A 512x256x96 TF32 product on the large tile, launched through the CUDA
/// driver (`GemmSpec::dynamic_local`).
fn large_spec() -> GemmSpec {
    let mut spec = aligned_spec(LARGE_TILE, TensorCores::Tf32);
    spec.shape = GemmShape {
        batch: 1,
        m: 512,
        n: 256,
        k: 96,
    };
    spec.a.row_stride = 96;
    spec.b.row_stride = 256;
    spec.store = "a0[i * 256 + j] = acc_value;".into();
    spec.tensor_map_slots = Some(Buffer::new("a3", Storage::I8));
    spec.dynamic_local = true;
    spec
}

#[test]
fn the_large_tile_takes_the_dynamic_local_body_before_mma_sync_and_fp32() {
    let text = gemm_kernel(&large_spec()).unwrap();
    let wgmma = text.find(WGMMA_GUARD).expect("wgmma body");
    let mma = text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body");
    let fp32 = text.find("#else\n").expect("fp32 body");
    assert!(wgmma == 0 && wgmma < mma && mma < fp32, "{text}");
    let body = &text[..mma];
    // K = 96: three k tiles, two in the loop's pair and one after it, each
    // four m64n256k8 left in flight (one group) until the end.
    assert_eq!(
        body.matches("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32")
            .count(),
        12,
        "{body}"
    );
    assert_eq!(
        body.matches("wgmma.wait_group.sync.aligned 1;").count(),
        3,
        "{body}"
    );
    assert_contains(
        body,
        &[
            // The stated dynamic local memory: 4 stages of 48 KiB and the
            // 1024 bytes that align them.
            "/* tcc-dynamic-local: 197632 */",
            "__local ulong tile_full[4] __attribute__((aligned(8)));",
            "__asm__(\"mov.u32 %0, tcc_dynamic_local;\" : \"=r\"(stages));",
            "stages = (stages + 1023u) & ~1023u;",
            "float acc[64][2];",
            // Two maps per work-group: A's box 32 x 256 over K x M, B's 32 x
            // 32 over N x K.
            "__global uint* a_map = (__global uint*)(a3 + 256 * (",
            "__global uint* b_map = a_map + 32;",
            "tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"(a_map), \"r\"(256)",
            "tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;\" :: \"l\"(a_map), \"r\"(96)",
            "tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"(a_map), \"r\"(512)",
            "tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"(b_map), \"r\"(32)",
            "tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;\" :: \"l\"(b_map), \"r\"(256)",
            "tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"(b_map), \"r\"(96)",
            "tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;\" :: \"l\"(b_map), \"l\"((ulong)1024)",
            "fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\" :: \"l\"(b_map)",
            // A stage: A's 32 KiB and B's four 4 KiB boxes on one mbarrier.
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 49152;",
            "\"r\"(st + 32768u + (uint)box * 4096u), \"l\"(b_map), \"r\"((int)col0 + 32 * box)",
            // The stage read two tiles back is refilled.
            "if (tid == 0 && tile >= 2 && tile + 2 < 3) {",
            "\"r\"((int)(tile + 2) * 32), \"r\"((int)row0)",
            // B's fragments under the 128-byte swizzle.
            "const uint address = b_box + (uint)k * 128u + (uint)(((f / 4) ^ (k % 8)) * 16) + (uint)(f % 4) * 4u;",
            "ld.shared.v2.f32 {%0, %1}, [%2];",
            "const tcc_index j = col0 + (wg_col + wn);",
            "a0[i * 256 + j] = acc_value;",
        ],
    );
    assert_eq!(dynamic_local_bytes(&text), Some(DYNAMIC_LOCAL_BYTES));
}

#[test]
fn the_large_body_needs_the_cuda_launch_the_tile_and_fitting_sizes() {
    let no_large = |spec: GemmSpec| {
        let text = gemm_kernel(&spec).unwrap();
        assert!(!text.contains("m64n256k8"), "{text}");
        assert_eq!(dynamic_local_bytes(&text), None, "{text}");
    };
    // Launched through OpenCL: 48 KiB at most.
    let mut opencl = large_spec();
    opencl.dynamic_local = false;
    no_large(opencl);
    // M not a multiple of 256.
    let mut rows = large_spec();
    rows.shape.m = 384;
    no_large(rows);
    // K not a multiple of 32.
    let mut short = large_spec();
    short.shape.k = 80;
    short.a.row_stride = 80;
    no_large(short);
    // fp32, and a computed A.
    let mut fp32 = large_spec();
    fp32.tensor_cores = None;
    no_large(fp32);
    let mut computed = large_spec();
    computed.a_offset = Some("conv_offset(i, k)".into());
    no_large(computed);
    // The 128x128 tile keeps the 48 KiB body even when launched by CUDA.
    let mut mid = tf32_spec();
    mid.dynamic_local = true;
    let text = gemm_kernel(&mid).unwrap();
    assert!(
        text.contains("m64n128k8") && !text.contains("m64n256k8"),
        "{text}"
    );
}

#[test]
fn large_tiles_take_two_maps_per_work_group() {
    let shape = |batch, m, n, k| GemmShape { batch, m, n, k };
    // 2 batches of 2 x 3 work-groups of 256 x 128.
    assert_eq!(
        tensor_map_slot_bytes(&LARGE_TILE, &shape(2, 512, 384, 64)),
        Some(2 * 2 * 3 * 2 * TENSOR_MAP_BYTES)
    );
    assert_eq!(
        tensor_map_slot_bytes(&LARGE_TILE, &shape(1, 384, 384, 64)),
        None
    );
    assert!(large_tile_fits(&shape(1, 4096, 4096, 4096)));
    assert!(!large_tile_fits(&shape(1, 4096, 4160, 4096)));
}

#[test]
fn the_dynamic_local_marker_reads_back() {
    assert_eq!(dynamic_local_bytes(&dynamic_local_marker(4096)), Some(4096));
    assert_eq!(dynamic_local_bytes("__kernel void f() {}"), None);
    // A malformed statement is not one.
    assert_eq!(dynamic_local_bytes("/* tcc-dynamic-local: lots */"), None);
}
