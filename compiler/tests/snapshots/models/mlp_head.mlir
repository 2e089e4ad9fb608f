// A small MLP layer with a softmax head, used by the phase tests.
func.func @mlp(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<1x8x16xf32>}> : () -> tensor<1x8x16xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<1x1x16xf32>}> : () -> tensor<1x1x16xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %perm1 = tosa.transpose %x {perms = array<i32: 0, 2, 1>} : (tensor<1x4x8xf32>) -> tensor<1x8x4xf32>
  %perm2 = tosa.transpose %perm1 {perms = array<i32: 0, 2, 1>} : (tensor<1x8x4xf32>) -> tensor<1x4x8xf32>
  %mm = tosa.matmul %perm2, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %add = tosa.add %mm, %b : (tensor<1x4x16xf32>, tensor<1x1x16xf32>) -> tensor<1x4x16xf32>
  %relu = tosa.clamp %add {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %dead = tosa.exp %relu : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %y = tcc.softmax %relu axis = -1 : tensor<1x4x16xf32>
  return %y : tensor<1x4x16xf32>
}
