// NVIDIA's split-K convolution on every test device: a 3x3 convolution of
// 256 channels on a 9x9 map (implicit GEMM M = 81, N = 64, K = 2304: 6
// tiles of 32x32, so the nvidia target splits K 8 ways), bias and a
// residual input in the epilogue, then relu. Runs twice per session in
// the suite's order of functions, so the per-tile counters the kernel
// resets for the next launch are exercised too (two functions, same
// kernel shape).
// Sums of 2304 products of values in [-1, 1]: results up to about 40,
// order-dependent rounding up to a few 1e-5 (8 slices summed in order).
// TOLERANCE: 1e-4 1e-5
// ACCUMULATION: 2304 100
// TARGET: nvidia
func.func @split_k_conv(%x: tensor<1x9x9x256xf32>, %w: tensor<64x3x3x256xf32>, %b: tensor<64xf32>, %r: tensor<1x9x9x64xf32>) -> tensor<1x9x9x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x9x9x256xf32>, tensor<64x3x3x256xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x9x9x64xf32>
  %s = tosa.add %c, %r : (tensor<1x9x9x64xf32>, tensor<1x9x9x64xf32>) -> tensor<1x9x9x64xf32>
  %y = tosa.clamp %s {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x9x9x64xf32>) -> tensor<1x9x9x64xf32>
  return %y : tensor<1x9x9x64xf32>
}

func.func @split_k_conv_again(%x: tensor<1x9x9x256xf32>, %w: tensor<64x3x3x256xf32>, %b: tensor<64xf32>, %r: tensor<1x9x9x64xf32>) -> tensor<1x9x9x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x9x9x256xf32>, tensor<64x3x3x256xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x9x9x64xf32>
  %s = tosa.add %c, %r : (tensor<1x9x9x64xf32>, tensor<1x9x9x64xf32>) -> tensor<1x9x9x64xf32>
  %y = tosa.clamp %s {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x9x9x64xf32>) -> tensor<1x9x9x64xf32>
  return %y : tensor<1x9x9x64xf32>
}
