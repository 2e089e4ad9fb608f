// NVIDIA's two largest GEMM configurations on every test device:
// @tiles128: 2048x64 . 64x2048 + bias + relu (a 2048x2048 output: 128x128
// tiles, 8x8 outputs per work-item read as float4 runs);
// @split64: 768x2048 . 2048x768 (144 tiles of 64x64 fill the 132 SMs once
// over a long K: split in 2 slices of 1024).
// Sums of 64 and 2048 products of values in [-1, 1]: results up to about
// 50, order-dependent rounding up to about 1e-4.
// TOLERANCE: 2e-4 1e-5
// ACCUMULATION: 2048 100
// TARGET: nvidia
func.func @tiles128(%x: tensor<1x2048x64xf32>, %w: tensor<1x64x2048xf32>, %b: tensor<1x1x2048xf32>) -> tensor<1x2048x2048xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2048x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2048x2048xf32>
  %hb = tosa.add %h, %b : (tensor<1x2048x2048xf32>, tensor<1x1x2048xf32>) -> tensor<1x2048x2048xf32>
  %y = tosa.clamp %hb {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x2048x2048xf32>) -> tensor<1x2048x2048xf32>
  return %y : tensor<1x2048x2048xf32>
}

func.func @split64(%a: tensor<1x768x2048xf32>, %b: tensor<1x2048x768xf32>) -> tensor<1x768x768xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x768x2048xf32>, tensor<1x2048x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x768x768xf32>
  return %c : tensor<1x768x768xf32>
}
