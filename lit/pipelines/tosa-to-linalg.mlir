// A TOSA model (an MLP layer with a softmax head) through tcc's composite
// expansion and upstream TOSA -> linalg, mixing tcc and upstream passes in
// one textual pipeline with options.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-decompose-composites{ops=softmax},func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func @mlp_head
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xf32>, %[[W:.*]]: tensor<1x8x16xf32>)
// CHECK: %[[MM:.*]] = linalg.batch_matmul ins(%[[X]], %[[W]] : tensor<1x4x8xf32>, tensor<1x8x16xf32>)
// CHECK: %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<1x4x16xf32>)
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// The softmax: a max reduction, exp, a sum reduction and the division.
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[RELU]] : tensor<1x4x16xf32>) {{.*}} dimensions = [2]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.reduce {{.*}} dimensions = [2]
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK-NOT: tosa.
// CHECK-NOT: tcc.
func.func @mlp_head(%x: tensor<1x4x8xf32>, %w: tensor<1x8x16xf32>) -> tensor<1x4x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %relu = tosa.clamp %mm {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %y = tcc.softmax %relu axis = -1 : tensor<1x4x16xf32>
  return %y : tensor<1x4x16xf32>
}
