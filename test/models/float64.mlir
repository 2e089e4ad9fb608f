// float64: f64 computes in double (OpenCL C with cl_khr_fp64, which PoCL's
// CPU device has): a square, an exp (OpenCL allows a few ulp of double),
// an add, a sum over the last axis (16 terms of magnitude below 4), and a
// cast to f32. Inputs in [-1, 1].
// TOLERANCE: 1e-12 1e-12
func.func @float64(%z: tensor<4x16xf64>) -> (tensor<4x16xf64>, tensor<4x1xf64>, tensor<4x16xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %z, %z, %shift : (tensor<4x16xf64>, tensor<4x16xf64>, tensor<1xi8>) -> tensor<4x16xf64>
  %ez = tosa.exp %z : (tensor<4x16xf64>) -> tensor<4x16xf64>
  %d = tosa.add %sq, %ez : (tensor<4x16xf64>, tensor<4x16xf64>) -> tensor<4x16xf64>
  %r = tosa.reduce_sum %d {axis = 1 : i32} : (tensor<4x16xf64>) -> tensor<4x1xf64>
  %c = tosa.cast %d : (tensor<4x16xf64>) -> tensor<4x16xf32>
  return %d, %r, %c : tensor<4x16xf64>, tensor<4x1xf64>, tensor<4x16xf32>
}
