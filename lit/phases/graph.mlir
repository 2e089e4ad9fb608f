// Phase 2 (graph): the transpose pair cancels, the dead exp disappears,
// the composite stays whole.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=graph | FileCheck %s

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xf32>)
// CHECK-NOT: tosa.transpose
// CHECK: %[[MM:.*]] = tosa.matmul %[[X]],
// CHECK: %[[ADD:.*]] = tosa.add %[[MM]],
// CHECK: %[[RELU:.*]] = tosa.clamp %[[ADD]]
// CHECK-NOT: tosa.exp
// CHECK: %[[Y:.*]] = tcc.softmax %[[RELU]] axis = -1
// CHECK: return %[[Y]]

// RUN: tcc compile %s --compile-to=graph | FileCheck %s --check-prefix=CHAINS
// A reshape chain collapses to one reshape; a constant-only subgraph folds.
// CHAINS-LABEL: func.func @chains
// CHAINS-SAME: (%[[X:.*]]: tensor<2x12xf32>)
// CHAINS-DAG: %[[FIVE:.*]] = "tosa.const"() <{values = dense<5.000000e+00> : tensor<4x6xf32>}>
// CHAINS-DAG: %[[SHAPE:.*]] = tosa.const_shape {values = dense<[4, 6]> : tensor<2xindex>}
// CHAINS: %[[R:.*]] = tosa.reshape %[[X]], %[[SHAPE]] : (tensor<2x12xf32>, !tosa.shape<2>) -> tensor<4x6xf32>
// CHAINS-NOT: tosa.reshape
// CHAINS-NOT: tosa.add
// CHAINS: tosa.mul %[[R]], %[[FIVE]]
func.func @chains(%x: tensor<2x12xf32>) -> tensor<4x6xf32> {
  %s1 = tosa.const_shape {values = dense<[24]> : tensor<1xindex>} : () -> !tosa.shape<1>
  %r1 = tosa.reshape %x, %s1 : (tensor<2x12xf32>, !tosa.shape<1>) -> tensor<24xf32>
  %s2 = tosa.const_shape {values = dense<[3, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %r2 = tosa.reshape %r1, %s2 : (tensor<24xf32>, !tosa.shape<2>) -> tensor<3x8xf32>
  %s3 = tosa.const_shape {values = dense<[4, 6]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %r3 = tosa.reshape %r2, %s3 : (tensor<3x8xf32>, !tosa.shape<2>) -> tensor<4x6xf32>
  %a = "tosa.const"() <{values = dense<2.0> : tensor<4x6xf32>}> : () -> tensor<4x6xf32>
  %b = "tosa.const"() <{values = dense<3.0> : tensor<4x6xf32>}> : () -> tensor<4x6xf32>
  %c = tosa.add %a, %b : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %r3, %c, %shift : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<1xi8>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
