// NVIDIA's split-K GEMM on every test device: a 64x4096 . 4096x96 dense
// layer (6 tiles of 32x32; the nvidia target splits K 16 ways into
// slices of 256) with a bias and relu epilogue, followed by a second,
// unsplit matmul that reads its result.
// Sums of 4096 products of values in [-1, 1]: results up to about 60,
// order-dependent rounding up to about 1e-4.
// TOLERANCE: 2e-4 1e-5
// ACCUMULATION: 4096 500
// TARGET: nvidia
func.func @split_k_matmul(%x: tensor<1x64x4096xf32>, %w: tensor<1x4096x96xf32>, %b: tensor<1x1x96xf32>, %v: tensor<1x96x8xf32>) -> tensor<1x64x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x64x4096xf32>, tensor<1x4096x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x96xf32>
  %hb = tosa.add %h, %b : (tensor<1x64x96xf32>, tensor<1x1x96xf32>) -> tensor<1x64x96xf32>
  %hr = tosa.clamp %hb {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x64x96xf32>) -> tensor<1x64x96xf32>
  %y = tosa.matmul %hr, %v, %zp, %zp : (tensor<1x64x96xf32>, tensor<1x96x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x8xf32>
  return %y : tensor<1x64x8xf32>
}
