// The window template's loop over the window's rows stays a loop on
// nvidia (`#pragma unroll 1`, `TargetConfig::window_rows_rolled`): its
// PTX holds one row's multiply-adds (7 taps x 4 columns x 4 channels =
// 112) inside a loop that branches back, not the 7 x 112 of an unrolled
// body. Unrolled, a 7x7 window over 4 columns is one straight run of
// 7 x (7 + 10) loads that ptxas hoists and keeps live together past the
// 255 registers a work-item has; the H200's driver JIT (CUDA 13.0's
// ptxas) then gave ConvNeXt-T's fp16 14x14x384 kernel 32 registers and
// 2.8 KiB of local memory (557 us; rolled 31 us: docs/benchmarks.md).
// The second convolution reads the first one's half output
// (`cvt.f32.f16` in the loop). Other targets keep the rows unrolled.
// RUN: tcc compile %s --target=nvidia --precision=fp16 --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: tcc compile %s --target=nvidia --precision=fp16 --emit=opencl-c | FileCheck %s --check-prefix=NV
// RUN: tcc compile %s --target=generic --emit=opencl-c | FileCheck %s --check-prefix=GENERIC

// PTX-LABEL: .entry depthwise_conv_add_0(
// PTX: .reqntid 256, 1, 1
// PTX: [[ROW0:\$L__BB[0-9]+_[0-9]+]]:
// PTX-COUNT-112: fma.rn.f32
// PTX-NOT: fma.rn.f32
// PTX: bra.uni [[ROW0]];
// PTX-NOT: fma.rn.f32
// PTX-LABEL: .entry depthwise_conv_add_1(
// PTX: [[ROW1:\$L__BB[0-9]+_[0-9]+]]:
// PTX: cvt.f32.f16
// PTX-COUNT-112: fma.rn.f32
// PTX-NOT: fma.rn.f32
// PTX: bra.uni [[ROW1]];
// PTX-NOT: fma.rn.f32

// NV-LABEL: void depthwise_conv_add_0(
// NV: #pragma unroll 1
// NV-NEXT: for (int ky = 0; ky < 7; ky++) {
// NV-LABEL: void depthwise_conv_add_1(
// NV: #pragma unroll 1
// NV-NEXT: for (int ky = 0; ky < 7; ky++) {
// NV: tcc_load_f16_aligned4(

// GENERIC-LABEL: void depthwise_conv_add_0(
// GENERIC: #pragma unroll{{$}}
// GENERIC-NEXT: for (int ky = 0; ky < 7; ky++) {

func.func @dw7(%x: tensor<32x14x14x384xf32>, %w: tensor<7x7x384x1xf32>, %b: tensor<384xf32>) -> tensor<32x14x14x384xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 3, 3, 3, 3>, stride = array<i64: 1, 1>} : (tensor<32x14x14x384xf32>, tensor<7x7x384x1xf32>, tensor<384xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x14x14x384xf32>
  %z = tosa.depthwise_conv2d %y, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 3, 3, 3, 3>, stride = array<i64: 1, 1>} : (tensor<32x14x14x384xf32>, tensor<7x7x384x1xf32>, tensor<384xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x14x14x384xf32>
  return %z : tensor<32x14x14x384xf32>
}
