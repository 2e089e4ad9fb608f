// tcc.dispatch under one-shot bufferization (its model,
// cpp/TccDispatch.cpp): each result is the buffer of the value yielded for
// it, so a kernel writing into an empty tensor of the function writes that
// buffer in place, and the memref form has no results; an allocation
// bufferization makes inside a kernel (a copy of what an op may not
// overwrite) moves out in front of it.
// RUN: tcc-opt %s --split-input-file --one-shot-bufferize=bufferize-function-boundaries | FileCheck %s

// In place: the fill and the epilogue write the buffer of the function's
// empty tensor, which the next kernel reads.
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[X:.*]]: memref<4xf32{{.*}}>) -> memref<4xf32>
// CHECK: %[[BUF:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK-NEXT: tcc.dispatch "neg_0" {
// CHECK-NEXT: linalg.negf ins(%[[X]] : {{.*}}) outs(%[[BUF]] : memref<4xf32>)
// CHECK-NEXT: tcc.yield
// CHECK-NEXT: }
// CHECK-NEXT: tcc.dispatch "exp_1" {
// CHECK-NEXT: linalg.exp ins(%[[BUF]] : memref<4xf32>) outs(%[[BUF]] : memref<4xf32>)
// CHECK-NEXT: tcc.yield
// CHECK-NEXT: }
// CHECK: return %[[BUF]]
func.func @in_place(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = tcc.dispatch "neg_0" -> tensor<4xf32> {
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  %b = tcc.dispatch "exp_1" -> tensor<4xf32> {
    %m = linalg.exp ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %m : tensor<4xf32>
  }
  return %b : tensor<4xf32>
}

// -----

// Out of place: the second kernel may not overwrite %a, which the return
// still reads, so bufferization gives its result a new buffer, allocated
// in front of the kernel rather than inside it.
// CHECK-LABEL: func.func @copy_hoisted
// CHECK: %[[A:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: tcc.dispatch "neg_0" {
// CHECK: %[[B:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK-NEXT: tcc.dispatch "exp_1" {
// CHECK-NEXT: linalg.exp ins(%[[A]] : memref<4xf32>) outs(%[[B]] : memref<4xf32>)
// CHECK-NEXT: tcc.yield
// CHECK-NEXT: }
// CHECK: return %[[A]], %[[B]]
func.func @copy_hoisted(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %a = tcc.dispatch "neg_0" -> tensor<4xf32> {
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  %b = tcc.dispatch "exp_1" -> tensor<4xf32> {
    %m = linalg.exp ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %m : tensor<4xf32>
  }
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// An accumulation into %a, which the return still reads: bufferization
// copies %a into a new buffer first. The allocation lives outside the
// kernel; the copy, which the kernel's launch orders, stays inside.
// CHECK-LABEL: func.func @copy_inside
// CHECK: %[[A:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: tcc.dispatch "neg_0" {
// CHECK: %[[B:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK-NEXT: tcc.dispatch "accumulate_1" {
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: linalg.generic {{.*}} ins(%{{.*}} : {{.*}}) outs(%[[B]] : memref<4xf32>)
// CHECK: tcc.yield
// CHECK-NEXT: }
// CHECK: return %[[A]], %[[B]]
#id = affine_map<(d0) -> (d0)>
func.func @copy_inside(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %a = tcc.dispatch "neg_0" -> tensor<4xf32> {
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  %b = tcc.dispatch "accumulate_1" -> tensor<4xf32> {
    %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%a : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %sum = arith.addf %in, %out : f32
      linalg.yield %sum : f32
    } -> tensor<4xf32>
    tcc.yield %s : tensor<4xf32>
  }
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
