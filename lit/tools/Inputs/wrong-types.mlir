func.func @f(%x: tensor<2xf32>) -> tensor<2xi32> {
  return %x : tensor<2xf32>
}
