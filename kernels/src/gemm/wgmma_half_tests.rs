//! Tests of the FP16/BF16 `wgmma` body's tile choice, selection and
//! emitted structure.

use super::tests::{aligned_spec, assert_contains};
use super::wgmma_half::{fits_with, split_tile};
use super::*;
use crate::Storage;

const WGMMA_GUARD: &str = "#if defined(TCC_PTX) && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";

fn shape(batch: i64, m: i64, n: i64, k: i64) -> GemmShape {
    GemmShape { batch, m, n, k }
}

/// A 512x512x192 product of `precision` halves (A and B stored in that
/// half type) on the 128x256 tile, launched through the CUDA driver.
fn half_spec(precision: TensorCores) -> GemmSpec {
    let config = half_tile_for(&shape(1, 4096, 4096, 4096)).unwrap();
    let mut spec = aligned_spec(config, precision);
    let storage = precision.half_storage().unwrap();
    spec.a.buffer = Buffer::new("a1", storage);
    spec.b.buffer = Buffer::new("a2", storage);
    spec.shape = shape(1, 512, 512, 192);
    spec.a.row_stride = 192;
    spec.b.row_stride = 512;
    spec.store = "a0[i * 512 + j] = acc_value;".into();
    spec.tensor_map_slots = Some(Buffer::new("a3", Storage::I8));
    spec.dynamic_local = true;
    spec
}

#[test]
fn tiles_are_chosen_by_waves_of_work_groups() {
    let width = |batch, m, n, k| half_tile_for(&shape(batch, m, n, k)).map(|c| c.tile_n);
    // 512 work-groups of 128x256 (four waves of 132) against 1024 of
    // 128x128: the same waves of wider tiles.
    assert_eq!(width(1, 4096, 4096, 4096), Some(256));
    // N = 768 over K = 3072: 128x192 is one wave of 128 work-groups;
    // 128x256 one wave of 96 (36 SMs idle, each work-group a third
    // longer), 128x128 two (too long a K for three stages to share SMs).
    assert_eq!(width(1, 4096, 768, 3072), Some(192));
    // Over K = 768, 128x128 tiles share SMs: their 192 work-groups'
    // work spread over the SMs (186) against one wave of 128x192 (192).
    assert_eq!(width(1, 4096, 768, 768), Some(128));
    assert_eq!(width(1, 4096, 2304, 768), Some(128));
    assert_eq!(width(1, 4096, 3072, 768), Some(128));
    // Two k tiles: every width shares SMs; waves again (64 x 6 = 384
    // against 128 x 3).
    assert_eq!(width(1, 4096, 768, 128), Some(192));
    // Batched heads: 12 x (512 / 128) x (512 / 256) = 96 work-groups of
    // the widest against 192 of 128 (two waves) or none of 192.
    assert_eq!(width(12, 512, 512, 64), Some(256));
    // Sizes that do not divide: the table's tiles.
    assert_eq!(width(1, 4096, 768, 100), None);
    // Any M: ViT-B/16's 197 tokens at batch 32 (50 row tiles, the last
    // of 32 rows).
    assert_eq!(width(1, 32 * 197, 768, 768), Some(128));
    let config = half_tile_for(&shape(1, 4096, 768, 768)).unwrap();
    assert_eq!(
        (config.tile_m, config.workgroup_size(), config.split_k),
        (128, 256, 1)
    );
    config.validate().unwrap();
}

#[test]
fn small_products_take_unsplit_64_wide_tiles_where_they_are_many() {
    let chosen = |batch, m, n, k| {
        half_tile_for(&shape(batch, m, n, k)).map(|c| (c.tile_m, c.tile_n, c.split_k))
    };
    // Batch-1 transformer products (128 or 197 tokens): 36, 48 and 96
    // work-groups of 128x64 over K = 768.
    assert_eq!(chosen(1, 128, 2304, 768), Some((128, 64, 1)));
    assert_eq!(chosen(1, 128, 3072, 768), Some((128, 64, 1)));
    assert_eq!(chosen(1, 197, 3072, 768), Some((128, 64, 1)));
    // Too few work-groups (12 of 128 x 768; 24 of 197 x 768) or too long
    // a K (48 k tiles each): the table's.
    assert_eq!(chosen(1, 128, 768, 768), None);
    assert_eq!(chosen(1, 197, 768, 768), None);
    assert_eq!(chosen(1, 128, 768, 3072), None);
    // Batched heads of 128 x 128: 12 x 2 work-groups.
    assert_eq!(chosen(12, 128, 128, 64), None);
    // N = 3000: 47 tiles, the last of 56 columns; N or K not a multiple
    // of 8: the table's.
    assert_eq!(chosen(1, 128, 3000, 768), Some((128, 64, 1)));
    assert_eq!(chosen(1, 128, 3004, 768), None);
    assert_eq!(chosen(1, 128, 3072, 100), None);
}

/// The split 128x64 tile of a 128 x 768 x 768 product (a tuning record's
/// choice): each work-group copies its slice's k tiles from `k_origin` and
/// publishes its partial tile to the split-K workspace.
#[test]
fn a_split_product_copies_its_slice_and_fixes_up() {
    let mut spec = half_spec(TensorCores::Fp16);
    spec.config = split_tile(64, 6);
    spec.shape = shape(1, 128, 768, 768);
    spec.config.validate().unwrap();
    // Every slice builds its own two tensor maps.
    assert_eq!(
        half_tensor_map_slot_bytes(&spec.config, &spec.shape),
        Some(2 * 128 * 12 * 6)
    );
    // A split must leave every slice whole stages (768 = 12 x 64).
    assert_eq!(
        half_tensor_map_slot_bytes(&split_tile(64, 5), &spec.shape),
        None
    );
    spec.a.row_stride = 768;
    spec.b.row_stride = 768;
    spec.store = "a0[i * 768 + j] = acc_value;".into();
    spec.split_k_scratch = Some((
        Buffer::new("a4", Storage::F32),
        Buffer::new("a5", Storage::I32),
    ));
    assert!(WgmmaHalf::applies(&spec));
    let text = gemm_kernel(&spec).unwrap();
    let body = &text[..text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body")];
    assert_contains(
        body,
        &[
            "const int k_origin = (int)k_begin;",
            "\"r\"((int)(0) * 64 + k_origin)",
            // The stage freed by the previous step's products, refilled
            // once this step's are issued (four stages: three ahead).
            "\"r\"((int)(kt - 1 + 4) * 64 + k_origin)",
            "for (int kt = 0; kt < 2; ++kt)",
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
            "split-K: 6 work-groups per tile",
        ],
    );
    // Without the scratch the split tile does not take this body.
    spec.split_k_scratch = None;
    assert!(!WgmmaHalf::applies(&spec));
}

#[test]
fn a_qualifying_fp16_product_has_a_wgmma_body_before_mma_sync_and_fp32() {
    let text = gemm_kernel(&half_spec(TensorCores::Fp16)).unwrap();
    let wgmma = text.find(WGMMA_GUARD).expect("wgmma body");
    let mma = text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body");
    let fp32 = text.find("#else\n").expect("fp32 body");
    assert!(wgmma == 0 && wgmma < mma && mma < fp32, "{text}");
    let body = &text[..mma];
    // One k loop of three k tiles, four m64n256k16 per tile with both
    // operands through descriptors, B transposed (MN-major).
    assert_eq!(
        body.matches("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16")
            .count(),
        4,
        "{body}"
    );
    assert_contains(
        body,
        &[
            "on FP16 wgmma (2 warpgroups of m64n256k16, 4 stages of k 64",
            // Three k tiles fill three of the four stages (48 KiB each):
            // more than the staged epilogue's 128 x 264 floats.
            "/* tcc-dynamic-local: 148480 */",
            "__local ulong tile_full[4] __attribute__((aligned(8)));",
            "for (int kt = 0; kt < 3; ++kt) {",
            "p, 1, 1, 0, 1; }",
            // Two maps per work-group: A's and B's, both of u16 elements
            // with 128-byte rows swizzled.
            "__global uint* a_map = (__global uint*)(a3 + 256 * (",
            "__global uint* b_map = a_map + 32;",
            "__global const half* a_base = a1 + 0 * 192 + 0;",
            "__global const half* b_base = a2 + 0 * 512 + 0;",
            "tensormap.replace.tile.elemtype.global.b1024.b32 [%0], 1;",
            "tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 0, %1;\" :: \"l\"(a_map), \"r\"(64)",
            "tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 1, %1;\" :: \"l\"(a_map), \"r\"(128)",
            "tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;\" :: \"l\"(a_map), \"l\"((ulong)384)",
            "tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;\" :: \"l\"(b_map), \"l\"((ulong)1024)",
            // A stage: A's 16 KiB and four B boxes of 8 KiB.
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 49152;",
            "for (int box = 0; box < 4; ++box)",
            "if (tid == 0 && kt >= 1 && kt - 1 + 4 < 3) {",
            "wgmma.wait_group.sync.aligned 1;",
            "wgmma.wait_group.sync.aligned 0;",
            // B's descriptor: 8 KiB between 64-column boxes, 1024 bytes
            // between 8-row atoms, the 128-byte swizzle.
            "| 4611686293338849280ul",
            // The D fragment: rows group and group + 8 of each warp's 16,
            // written to local memory as the tile's rows in float2 pairs.
            "const int wg_row = 64 * (warp / 4) + 16 * (warp % 4) + group;",
            "float acc[2][64];",
            "*(__local float2*)(staged_tile + (wg_row + 8 * wm) * 264 + 8 * (wn / 2) + 2 * tig) = (float2)(acc[wm][wn], acc[wm][wn + 1]);",
            // A matmul's epilogue: the work-group on a row at a time.
            "for (int pass = 0; pass < 128; ++pass) {",
            "const int e = pass * 256 + tid;",
            "const int r = e / 256, c = e % 256;",
            "const float staged = staged_tile[r * 264 + c];",
            "const tcc_index i = row0 + r;",
            "const tcc_index j = col0 + c;",
            "const float acc_value = acc_init + staged;",
            "a0[i * 512 + j] = acc_value;",
        ],
    );
    // A's k steps advance 32 bytes inside the swizzled rows, B's two atoms.
    for step in [
        "st + a_rows + 0",
        "st + a_rows + 32",
        "st + a_rows + 96",
        "st + 16384",
        "st + 22528",
    ] {
        assert!(body.contains(step), "{step} not in {body}");
    }
    assert!(
        text[mma..fp32].contains("mma.sync") || text[mma..fp32].contains("TCC_MMA"),
        "{text}"
    );
}

#[test]
fn bf16_takes_the_bf16_instruction_and_ushort_operands() {
    let text = gemm_kernel(&half_spec(TensorCores::Bf16)).unwrap();
    let body = &text[..text.find("#elif defined(TCC_PTX)\n").unwrap()];
    assert_contains(
        body,
        &[
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
            "__global const ushort* a_base = a1 + 0 * 192 + 0;",
            "on BF16 wgmma",
        ],
    );
}

#[test]
fn the_accumulator_order_follows_the_d_fragment() {
    let text = gemm_kernel(&half_spec(TensorCores::Fp16)).unwrap();
    // D element d: row group + 8 ((d / 2) % 2), column 8 (d / 4) + 2 tig +
    // d % 2, so d = 0..3 are acc[0][0], acc[0][1], acc[1][0], acc[1][1].
    assert!(
        text.contains(": \"+f\"(acc[0][0]), \"+f\"(acc[0][1]), \"+f\"(acc[1][0]), \"+f\"(acc[1][1]), \"+f\"(acc[0][2]),"),
        "{text}"
    );
}

#[test]
fn other_half_products_keep_mma_sync() {
    let wgmma = |spec: &GemmSpec| gemm_kernel(spec).unwrap().starts_with(WGMMA_GUARD);
    assert!(wgmma(&half_spec(TensorCores::Fp16)));
    // OpenCL's launch: no dynamic local memory.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.dynamic_local = false;
    assert!(!wgmma(&spec));
    // An fp32 operand (a model input) is converted on its way in.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.a.buffer = Buffer::f32("a1");
    assert!(!wgmma(&spec));
    // BF16 arithmetic on FP16 storage.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.tensor_cores = Some(TensorCores::Bf16);
    assert!(!wgmma(&spec));
    // Rows the TMA cannot address (not 16-byte aligned), a strided B.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.a.row_stride = 196;
    assert!(!wgmma(&spec));
    let mut spec = half_spec(TensorCores::Fp16);
    spec.b.col_stride = 2;
    assert!(!wgmma(&spec));
    // K not a multiple of 8 (rows the TMA cannot stride by); no slots.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.shape.k = 100;
    spec.a.row_stride = 104;
    assert!(!wgmma(&spec));
    let mut spec = half_spec(TensorCores::Fp16);
    spec.tensor_map_slots = None;
    assert!(!wgmma(&spec));
}

#[test]
fn a_k_past_the_last_whole_stage_takes_one_more_k_tile_the_tma_fills() {
    // K = 160: two whole stages of 64 and one of 32, whose other 32
    // columns of A and rows of B the TMA fills with zeros.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.shape.k = 160;
    spec.a.row_stride = 160;
    let text = gemm_kernel(&spec).unwrap();
    assert!(text.starts_with(WGMMA_GUARD), "{text}");
    assert!(text.contains("for (int kt = 0; kt < 3; ++kt)"), "{text}");
    // Split in K, every slice must still be whole stages: no tile of this
    // body is offered for such a K.
    assert_eq!(
        half_tensor_map_slot_bytes(&split_tile(128, 2), &spec.shape),
        None
    );
}

#[test]
fn half_products_take_two_maps_per_work_group() {
    let config = half_tile_for(&shape(1, 4096, 768, 3072)).unwrap();
    assert_eq!(
        half_tensor_map_slot_bytes(&config, &shape(2, 512, 768, 128)),
        Some(2 * 128 * 2 * 4 * 4)
    );
    // N = 640 hangs 128 columns past it in a fourth column tile; 644 is
    // not a whole number of 16-byte octets.
    assert_eq!(
        half_tensor_map_slot_bytes(&config, &shape(1, 512, 640, 128)),
        Some(2 * 128 * 4 * 4)
    );
    assert_eq!(
        half_tensor_map_slot_bytes(&config, &shape(1, 512, 644, 128)),
        None
    );
    assert_eq!(
        half_tensor_map_slot_bytes(&LARGE_TILE, &shape(1, 512, 768, 128)),
        None
    );
    // As many stages as fit an SM's 227 KiB, at most six.
    assert_eq!(half_dynamic_local_bytes(192), 5 * (16384 + 24576) + 1024);
    assert_eq!(half_dynamic_local_bytes(256), 4 * (16384 + 32768) + 1024);
    assert_eq!(half_dynamic_local_bytes(128), 6 * (16384 + 16384) + 1024);
    assert_eq!(half_dynamic_local_bytes(64), 4 * (16384 + 8192) + 1024);
}

/// ResNet's 56x56 3x3 convolution at batch 32 (64 -> 64 channels, stride
/// 1, padding 1) as an implicit GEMM over its NHWC image stored in fp16.
fn conv_spec(channels: i64, features: i64) -> GemmSpec {
    let image = ConvImage {
        buffer: Buffer::new("a1", Storage::F16),
        offset: 64,
        shape: [32, 56, 56, channels],
        pixel_strides: [56 * 56 * channels, 56 * channels, channels],
        output: [56, 56],
        taps: [3, 3],
        strides: [1, 1],
        dilations: [1, 1],
        pads: [1, 1],
    };
    let (m, k) = image.gemm_extents();
    let gemm = shape(1, m, features, k);
    let config = half_conv_tile_for(&gemm, channels, false).expect("a conv tile");
    let mut spec = half_spec(TensorCores::Fp16);
    spec.config = config;
    spec.shape = gemm;
    // What the other bodies read: the element computed from the window.
    spec.a = GemmOperand {
        buffer: Buffer::new("a1", Storage::F16),
        offset: 0,
        batch_stride: 0,
        row_stride: 0,
        col_stride: 0,
    };
    spec.a_element = Some((String::new(), "0.0f".into()));
    spec.a_image = Some(image);
    spec.b.row_stride = features;
    spec.store = format!("a0[i * {features} + j] = acc_value;");
    spec
}

#[test]
fn pointwise_convolutions_of_any_eight_channels_and_column_tails() {
    let conv = |n, c, matrix| {
        half_conv_tile_for(&shape(1, 32 * 112 * 112, n, c), c, matrix).map(|c| c.tile_n)
    };
    // EfficientNet-B0's pointwise expansion of 16 channels into 96 at
    // 112x112, batch 32: A a plain matrix of 16 columns (one k tile the
    // TMA pads with zeros), N = 96 in 128-wide tiles or 64 + 32.
    assert!(conv(96, 16, true).is_some());
    // Its projection of 96 channels into 24: one column tile of 64; into
    // 16, four times N: the table's.
    assert_eq!(conv(24, 96, true), Some(64));
    assert_eq!(conv(16, 96, true), None);
    // Gathered windows still need whole k tiles of 64 channels.
    assert_eq!(conv(96, 16, false), None);
    // The TMA's rows: channels and N in whole 16-byte octets.
    assert_eq!(conv(96, 12, true), None);
    assert_eq!(conv(100, 16, true), None);
    let config = half_conv_tile_for(&shape(1, 32 * 112 * 112, 24, 96), 96, true).unwrap();
    assert_eq!(
        half_tensor_map_slot_bytes(&config, &shape(1, 32 * 112 * 112, 24, 96)),
        Some(2 * 128 * (32 * 112 * 112 / 128))
    );
}

#[test]
fn large_matmuls_take_whole_column_tiles() {
    let width = |n| half_tile_for(&shape(1, 32 * 56 * 56, n, 384)).map(|c| c.tile_n);
    // ConvNeXt-T's stage-1 down-projections (N = 96): the table's.
    assert_eq!(width(96), None);
    assert_eq!(width(64), None);
    // Six k tiles: 128x128 tiles sharing SMs.
    assert_eq!(width(384), Some(128));
    // A split tile needs N in whole tiles too.
    assert!(!fits_with(
        &split_tile(64, 2),
        &shape(1, 128, 96, 768),
        true
    ));
}

#[test]
fn convolutions_take_64_wide_tiles_where_the_channels_allow() {
    let conv = |m, n, k, c| half_conv_tile_for(&shape(1, m, n, k), c, false).map(|c| c.tile_n);
    // 64 output channels: the 128x64 tile (784 work-groups).
    assert_eq!(conv(32 * 56 * 56, 64, 576, 64), Some(64));
    // 256 of them over K = 576: 128x128 tiles sharing SMs (1568
    // work-groups, their work spread over the SMs: 1521) against six
    // waves of 128x256 (1536).
    assert_eq!(conv(32 * 56 * 56, 256, 576, 64), Some(128));
    // Over K = 2304, past the shared tiles' K: the widest whose waves
    // take least.
    assert_eq!(conv(32 * 56 * 56, 256, 2304, 256), Some(256));
    // One k tile (a pointwise convolution of 64 channels): at most 128
    // columns, so that more than one work-group fits an SM.
    assert_eq!(conv(32 * 56 * 56, 256, 64, 64), Some(128));
    // A channel count the gather cannot take in whole k tiles.
    assert_eq!(conv(32 * 56 * 56, 64, 27, 3), None);
    assert_eq!(conv(32 * 112 * 112, 64, 9 * 32, 32), None);
    // Fewer tiles than SMs but more than half as many: 104 of 128x64
    // (ResNet's 7x7 stage at batch 32), one wave of the narrowest.
    assert_eq!(conv(32 * 7 * 7, 512, 4608, 512), Some(64));
    // Too little work: the table's tiles (batch 1's 7x7 stage).
    assert_eq!(conv(49, 512, 4608, 512), None);
    assert_eq!(conv(784, 128, 1152, 128), None);
    // Matmuls keep their widths: 64 is the convolutions'.
    assert_eq!(
        half_tile_for(&shape(1, 32 * 56 * 56, 64, 576)).map(|c| c.tile_n),
        None
    );
}

#[test]
fn a_padded_convolution_gathers_a_and_the_tma_copies_b() {
    let spec = conv_spec(64, 64);
    assert!(WgmmaHalf::applies(&spec));
    let text = gemm_kernel(&spec).unwrap();
    let body = &text[..text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body")];
    assert_contains(
        body,
        &[
            "A gathered from the convolution's image by cp.async and B copied by the TMA",
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
            // Nine k tiles: one per tap of 64 channels.
            "for (int kt = 0; kt < 9; ++kt) {",
            // Rows past M never come inside the image; each row's origin.
            "g_y[r] = m < 100352 ? (int)(pixel / 56) * 1 - 1 : -268435456;",
            "g_base[r] = n * 200704 + (long)g_y[r] * 3584 + (long)g_x[r] * 64 + 64;",
            // A k tile's tap and its channels; zero-filled outside.
            "const int tap = k0 / 64;",
            "const long shift = (long)dy * 3584 + (long)dx * 64 + k0 % 64 + 8 * g_chunk;",
            "const int dy = (tap / 3) * 1, dx = (tap % 3) * 1;",
            "const int inside = (uint)y < 56u && (uint)x < 56u;",
            "__global const half* src = a1 + (inside ? g_base[r] + shift : 0);",
            "cp.async.cg.shared.global [%0], [%1], 16, %2;",
            // The 128-byte swizzle, rows 128 bytes apart, passes of 32 rows.
            "row * 128u + (((uint)g_chunk ^ (row % 8u)) * 16u);",
            "\"r\"(dst + (uint)r * 4096u)",
            // The stage's mbarrier counts B's one box only.
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 8192;",
            // Tile kt's group waited for and fenced before the barrier.
            "if (kt == 0) __asm__ volatile(\"cp.async.wait_group 3;\" ::: \"memory\");",
            "else if (kt == 1) __asm__ volatile(\"cp.async.wait_group 2;\" ::: \"memory\");",
            "fence.proxy.async.shared::cta;",
            "if (kt + 2 < 9) {",
            // A convolution's epilogue: each warp 16 rows, 32 neighbouring
            // columns of one row at a time.
            "const int r = warp * 16 + rr;",
            "const tcc_index i = row0 + r;",
            "const int c = lane + 32 * q;",
            "const float staged = staged_tile[r * 72 + c];",
        ],
    );
    // No map of A: the TMA copies B only.
    assert!(!body.contains("a_base"), "{body}");
    assert!(!body.contains("[%1], \"l\"(a_map)"), "{body}");
    // One group per prologue stage and one per step from the third.
    assert_eq!(body.matches("cp.async.commit_group;").count(), 5, "{body}");
}

/// A 128-wide tile launched as more work-groups than SMs runs three
/// stages, so that two work-groups share an SM (one k tile in flight
/// ahead; the gathered groups waited for accordingly); launched as fewer,
/// it keeps four.
#[test]
fn a_128_wide_tile_takes_three_stages_where_work_groups_share_sms() {
    // 784 row tiles of 128 x 128 over 18 k tiles (3x3 taps of 128
    // channels).
    let mut spec = conv_spec(128, 128);
    spec.config = split_tile(128, 1);
    assert!(WgmmaHalf::applies(&spec));
    let text = gemm_kernel(&spec).unwrap();
    let body = &text[..text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body")];
    assert_contains(
        body,
        &[
            "3 stages of k 64 of A gathered",
            // Three 32 KiB stages (the staged epilogue's 68 KiB fits in
            // them) and the alignment: two fit an SM's 227 KiB.
            "into 99328 bytes of CUDA dynamic local memory",
            "__local ulong tile_full[3]",
            "const uint slot = (uint)kt % 3u;",
            "if (kt == 0) __asm__ volatile(\"cp.async.wait_group 2;\" ::: \"memory\");",
            "else if (kt == 1) __asm__ volatile(\"cp.async.wait_group 1;\" ::: \"memory\");",
            "else __asm__ volatile(\"cp.async.wait_group 0;\" ::: \"memory\");",
            "if (tid == 0 && kt >= 2 && kt + 1 < 18) {",
            "((uint)(kt + 1) % 3u)",
        ],
    );
    // One group per prologue stage and one per step from the third.
    assert_eq!(body.matches("cp.async.commit_group;").count(), 4, "{body}");

    // 8 x 8 work-groups of a matmul: one an SM, six stages (five k tiles
    // in flight ahead of the one computed).
    let mut spec = half_spec(TensorCores::Fp16);
    spec.config = split_tile(128, 1);
    spec.shape = shape(1, 1024, 1024, 768);
    spec.a.row_stride = 768;
    spec.b.row_stride = 1024;
    spec.store = "a0[i * 1024 + j] = acc_value;".into();
    assert!(WgmmaHalf::applies(&spec));
    let text = gemm_kernel(&spec).unwrap();
    assert_contains(
        &text,
        &[
            "6 stages of k 64 of A and B copied by the TMA into 197632 bytes",
            "const uint slot = (uint)kt % 6u;",
            "if (tid == 0 && kt >= 1 && kt - 1 + 6 < 12) {",
        ],
    );
    // 32 x 8 of them: three stages.
    spec.shape.m = 4096;
    let text = gemm_kernel(&spec).unwrap();
    assert_contains(
        &text,
        &[
            "3 stages of k 64 of A and B copied by the TMA into 99328 bytes",
            "const uint slot = (uint)kt % 3u;",
            "if (tid == 0 && kt >= 1 && kt - 1 + 3 < 12) {",
        ],
    );
}

#[test]
fn a_pointwise_convolution_is_copied_as_a_matrix() {
    let mut spec = conv_spec(256, 64);
    let image = spec.a_image.as_mut().unwrap();
    image.taps = [1, 1];
    image.pads = [0, 0];
    image.shape[3] = 256;
    image.pixel_strides = [56 * 56 * 256, 56 * 256, 256];
    spec.shape.k = 256;
    spec.config = half_conv_tile_for(&spec.shape, 256, false).unwrap();
    assert!(WgmmaHalf::applies(&spec));
    let text = gemm_kernel(&spec).unwrap();
    let body = &text[..text.find("#elif defined(TCC_PTX)\n").unwrap()];
    assert_contains(
        body,
        &[
            "A and B copied by the TMA",
            "__global const half* a_base = a1 + 64;",
            // Rows of 256 halves.
            "tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;\" :: \"l\"(a_map), \"l\"((ulong)512)",
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 24576;",
        ],
    );
    assert!(!body.contains("cp.async.cg"), "{body}");
    // Strided, over a 55x55 view of a 56x56 image (ResNet's downsampling
    // 1x1): gathered, through the parent's strides.
    let image = spec.a_image.as_mut().unwrap();
    image.shape = [32, 55, 55, 256];
    image.output = [28, 28];
    image.strides = [2, 2];
    spec.shape.m = 32 * 28 * 28;
    spec.config = half_conv_tile_for(&spec.shape, 256, false).unwrap();
    assert!(WgmmaHalf::applies(&spec));
    let text = gemm_kernel(&spec).unwrap();
    let body = &text[..text.find("#elif defined(TCC_PTX)\n").unwrap()];
    assert_contains(
        body,
        &[
            "A gathered from the convolution's image",
            "g_y[r] = m < 25088 ? (int)(pixel / 28) * 2 - 0 : -268435456;",
            "g_base[r] = n * 802816 + (long)g_y[r] * 14336 + (long)g_x[r] * 256 + 64;",
            "const int inside = (uint)y < 55u && (uint)x < 55u;",
        ],
    );
}

#[test]
fn convolutions_the_gather_cannot_take_keep_mma_sync() {
    // 32 channels: a k tile would span two taps.
    let mut spec = conv_spec(64, 64);
    spec.a_image.as_mut().unwrap().shape[3] = 32;
    spec.a_image.as_mut().unwrap().taps = [6, 3];
    assert!(!WgmmaHalf::applies(&spec));
    // An fp32 image (the model's input).
    let mut spec = conv_spec(64, 64);
    spec.a_image.as_mut().unwrap().buffer = Buffer::new("a1", Storage::F32);
    assert!(!WgmmaHalf::applies(&spec));
    // An image whose extents disagree with the product.
    let mut spec = conv_spec(64, 64);
    spec.a_image.as_mut().unwrap().output = [28, 28];
    assert!(!WgmmaHalf::applies(&spec));
    // Without an image the computed element rules the body out.
    let mut spec = conv_spec(64, 64);
    spec.a_image = None;
    assert!(!WgmmaHalf::applies(&spec));
}

/// The dynamic local memory follows the k tiles a work-group runs: a
/// short K fills fewer stages (more work-groups fit an SM), but an
/// unsplit tile keeps room for its staged epilogue.
#[test]
fn dynamic_local_memory_follows_the_stages_used_and_the_epilogue() {
    let marker = |spec: &GemmSpec| {
        let text = gemm_kernel(spec).unwrap();
        let at = text.find("/* tcc-dynamic-local: ").expect("marker") + 22;
        text[at..text[at..].find(' ').unwrap() + at].to_string()
    };
    // 128x256, K = 64: one stage of 48 KiB, but the epilogue's 128 x 264
    // floats (132 KiB).
    let mut spec = half_spec(TensorCores::Fp16);
    spec.shape = shape(1, 4096, 512, 64);
    spec.a.row_stride = 64;
    assert_eq!(marker(&spec), (128 * 264 * 4 + 1024).to_string());
    // K = 4096: all four stages.
    spec.shape = shape(1, 4096, 512, 4096);
    spec.a.row_stride = 4096;
    assert_eq!(marker(&spec), half_dynamic_local_bytes(256).to_string());
    // A split tile (no staged epilogue): its slice's two k tiles.
    let mut spec = half_spec(TensorCores::Fp16);
    spec.config = split_tile(64, 6);
    spec.shape = shape(1, 128, 768, 768);
    spec.a.row_stride = 768;
    spec.b.row_stride = 768;
    spec.split_k_scratch = Some((
        Buffer::new("a4", Storage::F32),
        Buffer::new("a5", Storage::I32),
    ));
    assert_eq!(marker(&spec), (2 * (16384 + 8192) + 1024).to_string());
}

/// A matmul's last column tile hangs past N only on a small product's
/// 64-wide tiles: the table's 128x128 tile of a large N = 96 product
/// (ConvNeXt-T's down-projections) keeps the `mma.sync` body.
#[test]
fn only_small_matmuls_take_column_tails() {
    let with = |m: i64, n: i64, k: i64, width: u32| {
        let mut spec = half_spec(TensorCores::Fp16);
        spec.config = split_tile(width, 1);
        spec.shape = shape(1, m, n, k);
        spec.a.row_stride = k;
        spec.b.row_stride = n;
        spec.store = format!("a0[i * {n} + j] = acc_value;");
        gemm_kernel(&spec).unwrap().contains(WGMMA_GUARD)
    };
    assert!(!with(32 * 56 * 56, 96, 384, 128));
    assert!(with(128, 96 * 20, 768, 64));
    assert!(with(128, 3000, 768, 64));
    assert!(!with(128, 3000, 768, 128));
}

#[test]
fn a_vector_store_epilogue_takes_four_columns_a_work_item() {
    let mut spec = half_spec(TensorCores::Fp16);
    spec.vector_store = Some(crate::VectorStore {
        value: "const float v = acc_value + 1.0f;\nstored[l] = v;\n".into(),
        store: "*(__global float4*)(a0 + i * 512 + j) = stored_vector;".into(),
    });
    let text = gemm_kernel(&spec).unwrap();
    let mma = text
        .find("#elif defined(TCC_PTX)\n")
        .expect("mma.sync body");
    let body = &text[..mma];
    // 128 x 256 tile: 32 passes of 256 work-items x 4 columns, one 16-byte
    // read of the staged tile each, the epilogue per column, one store.
    assert_contains(
        body,
        &[
            "for (int pass = 0; pass < 32; ++pass) {",
            "const int e = (pass * 256 + tid) * 4;",
            "const float4 staged4 = *(__local const float4*)(staged_tile + r * 264 + c);",
            "if (i < 512 && j0 < 512) {",
            "const tcc_index j = j0 + l;",
            "stored[l] = v;",
            "const float4 stored_vector = (float4)(stored[0], stored[1], stored[2], stored[3]);",
            "*(__global float4*)(a0 + i * 512 + j) = stored_vector;",
        ],
    );
    // A tile wholly inside C walks unchecked and unrolled whole (its
    // loads free to be in flight together); a tile past M or N checks
    // each element.
    let whole = body
        .find("if (row0 + 128 <= 512 && col0 + 256 <= 512) {")
        .expect("whole-tile branch");
    let partial = body[whole..].find("} else {").expect("checked walk") + whole;
    let unchecked = &body[whole..partial];
    assert!(
        unchecked.contains("#pragma unroll\n  for (int pass = 0; pass < 32; ++pass) {"),
        "{unchecked}"
    );
    assert!(!unchecked.contains("if (i < 512"), "{unchecked}");
    assert!(body[partial..].contains("if (i < 512 && j0 < 512) {"));
    assert_eq!(
        body.matches("*(__global float4*)(a0 + i * 512 + j) = stored_vector;")
            .count(),
        2
    );
    assert!(!body.contains("a0[i * 512 + j] = acc_value;"), "{body}");
    // The other bodies keep the per-element store.
    assert!(text[mma..].contains("a0[i * 512 + j] = acc_value;"));
}
