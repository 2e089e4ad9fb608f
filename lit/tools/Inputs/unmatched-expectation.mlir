func.func @f(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  // expected-warning @below {{never emitted}}
  %0 = tcc.softmax %x axis = 1 : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}
