func.func @f(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  // expected-error @+1 {{this message is not the one the verifier emits}}
  %0 = tcc.softmax %x axis = 5 : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}
