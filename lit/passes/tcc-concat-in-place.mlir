// tcc-concat-in-place: concats share one buffer when one repeats another's
// first parts, and producers write straight into their slice of it.
// RUN: tcc-opt %s --split-input-file --tcc-concat-in-place | FileCheck %s

// DenseNet's pattern: concat(a, b) and concat(a, b, c). One buffer of the
// larger shape is created first; `a`'s producer (a fill into an empty)
// writes into slice 0 of it; each part is inserted once; the smaller concat
// is a view of the chain after its last part.
// CHECK-LABEL: func.func @prefix_family
// CHECK-SAME: (%[[B:.*]]: tensor<2x3xf32>, %[[C:.*]]: tensor<2x3xf32>)
// CHECK: %[[BUF:.*]] = tensor.empty() : tensor<2x9xf32>
// CHECK: %[[SLOT:.*]] = tensor.extract_slice %[[BUF]][0, 0] [2, 3] [1, 1] : tensor<2x9xf32> to tensor<2x3xf32>
// CHECK: %[[A:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[SLOT]] : tensor<2x3xf32>)
// CHECK: %[[S0:.*]] = tensor.insert_slice %[[A]] into %[[BUF]][0, 0] [2, 3] [1, 1]
// CHECK: %[[S1:.*]] = tensor.insert_slice %[[B]] into %[[S0]][0, 3] [2, 3] [1, 1]
// CHECK: %[[SMALL:.*]] = tensor.extract_slice %[[S1]][0, 0] [2, 6] [1, 1] : tensor<2x9xf32> to tensor<2x6xf32>
// CHECK: %[[S2:.*]] = tensor.insert_slice %[[C]] into %[[S1]][0, 6] [2, 3] [1, 1]
// CHECK: return %[[SMALL]], %[[S2]]
func.func @prefix_family(%b: tensor<2x3xf32>, %c: tensor<2x3xf32>) -> (tensor<2x6xf32>, tensor<2x9xf32>) {
  %zero = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %a = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e6 = tensor.empty() : tensor<2x6xf32>
  %i0 = tensor.insert_slice %a into %e6[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %small = tensor.insert_slice %b into %i0[0, 3] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %e9 = tensor.empty() : tensor<2x9xf32>
  %j0 = tensor.insert_slice %a into %e9[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x9xf32>
  %j1 = tensor.insert_slice %b into %j0[0, 3] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x9xf32>
  %large = tensor.insert_slice %c into %j1[0, 6] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x9xf32>
  return %small, %large : tensor<2x6xf32>, tensor<2x9xf32>
}

// -----

// Near misses: an insert chain that does not cover its tensor (a pad, not
// a concat) and a part whose producer is used elsewhere (it keeps its own
// buffer and is copied in) are left as they were, apart from the chain.
// CHECK-LABEL: func.func @near_misses
// CHECK: %[[A:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.insert_slice %[[A]] into
// CHECK: tensor.insert_slice %[[A]] into %{{.*}}[0, 1] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x5xf32>
// CHECK: return
func.func @near_misses(%b: tensor<2x3xf32>) -> (tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x5xf32>) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %a = linalg.fill ins(%one : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e6 = tensor.empty() : tensor<2x6xf32>
  %i0 = tensor.insert_slice %a into %e6[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %cat = tensor.insert_slice %b into %i0[0, 3] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %e5 = tensor.empty() : tensor<2x5xf32>
  %padded = tensor.insert_slice %a into %e5[0, 1] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x5xf32>
  return %cat, %a, %padded : tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x5xf32>
}

// -----

// Nested concats (a concat that is a part of another, as edge and reflect
// pads are built) stay as they are.
// CHECK-LABEL: func.func @nested
// CHECK-NOT: tensor.extract_slice
// CHECK-COUNT-4: tensor.insert_slice
func.func @nested(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x9xf32> {
  %e6 = tensor.empty() : tensor<2x6xf32>
  %i0 = tensor.insert_slice %a into %e6[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %inner = tensor.insert_slice %b into %i0[0, 3] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %e9 = tensor.empty() : tensor<2x9xf32>
  %j0 = tensor.insert_slice %inner into %e9[0, 0] [2, 6] [1, 1] : tensor<2x6xf32> into tensor<2x9xf32>
  %outer = tensor.insert_slice %a into %j0[0, 6] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x9xf32>
  return %outer : tensor<2x9xf32>
}

// -----

// Two matmuls of one shape start from one zero fill (CSE merges identical
// fills): each gets its own copy of the fill, pointed at its slot of the
// concat buffer, so both write in place.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[BUF:.*]] = tensor.empty() : tensor<4x6xf32>
// CHECK: %[[SLOT0:.*]] = tensor.extract_slice %[[BUF]][0, 0] [4, 3] [1, 1]
// CHECK: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[SLOT0]] : tensor<4x3xf32>)
// CHECK: %[[M0:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x5xf32>, tensor<5x3xf32>) outs(%[[F0]] : tensor<4x3xf32>)
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[M0]] into %[[BUF]][0, 0] [4, 3] [1, 1]
// CHECK: %[[SLOT1:.*]] = tensor.extract_slice %[[I0]][0, 3] [4, 3] [1, 1]
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[SLOT1]] : tensor<4x3xf32>)
// CHECK: %[[M1:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x5xf32>, tensor<5x3xf32>) outs(%[[F1]] : tensor<4x3xf32>)
// CHECK: tensor.insert_slice %[[M1]] into %[[I0]][0, 3] [4, 3] [1, 1]
func.func @shared_fill(%x: tensor<4x5xf32>, %w0: tensor<5x3xf32>, %w1: tensor<5x3xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<4x5xf32>, tensor<5x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<4x5xf32>, tensor<5x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e6 = tensor.empty() : tensor<4x6xf32>
  %i0 = tensor.insert_slice %m0 into %e6[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x6xf32>
  %i1 = tensor.insert_slice %m1 into %i0[0, 3] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x6xf32>
  return %i1 : tensor<4x6xf32>
}
