// A softmax and a layer norm written in primitive TOSA ops are raised to
// tcc.softmax / tcc.layer_norm in the graph phase and compile to the
// one-kernel row templates, like the composites themselves: two kernels in
// all, one per function.
// RUN: tcc compile %s --compile-to=graph | FileCheck %s --check-prefix=GRAPH
// RUN: tcc compile %s --stats -o %t.so 2>&1 | FileCheck %s --check-prefix=STATS

// STATS: kernels: 2
// STATS-DAG: softmax_{{[0-9]+}} kind=softmax
// STATS-DAG: layer_norm_{{[0-9]+}} kind=layer_norm

// GRAPH-LABEL: func.func @layer_norm
// GRAPH-SAME: (%[[X:.*]]: tensor<6x96xf32>, %[[G:.*]]: tensor<96xf32>)
// GRAPH: %[[Y:.*]] = tcc.layer_norm %[[X]], %[[G]], %{{.*}} axis = 1 epsilon = 9.99999974E-6 : tensor<6x96xf32>, tensor<96xf32>
// GRAPH-NOT: tosa.r
// GRAPH: return %[[Y]]
func.func @layer_norm(%x: tensor<6x96xf32>, %g: tensor<96xf32>) -> tensor<6x96xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<0.010416667> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %shape = tosa.const_shape {values = dense<[1, 96]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %g2 = tosa.reshape %g, %shape : (tensor<96xf32>, !tosa.shape<2>) -> tensor<1x96xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<6x96xf32>) -> tensor<6x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<6x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %d = tosa.sub %x, %mean : (tensor<6x96xf32>, tensor<6x1xf32>) -> tensor<6x96xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<6x96xf32>, tensor<6x96xf32>, tensor<1xi8>) -> tensor<6x96xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<6x96xf32>) -> tensor<6x1xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<6x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %ve = tosa.add %var, %eps : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %norm = tosa.mul %d, %rs, %shift : (tensor<6x96xf32>, tensor<6x1xf32>, tensor<1xi8>) -> tensor<6x96xf32>
  %y = tosa.mul %norm, %g2, %shift : (tensor<6x96xf32>, tensor<1x96xf32>, tensor<1xi8>) -> tensor<6x96xf32>
  return %y : tensor<6x96xf32>
}

// GRAPH-LABEL: func.func @softmax
// GRAPH-SAME: (%[[X:.*]]: tensor<8x100xf32>)
// GRAPH: %[[Y:.*]] = tcc.softmax %[[X]] axis = 1
// GRAPH-NOT: tosa.
// GRAPH: return %[[Y]]
func.func @softmax(%x: tensor<8x100xf32>) -> tensor<8x100xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<8x100xf32>) -> tensor<8x1xf32>
  %d = tosa.sub %x, %m : (tensor<8x100xf32>, tensor<8x1xf32>) -> tensor<8x100xf32>
  %e = tosa.exp %d : (tensor<8x100xf32>) -> tensor<8x100xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<8x100xf32>) -> tensor<8x1xf32>
  %r = tosa.reciprocal %s : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %y = tosa.mul %e, %r, %shift : (tensor<8x100xf32>, tensor<8x1xf32>, tensor<1xi8>) -> tensor<8x100xf32>
  return %y : tensor<8x100xf32>
}
