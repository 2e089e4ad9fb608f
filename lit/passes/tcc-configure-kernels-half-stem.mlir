// tcc-configure-kernels on a half-precision nvidia module (#tcc.target
// precision fp16): a convolution over fewer than 8 input channels whose
// padding tcc-fold-conv-inputs folded into its loads (an image's stem)
// keeps fp32 arithmetic (its #tcc.gemm has no precision), where the
// tensor-core body's element-by-element staging of A took longer, on
// 32x32 tiles where it has at most 32 output channels (the table's
// 128x128 would compute three quarters of its columns past N); wider
// convolutions, and an unpadded one over 3 channels, take the module's
// precision.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels)' | FileCheck %s

module attributes {tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "cuda", precision = "fp16", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>} {

// ResNet's stem: 7x7, stride 2, padding 3, over RGB.
// CHECK-LABEL: func.func @stem
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2], dilations = [1, 1]>
// Its 64 channels keep the table's 128x128 tiles.
// CHECK-SAME: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 401408, n = 64, k = 147>
func.func @stem(%x: tensor<32x224x224x3xf32>) -> tensor<32x112x112x64xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<64x7x7x3xf32>}> : () -> tensor<64x7x7x3xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<64xf32>}> : () -> tensor<64xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 3, 2, 3, 2>, stride = array<i64: 2, 2>} : (tensor<32x224x224x3xf32>, tensor<64x7x7x3xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x112x112x64xf32>
  return %y : tensor<32x112x112x64xf32>
}

// MobileNetV2's stem: 3x3, stride 2, 32 output channels: 32x32 tiles.
// CHECK-LABEL: func.func @stem_32_channels
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2], dilations = [1, 1]>
// CHECK-SAME: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 401408, n = 32, k = 27>
func.func @stem_32_channels(%x: tensor<32x224x224x3xf32>) -> tensor<32x112x112x32xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<32x3x3x3xf32>}> : () -> tensor<32x3x3x3xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 0, 1>, stride = array<i64: 2, 2>} : (tensor<32x224x224x3xf32>, tensor<32x3x3x3xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x112x112x32xf32>
  return %y : tensor<32x112x112x32xf32>
}

// A stem of 96 output channels keeps the table's tiles too.
// CHECK-LABEL: func.func @stem_96_channels
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2], dilations = [1, 1]>
// CHECK-SAME: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, {{[^>]*}}m = 401408, n = 96, k = 27>
func.func @stem_96_channels(%x: tensor<32x224x224x3xf32>) -> tensor<32x112x112x96xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<96x3x3x3xf32>}> : () -> tensor<96x3x3x3xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<96xf32>}> : () -> tensor<96xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 0, 1>, stride = array<i64: 2, 2>} : (tensor<32x224x224x3xf32>, tensor<96x3x3x3xf32>, tensor<96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x112x112x96xf32>
  return %y : tensor<32x112x112x96xf32>
}

// 16 channels: the module's precision.
// CHECK-LABEL: func.func @wider
// CHECK: tcc.conv<{{.*}}tcc.strategy = #tcc.gemm<{{[^>]*}}precision = "fp16">
func.func @wider(%x: tensor<8x56x56x16xf32>) -> tensor<8x56x56x64xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<64x3x3x16xf32>}> : () -> tensor<64x3x3x16xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<64xf32>}> : () -> tensor<64xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<8x56x56x16xf32>, tensor<64x3x3x16xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x56x56x64xf32>
  return %y : tensor<8x56x56x64xf32>
}

// ConvNeXt's 4x4 patches, unpadded (a named convolution): the module's
// precision.
// CHECK-LABEL: func.func @patches
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}tcc.strategy = #tcc.gemm<{{[^>]*}}precision = "fp16">
func.func @patches(%x: tensor<32x224x224x3xf32>) -> tensor<32x56x56x96xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<96x4x4x3xf32>}> : () -> tensor<96x4x4x3xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<96xf32>}> : () -> tensor<96xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 4, 4>} : (tensor<32x224x224x3xf32>, tensor<96x4x4x3xf32>, tensor<96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x56x56x96xf32>
  return %y : tensor<32x56x56x96xf32>
}

}
