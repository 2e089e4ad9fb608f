// The window template: a depthwise 3x3 convolution with padding, bias and
// ReLU6 at batch 16 (blocks of 4 output columns of 4 channels), and an
// average pool 3x3 stride 2 with padding (a sum pool whose epilogue
// divides by the cells inside the input).
func.func @depthwise_pool(%x: tensor<16x64x64x16xf32>, %w: tensor<3x3x16x1xf32>, %b: tensor<16xf32>, %p: tensor<1x9x9x8xf32>) -> (tensor<16x64x64x16xf32>, tensor<1x5x5x8xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<16x64x64x16xf32>, tensor<3x3x16x1xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<16x64x64x16xf32>
  %r = tosa.clamp %y {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<16x64x64x16xf32>) -> tensor<16x64x64x16xf32>
  %a = tosa.avg_pool2d %p, %zp, %zp {acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x9x9x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x5x5x8xf32>
  return %r, %a : tensor<16x64x64x16xf32>, tensor<1x5x5x8xf32>
}
