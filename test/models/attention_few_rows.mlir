// attention_few_rows: flash attentions of a few query rows (decode steps),
// which the nvidia target runs in the key-parallel form (key_lanes
// work-items per row, each over every key_lanes-th key, merged in the
// work-group) and the other targets in their usual bodies: one row over
// 300 keys with an additive padding mask (64 lanes, 4-5 keys each); three
// causal rows over grouped heads (4 query heads, 2 key/value heads; row i
// sees keys 0..i, most lanes none); two rows of head dimension 128 (16
// lanes). Inputs in [-1, 1].
// Softmax over up to 300 scores and sums of as many products below 1: the
// lanes' merge adds in another order than the reference, a few ulp.
// TOLERANCE: 1e-5 1e-4
module {
func.func @one_row_masked(%q: tensor<2x4x1x64xf32>, %k: tensor<2x4x300x64xf32>, %v: tensor<2x4x300x64xf32>, %m: tensor<2x1x1x300xf32>) -> tensor<2x4x1x64xf32> {
  %o = tcc.attention %q, %k, %v mask %m : tensor<2x1x1x300xf32> scale = 0.125 : tensor<2x4x1x64xf32>, tensor<2x4x300x64xf32>, tensor<2x4x300x64xf32> -> tensor<2x4x1x64xf32>
  return %o : tensor<2x4x1x64xf32>
}

func.func @causal_grouped_rows(%q: tensor<1x4x3x32xf32>, %k: tensor<1x2x37x32xf32>, %v: tensor<1x2x37x32xf32>) -> tensor<1x4x3x32xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.25 causal = true : tensor<1x4x3x32xf32>, tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32> -> tensor<1x4x3x32xf32>
  return %o : tensor<1x4x3x32xf32>
}

func.func @wide_heads(%q: tensor<1x2x2x128xf32>, %k: tensor<1x2x50x128xf32>, %v: tensor<1x2x50x128xf32>) -> tensor<1x2x2x128xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.0884 : tensor<1x2x2x128xf32>, tensor<1x2x50x128xf32>, tensor<1x2x50x128xf32> -> tensor<1x2x2x128xf32>
  return %o : tensor<1x2x2x128xf32>
}
}
