// tcc-configure-kernels on nvidia in exact fp32 (no tensor cores): a
// matmul the table gives unsplit 128x128 tiles of 8x8 outputs, or unsplit
// 64x64 tiles of 4x4, takes 64x128 tiles of 8x8 where those give every SM
// a work-group, else 32x128 tiles of 4x8 in two K slices where those do
// (a few hundred rows). TF32 keeps the table's tiles (whose 128x128 the
// large TF32 body takes over), and so do convolutions.
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia})' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-attach-target{target=nvidia-sm90 precision=tf32},tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels)' | FileCheck %s --check-prefix=TF32

// BERT-base's output projection at batch 32 (the table's 64x64 tiles).
// CHECK-LABEL: func.func @projection
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 4096, n = 768, k = 768>
// TF32-LABEL: func.func @projection
// TF32: tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 64, tile_k = 16, work_m = 4, work_n = 4, split_k = 1, batch = 1, m = 4096, n = 768, k = 768
func.func @projection(%x: tensor<1x4096x768xf32>, %w: tensor<1x768x768xf32>) -> tensor<1x4096x768xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4096x768xf32>, tensor<1x768x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4096x768xf32>
  return %y : tensor<1x4096x768xf32>
}

// -----

// Its FFN expansion (the table's 128x128 tiles).
// CHECK-LABEL: func.func @expansion
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 4096, n = 3072, k = 768>
// TF32-LABEL: func.func @expansion
// TF32: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 4096, n = 3072, k = 768, precision = "tf32">
func.func @expansion(%x: tensor<1x4096x768xf32>, %w: tensor<1x768x3072xf32>) -> tensor<1x4096x3072xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4096x768xf32>, tensor<1x768x3072xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4096x3072xf32>
  return %y : tensor<1x4096x3072xf32>
}

// -----

// ViT-B/16's Q/K/V product at batch 1 (197 tokens): 64x128 tiles would
// make 72 work-groups; 32x128 in two slices make 252.
// CHECK-LABEL: func.func @few_rows
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 128, tile_k = 16, work_m = 4, work_n = 8, split_k = 2, batch = 1, m = 197, n = 2304, k = 768>
func.func @few_rows(%x: tensor<1x197x768xf32>, %w: tensor<1x768x2304xf32>) -> tensor<1x197x2304xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x197x768xf32>, tensor<1x768x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x197x2304xf32>
  return %y : tensor<1x197x2304xf32>
}

// -----

// Its FFN contraction (K = 3072) keeps the table's split tiles.
// CHECK-LABEL: func.func @contraction
// CHECK-NOT: tile_n = 128
// CHECK: m = 197, n = 768, k = 3072
func.func @contraction(%x: tensor<1x197x3072xf32>, %w: tensor<1x3072x768xf32>) -> tensor<1x197x768xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x197x3072xf32>, tensor<1x3072x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x197x768xf32>
  return %y : tensor<1x197x768xf32>
}

// -----

// A convolution of the same product keeps the table's 64x64 tiles.
// CHECK-LABEL: func.func @pointwise
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 64, tile_k = 16, work_m = 4, work_n = 4, split_k = 1, batch = 1, m = 4096, n = 768, k = 768>
func.func @pointwise(%x: tensor<1x64x64x768xf32>) -> tensor<1x64x64x768xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<768x1x1x768xf32>}> : () -> tensor<768x1x1x768xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<768xf32>}> : () -> tensor<768xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x64x64x768xf32>, tensor<768x1x1x768xf32>, tensor<768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x64x768xf32>
  return %y : tensor<1x64x64x768xf32>
}
