// tcc-configure-kernels on pocl-cpu: a convolution whose A a folded
// producer computes with float arithmetic (tcc-fold-conv-inputs made a
// BatchNorm + ReLU part of its loads) takes the computed-A register block:
// on AVX2 (8-float registers) 4 x 64 instead of 6 x 16, so that the
// producer's arithmetic serves 64 columns. The same convolution reading a
// plain input keeps 6 x 16; AVX-512's table (16 floats) is the same for
// both.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx2})' | FileCheck %s --check-prefix=AVX2
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx512})' | FileCheck %s --check-prefix=AVX512

// AVX2-LABEL: func.func @bn_relu_then_conv
// AVX2: tcc.conv<conv_2d_nhwc_hwcf
// AVX2-SAME: tcc.strategy = #tcc.gemm<tile_m = 4, tile_n = 64, tile_k = 4, work_m = 4, work_n = 64, split_k = 1, batch = 1, m = 400, n = 64, k = 128>
// AVX512-LABEL: func.func @bn_relu_then_conv
// AVX512: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 64, tile_k = 4, work_m = 6, work_n = 64, split_k = 1, batch = 1, m = 400, n = 64, k = 128>
func.func @bn_relu_then_conv(%x: tensor<1x20x20x128xf32>, %s: tensor<1x1x1x128xf32>, %w: tensor<64x1x1x128xf32>, %b: tensor<64xf32>) -> tensor<1x20x20x64xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %scaled = tosa.mul %x, %s, %shift : (tensor<1x20x20x128xf32>, tensor<1x1x1x128xf32>, tensor<1xi8>) -> tensor<1x20x20x128xf32>
  %relu = tosa.clamp %scaled {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x20x20x128xf32>) -> tensor<1x20x20x128xf32>
  %c = tosa.conv2d %relu, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x20x20x128xf32>, tensor<64x1x1x128xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x20x20x64xf32>
  return %c : tensor<1x20x20x64xf32>
}

// AVX2-LABEL: func.func @plain_conv
// AVX2-NOT: tcc.conv<
// AVX2: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 16, tile_k = 4, work_m = 6, work_n = 16, split_k = 1, batch = 1, m = 400, n = 64, k = 128>
func.func @plain_conv(%x: tensor<1x20x20x128xf32>, %w: tensor<64x1x1x128xf32>, %b: tensor<64xf32>) -> tensor<1x20x20x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x20x20x128xf32>, tensor<64x1x1x128xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x20x20x64xf32>
  return %c : tensor<1x20x20x64xf32>
}
