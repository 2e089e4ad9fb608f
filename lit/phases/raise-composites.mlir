// A softmax written in primitive TOSA ops is raised to tcc.softmax in the
// graph phase and compiles to the one-kernel row template, like the
// composite itself.
// RUN: tcc compile %s --compile-to=graph | FileCheck %s --check-prefix=GRAPH
// RUN: tcc compile %s --stats -o %t.so 2>&1 | FileCheck %s --check-prefix=STATS

// GRAPH-LABEL: func.func @softmax
// GRAPH-SAME: (%[[X:.*]]: tensor<8x100xf32>)
// GRAPH: %[[Y:.*]] = tcc.softmax %[[X]] axis = 1
// GRAPH-NOT: tosa.
// GRAPH: return %[[Y]]

// STATS: kernels: 1
// STATS-NEXT: softmax_0 kind=softmax
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
