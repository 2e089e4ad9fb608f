// attention_half_cache: a flash attention whose key and value are 16-bit
// inputs (a half graph's key/value cache: f16 here, bf16 in the second
// function) widened to the f32 the graph computes in. tcc's attention
// kernel reads them as they are stored (tcc-fold-attention-casts: no
// widening copy kernels); the reference widens them first. Two query rows
// (a decode step of two tokens) over 40 cached positions, 4 heads of 64,
// with an additive mask in the second function. Inputs in [-1, 1].
// Softmax over 40 scores and sums of 40 products below 1: the kernel's
// online softmax and fused exp differ from the reference's by a few ulp.
// TOLERANCE: 1e-5 1e-4
module {
func.func @half_cache(%q: tensor<1x4x2x64xf32>, %k: tensor<1x4x40x64xf16>, %v: tensor<1x4x40x64xf16>) -> tensor<1x4x2x64xf32> {
  %k32 = tosa.cast %k : (tensor<1x4x40x64xf16>) -> tensor<1x4x40x64xf32>
  %v32 = tosa.cast %v : (tensor<1x4x40x64xf16>) -> tensor<1x4x40x64xf32>
  %o = tcc.attention %q, %k32, %v32 scale = 0.125 : tensor<1x4x2x64xf32>, tensor<1x4x40x64xf32>, tensor<1x4x40x64xf32> -> tensor<1x4x2x64xf32>
  return %o : tensor<1x4x2x64xf32>
}

func.func @bf16_cache_masked(%q: tensor<2x4x1x64xf32>, %k: tensor<2x4x40x64xbf16>, %v: tensor<2x4x40x64xbf16>, %m: tensor<2x1x1x40xf32>) -> tensor<2x4x1x64xf32> {
  %k32 = tosa.cast %k : (tensor<2x4x40x64xbf16>) -> tensor<2x4x40x64xf32>
  %v32 = tosa.cast %v : (tensor<2x4x40x64xbf16>) -> tensor<2x4x40x64xf32>
  %o = tcc.attention %q, %k32, %v32 mask %m : tensor<2x1x1x40xf32> scale = 0.125 : tensor<2x4x1x64xf32>, tensor<2x4x40x64xf32>, tensor<2x4x40x64xf32> -> tensor<2x4x1x64xf32>
  return %o : tensor<2x4x1x64xf32>
}
}
