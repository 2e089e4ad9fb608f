func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = tosa.exp %x