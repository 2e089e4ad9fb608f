// Causal attention with grouped heads and a padding mask: one
// flash-attention kernel.
func.func @attention(%q: tensor<1x4x10x64xf32>, %k: tensor<1x2x10x64xf32>, %v: tensor<1x2x10x64xf32>, %m: tensor<1x1x1x10xf32>) -> tensor<1x4x10x64xf32> {
  %0 = tcc.attention %q, %k, %v mask %m : tensor<1x1x1x10xf32> scale = 0.125 causal = true : tensor<1x4x10x64xf32>, tensor<1x2x10x64xf32>, tensor<1x2x10x64xf32> -> tensor<1x4x10x64xf32>
  return %0 : tensor<1x4x10x64xf32>
}
