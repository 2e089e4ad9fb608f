// An NCHW model input transposed to NHWC for its convolutions (what ONNX
// models look like after import): the transpose is folded into the
// convolutions' loads (tcc-fold-conv-inputs), directly and through a
// zero pad. @direct: 1x3x12x10 NCHW, 3x3 valid conv to 8 channels + bias +
// relu. @padded: 2x5x7x9 NCHW, a padded 3x3 conv, stride 2, to 6 channels.
// Sums of 27 and 45 products of values in [-1, 1] x [-0.3, 0.3].
// TOLERANCE: 1e-5 1e-5
func.func @direct(%x: tensor<1x3x12x10xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x10x8x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %t = tosa.transpose %x {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x12x10xf32>) -> tensor<1x12x10x3xf32>
  %c = tosa.conv2d %t, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x12x10x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x10x8x8xf32>
  %y = tosa.clamp %c {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x10x8x8xf32>) -> tensor<1x10x8x8xf32>
  return %y : tensor<1x10x8x8xf32>
}

func.func @padded(%x: tensor<2x5x7x9xf32>, %w: tensor<6x3x3x5xf32>, %b: tensor<6xf32>) -> tensor<2x4x5x6xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %t = tosa.transpose %x {perms = array<i32: 0, 2, 3, 1>} : (tensor<2x5x7x9xf32>) -> tensor<2x7x9x5xf32>
  %c = tosa.conv2d %t, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x7x9x5xf32>, tensor<6x3x3x5xf32>, tensor<6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x5x6xf32>
  return %c : tensor<2x4x5x6xf32>
}
