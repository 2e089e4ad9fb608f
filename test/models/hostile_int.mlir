// Integer overflow edges, compared bit for bit with the upstream-MLIR
// reference (TOSA's i32 add, sub and mul wrap; abs and negate of INT_MIN;
// reductions that overflow; casts of INT_MAX to f32 and of out-of-range,
// NaN, infinite and halfway floats to i32, rounded and saturated as the
// reference does). INT_MAX, INT_MIN, +-46341 (whose square overflows),
// 65536 and others come to run time by a multiply with an input of ones.
// INPUT-RANGE: 0 1 1
// INPUT-RANGE: 1 1 1
// TOLERANCE: 0 0
func.func @int_edges(%ones: tensor<4x16xi32>, %fones: tensor<16xf32>) -> (tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x1xi32>, tensor<4x1xi32>, tensor<4x16xf32>, tensor<16xi32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %cs = "tosa.const"() <{values = dense<[[2147483647, -2147483648, -1, 0, 1, 2147483646, -2147483647, 65536, 46341, -46341, 2, 7, 123456789, -2, 3, 1], [0, 1, 2147483646, -2147483647, 65536, 46341, -46341, 2, 7, 123456789, -2, 3, 1, 2147483647, -2147483648, -1], [-2147483647, 65536, 46341, -46341, 2, 7, 123456789, -2, 3, 1, 2147483647, -2147483648, -1, 0, 1, 2147483646], [-46341, 2, 7, 123456789, -2, 3, 1, 2147483647, -2147483648, -1, 0, 1, 2147483646, -2147483647, 65536, 46341]]> : tensor<4x16xi32>}> : () -> tensor<4x16xi32>
  %ct = "tosa.const"() <{values = dense<[[-2147483648, -1, 0, 1, 2147483646, -2147483647, 65536, 46341, -46341, 2, 7, 123456789, -2, 3, 1, 2147483647], [-2147483647, 65536, 46341, -46341, 2, 7, 123456789, -2, 3, 1, 2147483647, -2147483648, -1, 0, 1, 2147483646], [7, 123456789, -2, 3, 1, 2147483647, -2147483648, -1, 0, 1, 2147483646, -2147483647, 65536, 46341, -46341, 2], [2147483647, -2147483648, -1, 0, 1, 2147483646, -2147483647, 65536, 46341, -46341, 2, 7, 123456789, -2, 3, 1]]> : tensor<4x16xi32>}> : () -> tensor<4x16xi32>
  %s = tosa.mul %ones, %cs, %shift : (tensor<4x16xi32>, tensor<4x16xi32>, tensor<1xi8>) -> tensor<4x16xi32>
  %t = tosa.mul %ones, %ct, %shift : (tensor<4x16xi32>, tensor<4x16xi32>, tensor<1xi8>) -> tensor<4x16xi32>
  %add = tosa.add %s, %t : (tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
  %sub = tosa.sub %s, %t : (tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
  %mul = tosa.mul %s, %t, %shift : (tensor<4x16xi32>, tensor<4x16xi32>, tensor<1xi8>) -> tensor<4x16xi32>
  %abs = tosa.abs %s : (tensor<4x16xi32>) -> tensor<4x16xi32>
  %zp = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
  %neg = tosa.negate %s, %zp, %zp : (tensor<4x16xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<4x16xi32>
  %max = tosa.maximum %s, %t : (tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
  %min = tosa.minimum %s, %t : (tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
  %rsum = tosa.reduce_sum %s {axis = 1 : i32} : (tensor<4x16xi32>) -> tensor<4x1xi32>
  %rprod = tosa.reduce_product %t {axis = 1 : i32} : (tensor<4x16xi32>) -> tensor<4x1xi32>
  %f = tosa.cast %s : (tensor<4x16xi32>) -> tensor<4x16xf32>
  %cf = "tosa.const"() <{values = dense<[3.0e+09, -3.0e+09, 2.14748352e+09, -2.14748365e+09, 0x7FC00000, 0x7F800000, 0xFF800000, 0.5, -0.5, 1.5, 2.5, -2.5, 0x80000000, 1.0e-40, 16777217.0, -1.0e+20]> : tensor<16xf32>}> : () -> tensor<16xf32>
  %g = tosa.mul %fones, %cf, %shift : (tensor<16xf32>, tensor<16xf32>, tensor<1xi8>) -> tensor<16xf32>
  %i = tosa.cast %g : (tensor<16xf32>) -> tensor<16xi32>
  return %add, %sub, %mul, %abs, %neg, %max, %min, %rsum, %rprod, %f, %i : tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x16xi32>, tensor<4x1xi32>, tensor<4x1xi32>, tensor<4x16xf32>, tensor<16xi32>
}
