// half_types: f16 and bf16 tensors. The half inputs are cast to f32,
// computed on (mul, exp, add, tanh) and cast back, which is how tcc
// computes half graphs (f32 registers; 16-bit loads, and stores that round
// to nearest even), and what the reference computes too (fpext, f32 math,
// fptrunc); a transpose moves f16 elements unchanged (exact). Inputs in
// [-1, 1].
// TOLERANCE: 0 0.0078125
// TOLERANCE-EXCEPTION: an f32 exp or tanh result a few f32 ulp from the
// reference's (OpenCL allows them) can round to the neighbouring half: one
// ulp of the output type apart, 2^-10 relative for f16 and 2^-7 for bf16.
func.func @half_types(%x: tensor<4x16xf16>, %y: tensor<4x16xbf16>) -> (tensor<4x16xf16>, tensor<16x4xf16>, tensor<4x16xbf16>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %three = "tosa.const"() <{values = dense<3.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %xf = tosa.cast %x : (tensor<4x16xf16>) -> tensor<4x16xf32>
  %m = tosa.mul %xf, %three, %shift : (tensor<4x16xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x16xf32>
  %e = tosa.exp %xf : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = tosa.add %m, %e : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = tosa.cast %s : (tensor<4x16xf32>) -> tensor<4x16xf16>
  %t = tosa.transpose %x {perms = array<i32: 1, 0>} : (tensor<4x16xf16>) -> tensor<16x4xf16>
  %yf = tosa.cast %y : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %th = tosa.tanh %yf : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = tosa.cast %th : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  return %h, %t, %b : tensor<4x16xf16>, tensor<16x4xf16>, tensor<4x16xbf16>
}
