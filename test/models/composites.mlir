// Every tcc composite op and attribute variant, checked against outputs
// computed independently (numpy in float64 from each op's definition:
// test/models/expected/gen.py, stored in test/models/expected/composites/)
// as well as against the upstream-MLIR reference, whose meaning for these
// ops comes from tcc's own tcc-decompose-composites.
// softmax and log_softmax over the last, first and a middle axis; layer norm
// over the last axis and over the last two (epsilon 1e-5 and 1e-3); gelu
// with erf and with the tanh approximation; silu. Inputs in [-6, 6] (the
// tails of gelu and silu), gamma and beta in [-1, 1].
// Rows of at most 33 terms, exp/log/tanh/erf/rsqrt (a few ulp): outputs are
// O(1) to 6, errors a few 1e-6.
// TOLERANCE: 1e-5 1e-4
// INPUT-RANGE: 0 -6 6
func.func @softmax_last(%x: tensor<4x33xf32>) -> tensor<4x33xf32> {
  %0 = tcc.softmax %x axis = -1 : tensor<4x33xf32>
  return %0 : tensor<4x33xf32>
}

func.func @softmax_first(%x: tensor<5x3x7xf32>) -> tensor<5x3x7xf32> {
  %0 = tcc.softmax %x axis = 0 : tensor<5x3x7xf32>
  return %0 : tensor<5x3x7xf32>
}

func.func @softmax_middle(%x: tensor<3x6x4xf32>) -> tensor<3x6x4xf32> {
  %0 = tcc.softmax %x axis = 1 : tensor<3x6x4xf32>
  return %0 : tensor<3x6x4xf32>
}

func.func @log_softmax_last(%x: tensor<4x33xf32>) -> tensor<4x33xf32> {
  %0 = tcc.log_softmax %x axis = -1 : tensor<4x33xf32>
  return %0 : tensor<4x33xf32>
}

func.func @log_softmax_first(%x: tensor<5x3x7xf32>) -> tensor<5x3x7xf32> {
  %0 = tcc.log_softmax %x axis = 0 : tensor<5x3x7xf32>
  return %0 : tensor<5x3x7xf32>
}

func.func @log_softmax_middle(%x: tensor<3x6x4xf32>) -> tensor<3x6x4xf32> {
  %0 = tcc.log_softmax %x axis = 1 : tensor<3x6x4xf32>
  return %0 : tensor<3x6x4xf32>
}

func.func @layer_norm_last(%x: tensor<3x5x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<3x5x16xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : tensor<3x5x16xf32>, tensor<16xf32>
  return %0 : tensor<3x5x16xf32>
}

func.func @layer_norm_two_axes(%x: tensor<2x4x8xf32>, %g: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-03 : tensor<2x4x8xf32>, tensor<4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

func.func @gelu_erf(%x: tensor<96xf32>) -> tensor<96xf32> {
  %0 = tcc.gelu %x : tensor<96xf32>
  return %0 : tensor<96xf32>
}

func.func @gelu_tanh(%x: tensor<96xf32>) -> tensor<96xf32> {
  %0 = tcc.gelu %x approximate = "tanh" : tensor<96xf32>
  return %0 : tensor<96xf32>
}

func.func @silu(%x: tensor<96xf32>) -> tensor<96xf32> {
  %0 = tcc.silu %x : tensor<96xf32>
  return %0 : tensor<96xf32>
}

// Grouped heads (4 query heads over 2 key/value heads), fewer queries than
// keys, head dimension 40, causal (upper-left aligned), an additive mask.
func.func @attention_grouped(%q: tensor<2x4x7x40xf32>, %k: tensor<2x2x33x40xf32>, %v: tensor<2x2x33x40xf32>, %m: tensor<2x1x7x33xf32>) -> tensor<2x4x7x40xf32> {
  %0 = tcc.attention %q, %k, %v mask %m : tensor<2x1x7x33xf32> scale = 0.158113882 causal = true : tensor<2x4x7x40xf32>, tensor<2x2x33x40xf32>, tensor<2x2x33x40xf32> -> tensor<2x4x7x40xf32>
  return %0 : tensor<2x4x7x40xf32>
}
