// Elementwise consumers of a reduction run in the reduction's kernel, on
// the total where it is stored. @row_mean: a mean over the last axis of
// 8x512 (a row reduction: one work-group per row), then scale and shift.
// @spatial_mean: a global average pool of 2x7x7x96 (sum over H and W,
// channels innermost: one work-item per output), then a divide and a relu.
// @norm: the L2 norm of each of 16 rows of 300 (sum of squares, sqrt).
// Sums of 512, 49 and 300 terms in [-1, 1]: a different summation order
// changes them by about sqrt(n) * eps * |partial sums| (< 2e-5 after the
// scaling).
// TOLERANCE: 1e-5 2e-5
func.func @row_mean(%x: tensor<8x512xf32>) -> tensor<8x1xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %inv = "tosa.const"() <{values = dense<1.953125e-03> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %bias = "tosa.const"() <{values = dense<0.25> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<8x512xf32>) -> tensor<8x1xf32>
  %m = tosa.mul %s, %inv, %shift : (tensor<8x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<8x1xf32>
  %y = tosa.add %m, %bias : (tensor<8x1xf32>, tensor<1x1xf32>) -> tensor<8x1xf32>
  return %y : tensor<8x1xf32>
}

func.func @spatial_mean(%x: tensor<2x7x7x96xf32>) -> tensor<2x1x1x96xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %inv = "tosa.const"() <{values = dense<0.0204081628> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %h = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<2x7x7x96xf32>) -> tensor<2x1x7x96xf32>
  %w = tosa.reduce_sum %h {axis = 2 : i32} : (tensor<2x1x7x96xf32>) -> tensor<2x1x1x96xf32>
  %m = tosa.mul %w, %inv, %shift : (tensor<2x1x1x96xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x1x1x96xf32>
  %y = tosa.clamp %m {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<2x1x1x96xf32>) -> tensor<2x1x1x96xf32>
  return %y : tensor<2x1x1x96xf32>
}

func.func @norm(%x: tensor<16x300xf32>) -> tensor<16x1xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<16x300xf32>, tensor<16x300xf32>, tensor<1xi8>) -> tensor<16x300xf32>
  %s = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<16x300xf32>) -> tensor<16x1xf32>
  %r = tosa.rsqrt %s : (tensor<16x1xf32>) -> tensor<16x1xf32>
  %y = tosa.reciprocal %r : (tensor<16x1xf32>) -> tensor<16x1xf32>
  return %y : tensor<16x1xf32>
}
