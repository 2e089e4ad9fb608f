// A broadcasting elementwise chain and a reduction over the middle axis.
func.func @chain(%x: tensor<2x3x8xf32>, %y: tensor<1x1x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x1x8xf32>) {
  %0 = tosa.sub %x, %y : (tensor<2x3x8xf32>, tensor<1x1x8xf32>) -> tensor<2x3x8xf32>
  %1 = tosa.exp %0 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %2 = tosa.tanh %1 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<2x3x8xf32>) -> tensor<2x1x8xf32>
  return %2, %3 : tensor<2x3x8xf32>, tensor<2x1x8xf32>
}
