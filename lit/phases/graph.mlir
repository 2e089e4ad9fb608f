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
