// Phase 3 (linalg): linalg on tensors; the bias-add and relu are fused
// into one elementwise generic; softmax is expanded (max, sub+exp fused,
// sum, normalize).
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=linalg | FileCheck %s

// CHECK-LABEL: func.func @mlp
// CHECK: %[[MM:.*]] = linalg.batch_matmul
// CHECK: %[[EPI:.*]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<1x4x16xf32>)
// CHECK: arith.addf
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}}"reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK: linalg.generic {{.*}}"reduction"]
// CHECK: arith.addf
// CHECK-NOT: tosa.
// CHECK-NOT: tcc.softmax
