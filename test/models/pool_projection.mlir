// Max pools feeding 1x1 convolutions, as in Inception's pool projections
// and SqueezeNet's squeeze layers: tcc-fold-conv-inputs unrolls the pool's
// window into the convolution's loads, so each pair is one kernel.
// @projection: 1x9x9x16, max_pool 3x3 stride 1 pad 1, then a 1x1 conv to
// 8 channels + bias + relu. @squeeze: 2x11x11x24, max_pool 3x3 stride 2
// (no padding) after a relu, then a 1x1 conv to 6 channels.
// @shared: the pool is also a result, so it stays its own kernel.
// Sums of 16 and 24 products of values in [-1, 1] x [-0.3, 0.3].
// TOLERANCE: 1e-5 1e-5
func.func @projection(%x: tensor<1x9x9x16xf32>, %w: tensor<8x1x1x16xf32>, %b: tensor<8xf32>) -> tensor<1x9x9x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.max_pool2d %x {kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x9x9x16xf32>) -> tensor<1x9x9x16xf32>
  %c = tosa.conv2d %p, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x9x9x16xf32>, tensor<8x1x1x16xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x9x9x8xf32>
  %y = tosa.clamp %c {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x9x9x8xf32>) -> tensor<1x9x9x8xf32>
  return %y : tensor<1x9x9x8xf32>
}

func.func @squeeze(%x: tensor<2x11x11x24xf32>, %w: tensor<6x1x1x24xf32>, %b: tensor<6xf32>) -> tensor<2x5x5x6xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %r = tosa.clamp %x {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<2x11x11x24xf32>) -> tensor<2x11x11x24xf32>
  %p = tosa.max_pool2d %r {kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x11x11x24xf32>) -> tensor<2x5x5x24xf32>
  %c = tosa.conv2d %p, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x5x5x24xf32>, tensor<6x1x1x24xf32>, tensor<6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x5x5x6xf32>
  return %c : tensor<2x5x5x6xf32>
}

func.func @shared(%x: tensor<1x6x6x4xf32>, %w: tensor<5x1x1x4xf32>, %b: tensor<5xf32>) -> (tensor<1x6x6x4xf32>, tensor<1x6x6x5xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.max_pool2d %x {kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %c = tosa.conv2d %p, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x6x6x4xf32>, tensor<5x1x1x4xf32>, tensor<5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x6x6x5xf32>
  return %p, %c : tensor<1x6x6x4xf32>, tensor<1x6x6x5xf32>
}
