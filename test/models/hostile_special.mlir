// Hostile values through exact f32 ops, compared bit for bit with the
// upstream-MLIR reference (its semantics: arith.maximumf/minimumf propagate
// NaN and order -0 below +0; reductions start from +0, -inf, +inf): NaN,
// +-inf, -0, +-denormals (1e-40, the smallest 1.4e-45), FLT_MIN, +-FLT_MAX
// as constants brought to run time by a multiply with an input of ones
// (so nothing folds at compile time), pairwise through add, sub, mul,
// maximum, minimum, with an input x in [-1, 1] through maximum/minimum,
// abs, negate, clamp, greater/equal/select; and row
// reductions (sum, max, min) of denormals, -0, inf, inf + -inf, NaN and
// FLT_MAX + FLT_MAX. Every result is exactly rounded: exact.
// INPUT-RANGE: 0 1 1
// TOLERANCE: 0 0
func.func @pairwise(%ones: tensor<4x16xf32>, %x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xi1>, tensor<4x16xi1>, tensor<4x16xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %cs = "tosa.const"() <{values = dense<[[0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0], [0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000], [0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2], [0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF]]> : tensor<4x16xf32>}> : () -> tensor<4x16xf32>
  %ct = "tosa.const"() <{values = dense<[[0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000], [0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2], [-1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0], [0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0]]> : tensor<4x16xf32>}> : () -> tensor<4x16xf32>
  %s = tosa.mul %ones, %cs, %shift : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi8>) -> tensor<4x16xf32>
  %t = tosa.mul %ones, %ct, %shift : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi8>) -> tensor<4x16xf32>
  %add = tosa.add %s, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %sub = tosa.sub %s, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %mul = tosa.mul %s, %t, %shift : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi8>) -> tensor<4x16xf32>
  %max = tosa.maximum %s, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %min = tosa.minimum %s, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %maxx = tosa.maximum %s, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %minx = tosa.minimum %x, %s : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %gt = tosa.greater %s, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xi1>
  %eq = tosa.equal %s, %s : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xi1>
  %sel = tosa.select %gt, %s, %t : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %add, %sub, %mul, %max, %min, %maxx, %minx, %gt, %eq, %sel : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xi1>, tensor<4x16xi1>, tensor<4x16xf32>
}

func.func @unary(%ones: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %cs = "tosa.const"() <{values = dense<[[0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0], [0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000], [0x800116C2, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2], [0xFF7FFFFF, 1.0, -1.0, 2.5, -0.5, 0x00000001, 3.0, 0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x00800000, 0x7F7FFFFF]]> : tensor<4x16xf32>}> : () -> tensor<4x16xf32>
  %s = tosa.mul %ones, %cs, %shift : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi8>) -> tensor<4x16xf32>
  %abs = tosa.abs %s : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %neg = tosa.negate %s, %zp, %zp : (tensor<4x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x16xf32>
  %clamp = tosa.clamp %s {min_val = -1.0 : f32, max_val = 1.0 : f32} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %abs, %neg, %clamp : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

func.func @reductions(%ones: tensor<6x16xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %cr = "tosa.const"() <{values = dense<[[0x000116C2, 0x000116C2, 0x000116C2, 0x000116C2, 0x000116C2, 0x000116C2, 0x000116C2, 0x000116C2, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000], [0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000, 0x80000000], [0x7F800000, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0x7F800000, 0xFF800000, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0x7FC00000, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0x7F7FFFFF, 0x7F7FFFFF, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<6x16xf32>}> : () -> tensor<6x16xf32>
  %r = tosa.mul %ones, %cr, %shift : (tensor<6x16xf32>, tensor<6x16xf32>, tensor<1xi8>) -> tensor<6x16xf32>
  %sum = tosa.reduce_sum %r {axis = 1 : i32} : (tensor<6x16xf32>) -> tensor<6x1xf32>
  %max = tosa.reduce_max %r {axis = 1 : i32} : (tensor<6x16xf32>) -> tensor<6x1xf32>
  %min = tosa.reduce_min %r {axis = 1 : i32} : (tensor<6x16xf32>) -> tensor<6x1xf32>
  return %sum, %max, %min : tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>
}
