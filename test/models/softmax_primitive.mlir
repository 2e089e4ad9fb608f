// Softmax written in primitive TOSA ops, as other producers emit it
// (TOSA has no float division): exp(x - reduce_max(x)) *
// reciprocal(reduce_sum(...)) over the last axis of 4x333, the same
// without the max shift (reciprocal first) over the last axis of 3x5x7,
// and over the first axis of 3x5x7. tcc-raise-composites makes each a
// tcc.softmax (the last-axis ones one row kernel each). The fourth is a
// near miss that stays primitive ops (unshifted, last axis of 4x333):
// its row sums are a result too.
// Transcendental (exp; a few ulp in OpenCL), sums of up to 333 terms below 1
// relative to their total.
// TOLERANCE: 2e-6 1e-5
func.func @softmax_primitive(%x: tensor<4x333xf32>, %w: tensor<3x5x7xf32>) -> (tensor<4x333xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<4x333xf32>, tensor<4x1xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4x333xf32>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %m : (tensor<4x333xf32>, tensor<4x1xf32>) -> tensor<4x333xf32>
  %e = tosa.exp %d : (tensor<4x333xf32>) -> tensor<4x333xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<4x333xf32>) -> tensor<4x1xf32>
  %r = tosa.reciprocal %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y1 = tosa.mul %e, %r, %shift : (tensor<4x333xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x333xf32>

  %ue = tosa.exp %w : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %us = tosa.reduce_sum %ue {axis = 2 : i32} : (tensor<3x5x7xf32>) -> tensor<3x5x1xf32>
  %ur = tosa.reciprocal %us : (tensor<3x5x1xf32>) -> tensor<3x5x1xf32>
  %y2 = tosa.mul %ur, %ue, %shift : (tensor<3x5x1xf32>, tensor<3x5x7xf32>, tensor<1xi8>) -> tensor<3x5x7xf32>

  %fm = tosa.reduce_max %w {axis = 0 : i32} : (tensor<3x5x7xf32>) -> tensor<1x5x7xf32>
  %fd = tosa.sub %w, %fm : (tensor<3x5x7xf32>, tensor<1x5x7xf32>) -> tensor<3x5x7xf32>
  %fe = tosa.exp %fd : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %fs = tosa.reduce_sum %fe {axis = 0 : i32} : (tensor<3x5x7xf32>) -> tensor<1x5x7xf32>
  %fr = tosa.reciprocal %fs : (tensor<1x5x7xf32>) -> tensor<1x5x7xf32>
  %y3 = tosa.mul %fe, %fr, %shift : (tensor<3x5x7xf32>, tensor<1x5x7xf32>, tensor<1xi8>) -> tensor<3x5x7xf32>

  %ne = tosa.exp %x : (tensor<4x333xf32>) -> tensor<4x333xf32>
  %ns = tosa.reduce_sum %ne {axis = 1 : i32} : (tensor<4x333xf32>) -> tensor<4x1xf32>
  %nr = tosa.reciprocal %ns : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y4 = tosa.mul %ne, %nr, %shift : (tensor<4x333xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x333xf32>
  return %y1, %y2, %y3, %y4, %ns : tensor<4x333xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<4x333xf32>, tensor<4x1xf32>
}
