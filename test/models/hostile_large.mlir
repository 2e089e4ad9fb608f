// Large-magnitude inputs, uniform in [-1e4, 1e4]: softmax and log_softmax
// (tcc.softmax / tcc.log_softmax, last axis and first axis), a logsumexp in
// primitive ops (max-shifted: reduce_max, sub, exp, reduce_sum, log, add),
// and exp, sigmoid, tanh and silu, which saturate (exp overflows to inf,
// sigmoid reaches exactly 0 and 1). Without the max shift softmax would
// give inf / inf = NaN: the outputs must be finite where the reference's
// are. Softmax rows: one element near 1, the rest underflow to 0;
// log_softmax and logsumexp: values up to 2e4, where one ulp is 2e-3 (the
// relative term covers it); exp/log/tanh/sigmoid: a few ulp.
// INPUT-RANGE: 0 -10000 10000
// TOLERANCE: 1e-6 1e-5
func.func @softmax_large(%x: tensor<4x37xf32>) -> (tensor<4x37xf32>, tensor<4x37xf32>, tensor<4x37xf32>, tensor<4x37xf32>) {
  %sm = tcc.softmax %x axis = -1 : tensor<4x37xf32>
  %lsm = tcc.log_softmax %x axis = -1 : tensor<4x37xf32>
  %sm0 = tcc.softmax %x axis = 0 : tensor<4x37xf32>
  %lsm0 = tcc.log_softmax %x axis = 0 : tensor<4x37xf32>
  return %sm, %lsm, %sm0, %lsm0 : tensor<4x37xf32>, tensor<4x37xf32>, tensor<4x37xf32>, tensor<4x37xf32>
}

func.func @logsumexp_large(%x: tensor<5x64xf32>) -> tensor<5x1xf32> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<5x64xf32>) -> tensor<5x1xf32>
  %d = tosa.sub %x, %m : (tensor<5x64xf32>, tensor<5x1xf32>) -> tensor<5x64xf32>
  %e = tosa.exp %d : (tensor<5x64xf32>) -> tensor<5x64xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<5x64xf32>) -> tensor<5x1xf32>
  %l = tosa.log %s : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %y = tosa.add %l, %m : (tensor<5x1xf32>, tensor<5x1xf32>) -> tensor<5x1xf32>
  return %y : tensor<5x1xf32>
}

func.func @saturating_large(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e = tosa.exp %x : (tensor<64xf32>) -> tensor<64xf32>
  %s = tosa.sigmoid %x : (tensor<64xf32>) -> tensor<64xf32>
  %t = tosa.tanh %x : (tensor<64xf32>) -> tensor<64xf32>
  %u = tcc.silu %x : tensor<64xf32>
  return %e, %s, %t, %u : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
