// Phase 3 (linalg): linalg on tensors; the bias-add and relu are fused
// into one elementwise generic; the last-axis softmax becomes linalg.softmax
// (one row kernel later), a softmax over another axis is expanded.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=linalg | FileCheck %s

// CHECK-LABEL: func.func @mlp
// CHECK: %[[MM:.*]] = linalg.batch_matmul
// CHECK: %[[EPI:.*]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<1x4x16xf32>)
// CHECK: arith.addf
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: linalg.softmax dimension(2) ins(%[[EPI]] : tensor<1x4x16xf32>) outs(%{{.*}} : tensor<1x4x16xf32>)
// CHECK-NOT: tosa.
// CHECK-NOT: tcc.softmax

// RUN: tcc compile %s --compile-to=linalg | FileCheck %s --check-prefix=AXIS0
// AXIS0-LABEL: func.func @first_axis
// AXIS0: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel"]
// AXIS0: arith.maximumf
// AXIS0: math.exp
// AXIS0-NOT: linalg.softmax
func.func @first_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.softmax %x axis = 0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
