// The kernel boundary, `tcc.dispatch`: the ops of one kernel in its region,
// on tensors returning what its `tcc.yield` yields, on memrefs with no
// results. Its root op says what it computes (`tcc.kind`). Valid ones
// round-trip; invalid ones are rejected with a located error
// (tcc-dispatch-invalid.mlir, cpp/TccDispatch.cpp, cpp/TccStructure.cpp).
// RUN: tcc-opt %s --split-input-file | FileCheck %s
// RUN: tcc-opt %s --split-input-file --mlir-print-op-generic | tcc-opt --split-input-file | FileCheck %s

// On tensors: a fill, its reduction and an epilogue, the region reading
// values of the function (the init, a constant) and yielding the last.
// CHECK-LABEL: func.func @tensor_form
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[K:.*]] = tcc.dispatch "reduce_add_neg_0" -> tensor<4xf32> {
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4xf32>)
// CHECK-NEXT: %[[R:.*]] = linalg.reduce ins(%{{.*}} : tensor<4x8xf32>) outs(%[[F]] : tensor<4xf32>) dimensions = [1] {tcc.kind = "reduction"}
// CHECK: %[[N:.*]] = linalg.negf ins(%[[R]] : tensor<4xf32>)
// CHECK-NEXT: tcc.yield %[[N]] : tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @tensor_form(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %k = tcc.dispatch "reduce_add_neg_0" -> tensor<4xf32> {
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %r = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) dimensions = [1] {tcc.kind = "reduction"}
      (%in: f32, %acc: f32) {
        %s = arith.addf %in, %acc : f32
        linalg.yield %s : f32
      }
    %n = linalg.negf ins(%r : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  return %k : tensor<4xf32>
}

// -----

// Two results (what two other ops read) and a kernel that yields nothing.
// CHECK-LABEL: func.func @two_results
// CHECK: %[[K:.*]]:2 = tcc.dispatch "neg_exp_1" -> tensor<4xf32>, tensor<4xf32> {
// CHECK: tcc.yield %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @two_results(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %k:2 = tcc.dispatch "neg_exp_1" -> tensor<4xf32>, tensor<4xf32> {
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %m = linalg.exp ins(%n : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %n, %m : tensor<4xf32>, tensor<4xf32>
  }
  return %k#0, %k#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// On memrefs: no results; the kernel writes a buffer of the function.
// CHECK-LABEL: func.func @memref_form
// CHECK: tcc.dispatch "neg_2" {
// CHECK-NEXT: linalg.negf {tcc.kind = "elementwise"} ins(%{{.*}} : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// CHECK-NEXT: tcc.yield
// CHECK-NEXT: }
func.func @memref_form(%x: memref<4xf32>, %y: memref<4xf32>) {
  tcc.dispatch "neg_2" {
    linalg.negf {tcc.kind = "elementwise"} ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
    tcc.yield
  }
  return
}
