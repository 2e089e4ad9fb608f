// Hostile values through transcendental ops, compared with the
// upstream-MLIR reference: NaN, +-inf, -0, +0, +-denormals (1e-40),
// +-FLT_MAX, +-100 and 89 (exp overflows past 88.7) brought to run time by
// a multiply with an input of ones, through exp, log, tanh, sigmoid, erf,
// rsqrt and reciprocal: NaN must stay NaN, infinities must be the same
// infinity (log(0) = -inf, rsqrt(-0) = -inf, reciprocal(denormal) = inf,
// exp(89) = inf, ...), finite values within a few ulp.
// INPUT-RANGE: 0 1 1
// TOLERANCE: 1e-6 1e-5
func.func @transcendental(%ones: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.const"() <{values = dense<[0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0.0, 0x000116C2, 0x800116C2, 0x7F7FFFFF, 0xFF7FFFFF, 1.0, -1.0, 100.0, -100.0, -0.5, 0.5, 89.0]> : tensor<16xf32>}> : () -> tensor<16xf32>
  %s = tosa.mul %ones, %c, %shift : (tensor<16xf32>, tensor<16xf32>, tensor<1xi8>) -> tensor<16xf32>
  %exp = tosa.exp %s : (tensor<16xf32>) -> tensor<16xf32>
  %log = tosa.log %s : (tensor<16xf32>) -> tensor<16xf32>
  %tanh = tosa.tanh %s : (tensor<16xf32>) -> tensor<16xf32>
  %sigmoid = tosa.sigmoid %s : (tensor<16xf32>) -> tensor<16xf32>
  %erf = tosa.erf %s : (tensor<16xf32>) -> tensor<16xf32>
  %rsqrt = tosa.rsqrt %s : (tensor<16xf32>) -> tensor<16xf32>
  %reciprocal = tosa.reciprocal %s : (tensor<16xf32>) -> tensor<16xf32>
  return %exp, %log, %tanh, %sigmoid, %erf, %rsqrt, %reciprocal : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
