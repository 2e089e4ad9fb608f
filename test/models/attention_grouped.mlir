// tcc.attention written directly (its meaning is tcc-decompose-composites'
// expansion, which the reference runs): grouped heads (4 query heads over
// 2 key/value heads), fewer queries than keys (Sq=7, Skv=33), a head
// dimension of 40 (the template's generic path), causal (upper-left
// aligned) with an additive mask from an input; and a second attention
// whose constant mask puts -inf on every key of query row 2, which gives
// NaN there as the unfused softmax's exp(-inf - -inf) does (NaN matches only
// NaN), with finite rows beside it.
// TOLERANCE: 1e-5 1e-4
func.func @grouped(%q: tensor<2x4x7x40xf32>, %k: tensor<2x2x33x40xf32>, %v: tensor<2x2x33x40xf32>, %m: tensor<2x1x7x33xf32>) -> tensor<2x4x7x40xf32> {
  %0 = tcc.attention %q, %k, %v mask %m : tensor<2x1x7x33xf32> scale = 0.158113882 causal = true : tensor<2x4x7x40xf32>, tensor<2x2x33x40xf32>, tensor<2x2x33x40xf32> -> tensor<2x4x7x40xf32>
  return %0 : tensor<2x4x7x40xf32>
}

func.func @masked_row(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x5x16xf32>) -> tensor<1x2x4x16xf32> {
  %m = "tosa.const"() <{values = dense<[[[[0.0, 0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0xFF800000, 0.0, 0xFF800000, 0.0, 0.5]]]]> : tensor<1x1x4x5xf32>}> : () -> tensor<1x1x4x5xf32>
  %0 = tcc.attention %q, %k, %v mask %m : tensor<1x1x4x5xf32> scale = 0.25 : tensor<1x2x4x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32> -> tensor<1x2x4x16xf32>
  return %0 : tensor<1x2x4x16xf32>
}
