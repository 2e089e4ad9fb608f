// tcc-configure-kernels{half-wgmma-tiles=true} (what `tcc compile
// --backend=cuda --precision=fp16|bf16` asks for): on nvidia, a matmul
// with at least one 128x128 tile's work per SM whose K is a multiple of 8
// takes a 128-row tile of the FP16/BF16 wgmma body, 256, 192 or 128
// columns wide, whichever divides N and runs the fewest waves of
// work-groups (times their width; 128-wide tiles of more work-groups
// than SMs over 3 to 18 k tiles run two an SM and count as their work
// spread over the SMs); a smaller product takes unsplit 128x64
// tiles where they are at least 32 work-groups over a K of at most 1024;
// other small products, sizes that do not divide, other targets and every
// matmul without the option keep the table's tile. A convolution that reads its NHWC image as it is (the
// named form, or `tcc.conv` after tcc-fold-conv-inputs with nothing but
// zero padding folded in) over a multiple of 64 channels (a pointwise one
// over any multiple of 8) takes the body's implicit GEMM, 64 to 256
// columns wide, where its tiles give at least half the SMs a work-group
// and cover at most three times N; one whose input a folded producer
// computes keeps the table's.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia half-wgmma-tiles=true})' | FileCheck %s
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia})' | FileCheck %s --check-prefix=TABLE --implicit-check-not="tile_n = 192" --implicit-check-not="tile_n = 256"
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=generic half-wgmma-tiles=true})' | FileCheck %s --check-prefix=GENERIC --implicit-check-not="tile_n = 192" --implicit-check-not="tile_n = 256"
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels{target=nvidia half-wgmma-tiles=true})' | FileCheck %s --check-prefix=FOLD
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{half-wgmma-tiles=maybe})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: half-wgmma-tiles

// BERT's QKV projection at batch 32 (M = 4096, N = 2304): 128x128 tiles,
// two an SM (576 work-groups, 558 as their work spread over the SMs),
// against three waves of 128x192 (576) or of 128x256 (768).
// CHECK-LABEL: func.func @qkv
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 4096, n = 2304, k = 768>
// TABLE-LABEL: func.func @qkv
// Without the option (exact fp32), the nvidia fp32 matmul tile.
// TABLE: tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 4096, n = 2304, k = 768>
// GENERIC-LABEL: func.func @qkv
func.func @qkv(%x: tensor<1x4096x768xf32>, %w: tensor<1x768x2304xf32>) -> tensor<1x4096x2304xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4096x768xf32>, tensor<1x768x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4096x2304xf32>
  return %h : tensor<1x4096x2304xf32>
}

// The square 4096 product: 128x256, four waves (K = 4096: too long for
// three-stage tiles sharing SMs).
// CHECK-LABEL: func.func @square
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 256, tile_k = 16, work_m = 8, work_n = 16, split_k = 1, batch = 1, m = 4096, n = 4096, k = 4096>
func.func @square(%x: tensor<1x4096x4096xf32>, %w: tensor<1x4096x4096xf32>) -> tensor<1x4096x4096xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4096x4096xf32>, tensor<1x4096x4096xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4096x4096xf32>
  return %h : tensor<1x4096x4096xf32>
}

// Batch 1 (M = 128): six 128x128 tiles for 132 SMs, the table's split-K.
// CHECK-LABEL: func.func @skinny
// CHECK-NOT: tile_m = 128, tile_n = 192
// CHECK: tcc.strategy = #tcc.gemm<{{.*}} m = 128, n = 768, k = 768>
func.func @skinny(%x: tensor<1x128x768xf32>, %w: tensor<1x768x768xf32>) -> tensor<1x128x768xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x128x768xf32>, tensor<1x768x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x128x768xf32>
  return %h : tensor<1x128x768xf32>
}

// Batch 1, GPT-2's FFN up-projection (M = 128, N = 3072, K = 768): 48
// unsplit 128x64 tiles, each reading its 64 columns of the weights once.
// CHECK-LABEL: func.func @skinny_wide
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 128, n = 3072, k = 768>
// TABLE-LABEL: func.func @skinny_wide
// TABLE-NOT: tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 128
// TABLE: tcc.strategy = #tcc.gemm<{{.*}} m = 128, n = 3072, k = 768>
func.func @skinny_wide(%x: tensor<1x128x768xf32>, %w: tensor<1x768x3072xf32>) -> tensor<1x128x3072xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x128x768xf32>, tensor<1x768x3072xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x128x3072xf32>
  return %h : tensor<1x128x3072xf32>
}

// The same M with K = 3072 (the down-projection): 12 tiles of 48 k tiles
// each, the table's split-K.
// CHECK-LABEL: func.func @skinny_deep
// CHECK-NOT: split_k = 1, batch = 1, m = 128, n = 768, k = 3072
// CHECK: tcc.strategy = #tcc.gemm<{{.*}} m = 128, n = 768, k = 3072>
func.func @skinny_deep(%x: tensor<1x128x3072xf32>, %w: tensor<1x3072x768xf32>) -> tensor<1x128x768xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x128x3072xf32>, tensor<1x3072x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x128x768xf32>
  return %h : tensor<1x128x768xf32>
}

// K = 96 (ConvNeXt-T's first stage) is not a multiple of the body's k
// stage (64): its last k tile hangs past K, the TMA filling it with zeros;
// the body takes it as any other K that is a multiple of 8. Two k tiles:
// every width's work-groups share SMs, so waves decide (128x192).
// CHECK-LABEL: func.func @short_k
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 192, tile_k = 16, work_m = 8, work_n = 12, split_k = 1, batch = 1, m = 4096, n = 2304, k = 96>
func.func @short_k(%x: tensor<1x4096x96xf32>, %w: tensor<1x96x2304xf32>) -> tensor<1x4096x2304xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4096x96xf32>, tensor<1x96x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4096x2304xf32>
  return %h : tensor<1x4096x2304xf32>
}

// K = 100: A's rows are not whole 16-byte octets (the TMA's strides): the
// table's tile.
// CHECK-LABEL: func.func @unaligned_k
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8
func.func @unaligned_k(%x: tensor<1x4096x100xf32>, %w: tensor<1x100x2304xf32>) -> tensor<1x4096x2304xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4096x100xf32>, tensor<1x100x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4096x2304xf32>
  return %h : tensor<1x4096x2304xf32>
}

// ResNet's 56x56 3x3 convolution at batch 32 (64 -> 64 channels, padding
// 1): 784 work-groups of 128x64.
// CHECK-LABEL: func.func @conv3x3
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 100352, n = 64, k = 576>
// TABLE-LABEL: func.func @conv3x3
// TABLE-NOT: tile_n = 64, tile_k = 16, work_m = 8, work_n = 4
// FOLD-LABEL: func.func @conv3x3
// FOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]>{{.*}}tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 100352, n = 64, k = 576>
func.func @conv3x3(%x: tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<64x3x3x64xf32>}> : () -> tensor<64x3x3x64xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<64xf32>}> : () -> tensor<64xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<32x56x56x64xf32>, tensor<64x3x3x64xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x56x56x64xf32>
  return %y : tensor<32x56x56x64xf32>
}

// A ReLU folded into the convolution's loads computes its A: the table.
// FOLD-LABEL: func.func @relu_conv
// FOLD: tcc.conv<{{.*}}tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 100352, n = 64, k = 576>
func.func @relu_conv(%x: tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<64x3x3x64xf32>}> : () -> tensor<64x3x3x64xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<64xf32>}> : () -> tensor<64xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %r = tosa.clamp %x {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<32x56x56x64xf32>) -> tensor<32x56x56x64xf32>
  %y = tosa.conv2d %r, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<32x56x56x64xf32>, tensor<64x3x3x64xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x56x56x64xf32>
  return %y : tensor<32x56x56x64xf32>
}

// 32 channels: a k tile of 64 would span two taps; the table's tile.
// FOLD-LABEL: func.func @conv32
// FOLD-NOT: tile_n = 64, tile_k = 16, work_m = 8, work_n = 4
// FOLD: tcc.strategy = #tcc.gemm<{{.*}}m = 100352, n = 64, k = 288>
func.func @conv32(%x: tensor<32x56x56x32xf32>) -> tensor<32x56x56x64xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<64x3x3x32xf32>}> : () -> tensor<64x3x3x32xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<64xf32>}> : () -> tensor<64xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<32x56x56x32xf32>, tensor<64x3x3x32xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x56x56x64xf32>
  return %y : tensor<32x56x56x64xf32>
}

// A pointwise convolution reads its image as a plain matrix, which the TMA
// copies whatever its multiple of 8 channels (here 96 -> 24, EfficientNet's
// projection): one 64-wide column tile hanging past N = 24. Into 16
// channels the tile would be four times N: the table's.
// CHECK-LABEL: func.func @pointwise_narrow
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 100352, n = 24, k = 96>
// CHECK-NOT: tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 100352, n = 16
// CHECK: return
// TABLE-LABEL: func.func @pointwise_narrow
// TABLE-NOT: tile_m = 128, tile_n = 64, tile_k = 16, work_m = 8, work_n = 4
func.func @pointwise_narrow(%x: tensor<32x56x56x96xf32>) -> (tensor<32x56x56x24xf32>, tensor<32x56x56x16xf32>) {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<24x1x1x96xf32>}> : () -> tensor<24x1x1x96xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<24xf32>}> : () -> tensor<24xf32>
  %w16 = "tosa.const"() <{values = dense<0.5> : tensor<16x1x1x96xf32>}> : () -> tensor<16x1x1x96xf32>
  %b16 = "tosa.const"() <{values = dense<0.0> : tensor<16xf32>}> : () -> tensor<16xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<32x56x56x96xf32>, tensor<24x1x1x96xf32>, tensor<24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x56x56x24xf32>
  %z = tosa.conv2d %x, %w16, %b16, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<32x56x56x96xf32>, tensor<16x1x1x96xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x56x56x16xf32>
  return %y, %z : tensor<32x56x56x24xf32>, tensor<32x56x56x16xf32>
}
