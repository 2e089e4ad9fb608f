// Matmuls large enough for the tiled GEMM: the tile phase records the
// target's tiles, the gpu phase launches a 2-D grid of 2-D work-groups,
// codegen instantiates the local-memory template with the fused epilogue.
// RUN: tcc compile %s --compile-to=tile --target=nvidia | FileCheck %s --check-prefix=TILE
// RUN: tcc compile %s --compile-to=gpu --target=nvidia | FileCheck %s --check-prefix=GPU
// RUN: tcc compile %s --emit=opencl-c --target=nvidia | FileCheck %s --check-prefix=CL
// RUN: tcc compile %s --compile-to=tile --target=pocl-cpu-avx512 | FileCheck %s --check-prefix=POCL
// RUN: tcc compile %s --emit=opencl-c --target=pocl-cpu-avx512 | FileCheck %s --check-prefix=CPU

// A 200x96 output has 8 64x64 tiles, fewer than the H100's 132 SMs: the
// nvidia configuration takes 16x16 tiles (13 x 6 work-groups of 8x8).
// TILE: linalg.matmul {tcc.kind = "matmul", tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 200, n = 96, k = 128>}
// On CPUs a work-group is one work-item with a 6x64 block of C
// (register-blocked: tile == work per item).
// POCL: linalg.matmul {tcc.kind = "matmul", tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 64, tile_k = 4, work_m = 6, work_n = 64, split_k = 1,

// 200 / 16 -> 13 tiles along M, 96 / 16 -> 6 along N.
// GPU-DAG: %[[C6:.*]] = arith.constant 6 : index
// GPU-DAG: %[[C13:.*]] = arith.constant 13 : index
// GPU-DAG: %[[C8:.*]] = arith.constant 8 : index
// GPU: gpu.launch_func @tcc_kernels::@matmul_add_max_0 blocks in (%[[C6]], %[[C13]], %{{.*}}) threads in (%[[C8]], %[[C8]], %{{.*}})
// GPU: gpu.func @matmul_add_max_0({{.*}}) kernel attributes {known_block_size = array<i32: 8, 8, 1>, tcc.flops = 4915200 : i64, tcc.kind = "matmul", tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 200, n = 96, k = 128>}
// GPU: linalg.matmul

// CL: __kernel __attribute__((reqd_work_group_size(8, 8, 1)))
// CL-NEXT: void matmul_add_max_0(__global float* restrict a0,
// CL: /* tile 16x16x16, 2x2 outputs per work-item; M=200 N=96 K=128 batch=1 */
// CL: __local float tile_a[16][17] __attribute__((aligned(16)));
// CL: __local float tile_b[16][16] __attribute__((aligned(16)));
// The 128-wide rows of A and 96-wide rows of B load as float4, into
// registers first; each k step stores them to local memory, then issues
// the next tile's loads before its multiply-adds.
// CL: float4 fetch_a[1];
// CL: float4 fetch_b[1];
// CL: fetch_a[r] = (i < 200 && k < 128) ? vload4(0, a1 + i * 128 + k)
// CL: fetch_b[r] = (k < 128 && j < 96) ? vload4(0, a2 + k * 96 + j)
// CL: for (tcc_index k0 = 0; k0 < 128; k0 += 16) {
// CL: vstore4(fetch_b[r], 0, &tile_b[kk][nn]);
// CL: barrier(CLK_LOCAL_MEM_FENCE);
// CL: if (k0 + 16 < 128) {
// CL: const tcc_index k_next = k0 + 16;
// CL: fetch_a[r] = (i < 200 && k < 128) ? vload4(0, a1 + i * 128 + k)
// CL: acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);
// CL: if (i < 200 && j < 96) {
// CL: const float acc_value = acc_init + acc[wm][wn];
// CL: = (acc_value + [[BIAS:v[0-9]+]]);
// CL: tcc_maximumf(
// CL: a0[i * 96 + j] =

// The register-blocked form: no local memory; N = 96 takes 6x32 blocks
// on AVX-512 (a 64-wide block would pad it to 128 columns): per k, two float16 of
// B's row and one broadcast A element per row into 12 accumulators; the
// row tiles (34 of 6) are walked fastest; every column tile lies inside N
// (no edge loads, no exit in the epilogue's column loop, which is
// vectorized at the block's width: the edge forms are the kernels crate's
// unit tests); each row's start of A and each B vector's column are
// pointers set before the k loop, which loads at k from them; the
// epilogue runs per element from a private copy of the block.
// CPU: __kernel __attribute__((reqd_work_group_size(1, 1, 1)))
// CPU-NEXT: void matmul_add_max_0(
// CPU-NOT: __local
// CPU: /* register-blocked: 6x32 outputs per work-item in 2 float16 per row; M=200 N=96 K=128 batch=1 */
// CPU: const tcc_index row0 = (group % 34) * 6;
// CPU: const tcc_index col0 = (group / 34) * 32;
// CPU: const tcc_index i5 = min(row0 + 5, (tcc_index)199);
// CPU: float16 acc5_1 = (float16)(0.0f);
// CPU: __global const float* tcc_a5 = a1 + i5 * 128;
// CPU: __global const float* tcc_b1 = a2 + col0 + 16;
// CPU-NOT: full
// CPU: for (tcc_index k_step = 0; k_step < 128; k_step += 1) {
// CPU: ra5 = tcc_a5[k];
// CPU: rb1 = vload16(0, tcc_b1 + k * 96);
// CPU: { const float16 a = (float16)(ra5); acc5_0 = fma(a, rb0, acc5_0); acc5_1 = fma(a, rb1, acc5_1); }
// CPU: *(float16*)&block[5][16] = acc5_1;
// CPU: if (i >= 200) break;
// CPU-NEXT: #pragma clang loop vectorize_width(16)
// CPU-NEXT: for (int wn = 0; wn < 32; ++wn) {
// CPU-NOT: break
// CPU: const float acc_value = acc_init + block[wm][wn];
// CPU: tcc_maximumf_select(
// CPU: a0[i * 96 + j] =
func.func @dense_relu(%x: tensor<200x128xf32>, %w: tensor<128x96xf32>, %b: tensor<96xf32>) -> tensor<200x96xf32> {
  %e = tensor.empty() : tensor<200x96xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<200x96xf32>) -> tensor<200x96xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<200x128xf32>, tensor<128x96xf32>) outs(%f : tensor<200x96xf32>) -> tensor<200x96xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %b : tensor<200x96xf32>, tensor<96xf32>) outs(%e : tensor<200x96xf32>) {
  ^bb0(%acc: f32, %bias: f32, %out: f32):
    %s = arith.addf %acc, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<200x96xf32>
  return %y : tensor<200x96xf32>
}

// 1024x1024 has 256 64x64 tiles, enough for every SM: 64x64 tiles.
// TILE-LABEL: func.func @square_1024
// TILE: linalg.matmul {tcc.kind = "matmul", tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 64, tile_k = 16, work_m = 4, work_n = 4, split_k = 1,
func.func @square_1024(%x: tensor<1024x64xf32>, %w: tensor<64x1024xf32>) -> tensor<1024x1024xf32> {
  %e = tensor.empty() : tensor<1024x1024xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1024x64xf32>, tensor<64x1024xf32>) outs(%f : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %mm : tensor<1024x1024xf32>
}
