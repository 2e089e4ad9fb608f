// tcc-inline-dispatches takes the ops of every tcc.dispatch out into the
// function body where the kernel was, in order, the yielded values
// standing for the kernel's results (tensor form), or just the ops
// (memref form), so that upstream pipelines can take tcc's IR over.
// RUN: tcc-opt %s --split-input-file --tcc-inline-dispatches | FileCheck %s

// CHECK-LABEL: func.func @tensor_form
// CHECK-NOT: tcc.dispatch
// CHECK: %[[N:.*]] = linalg.negf
// CHECK-NEXT: %[[M:.*]] = linalg.exp ins(%[[N]]
// CHECK-NEXT: return %[[N]], %[[M]]
func.func @tensor_form(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %k:2 = tcc.dispatch "neg_exp_0" -> tensor<4xf32>, tensor<4xf32> {
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %m = linalg.exp ins(%n : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %n, %m : tensor<4xf32>, tensor<4xf32>
  }
  return %k#0, %k#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @memref_form
// CHECK-NOT: tcc.dispatch
// CHECK: linalg.negf {tcc.kind = "elementwise"} ins(%{{.*}} : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// CHECK-NEXT: return
func.func @memref_form(%x: memref<4xf32>, %y: memref<4xf32>) {
  tcc.dispatch "neg_0" {
    linalg.negf {tcc.kind = "elementwise"} ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
    tcc.yield
  }
  return
}
