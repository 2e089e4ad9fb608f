// tcc-merge-sibling-matmuls merges the tosa.matmuls of one activation by
// constant weights into one product of the weights concatenated along N
// and a tosa.slice per original product; where each sibling adds its own
// constant bias, the biases are concatenated and added once. The second
// RUN line folds the concatenations into constants, as the graph phase
// does right after the pass. Products that differ in K, that have no
// constant weights, or whose zero points are not zero stay as they are.
// RUN: tcc-opt %s --split-input-file --tcc-merge-sibling-matmuls | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-merge-sibling-matmuls --tcc-fold-constants --canonicalize | FileCheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @qkv_with_biases(
// CHECK-SAME: %[[X:.*]]: tensor<1x4x8xf32>
// CHECK: %[[W:.*]] = tosa.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i32} : (tensor<1x8x6xf32>, tensor<1x8x6xf32>, tensor<1x8x4xf32>) -> tensor<1x8x16xf32>
// CHECK: %[[P:.*]] = tosa.matmul %[[X]], %[[W]], %{{.*}}, %{{.*}} : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
// CHECK: %[[B:.*]] = tosa.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i32} : (tensor<1x1x6xf32>, tensor<1x1x6xf32>, tensor<1x1x4xf32>) -> tensor<1x1x16xf32>
// CHECK: %[[A:.*]] = tosa.add %[[B]], %[[P]] : (tensor<1x1x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
// CHECK-DAG: %[[S0:.*]] = tosa.const_shape {values = dense<0> : tensor<3xindex>}
// CHECK-DAG: %[[Z0:.*]] = tosa.const_shape {values = dense<[1, 4, 6]> : tensor<3xindex>}
// CHECK: %[[Q:.*]] = tosa.slice %[[A]], %[[S0]], %[[Z0]] : (tensor<1x4x16xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x4x6xf32>
// CHECK: %[[S1:.*]] = tosa.const_shape {values = dense<[0, 0, 6]> : tensor<3xindex>}
// CHECK: %[[K:.*]] = tosa.slice %[[A]], %[[S1]], %{{.*}} : (tensor<1x4x16xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x4x6xf32>
// CHECK: %[[S2:.*]] = tosa.const_shape {values = dense<[0, 0, 12]> : tensor<3xindex>}
// CHECK: %[[V:.*]] = tosa.slice %[[A]], %[[S2]], %{{.*}} : (tensor<1x4x16xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x4x4xf32>
// CHECK-NOT: tosa.matmul
// CHECK: %[[QK:.*]] = tosa.mul %[[Q]], %[[K]]
// CHECK: return %[[QK]], %[[V]]
// FOLD-LABEL: func.func @qkv_with_biases(
// FOLD-NOT: tosa.concat
// FOLD: tosa.matmul %{{.*}}, %{{.*}} : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
// FOLD-COUNT-3: tosa.slice
// FOLD-NOT: tosa.matmul
func.func @qkv_with_biases(%x: tensor<1x4x8xf32>) -> (tensor<1x4x6xf32>, tensor<1x4x4xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %wq = "tosa.const"() <{values = dense<1.0> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %bq = "tosa.const"() <{values = dense<0.5> : tensor<1x1x6xf32>}> : () -> tensor<1x1x6xf32>
  %q0 = tosa.matmul %x, %wq, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  %q = tosa.add %bq, %q0 : (tensor<1x1x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %wk = "tosa.const"() <{values = dense<2.0> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %bk = "tosa.const"() <{values = dense<1.5> : tensor<1x1x6xf32>}> : () -> tensor<1x1x6xf32>
  %k0 = tosa.matmul %x, %wk, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  %k = tosa.add %k0, %bk : (tensor<1x4x6xf32>, tensor<1x1x6xf32>) -> tensor<1x4x6xf32>
  %wv = "tosa.const"() <{values = dense<3.0> : tensor<1x8x4xf32>}> : () -> tensor<1x8x4xf32>
  %bv = "tosa.const"() <{values = dense<2.5> : tensor<1x1x4xf32>}> : () -> tensor<1x1x4xf32>
  %v0 = tosa.matmul %x, %wv, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4xf32>
  %v = tosa.add %bv, %v0 : (tensor<1x1x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %qk = tosa.mul %q, %k, %shift : (tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1xi8>) -> tensor<1x4x6xf32>
  return %qk, %v : tensor<1x4x6xf32>, tensor<1x4x4xf32>
}

// -----

// A gated MLP's gate and up projections, without biases: one product and
// two slices.
// CHECK-LABEL: func.func @gate_and_up(
// CHECK: %[[W:.*]] = tosa.concat %{{.*}}, %{{.*}} {axis = 2 : i32} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x32xf32>
// CHECK: %[[P:.*]] = tosa.matmul %{{.*}}, %[[W]], %{{.*}}, %{{.*}} : (tensor<1x4x8xf32>, tensor<1x8x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x32xf32>
// CHECK: %[[G:.*]] = tosa.slice %[[P]]
// CHECK: %[[U:.*]] = tosa.slice %[[P]]
// CHECK-NOT: tosa.matmul
// CHECK: tosa.sigmoid %[[G]]
// FOLD-LABEL: func.func @gate_and_up(
// FOLD-NOT: tosa.concat
// FOLD: tosa.matmul %{{.*}} -> tensor<1x4x32xf32>
func.func @gate_and_up(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %wg = "tosa.const"() <{values = dense<1.0> : tensor<1x8x16xf32>}> : () -> tensor<1x8x16xf32>
  %wu = "tosa.const"() <{values = dense<2.0> : tensor<1x8x16xf32>}> : () -> tensor<1x8x16xf32>
  %g = tosa.matmul %x, %wg, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %u = tosa.matmul %x, %wu, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %s = tosa.sigmoid %g : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %s, %u, %shift : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1xi8>) -> tensor<1x4x16xf32>
  return %y : tensor<1x4x16xf32>
}

// -----

// Near misses: weights computed at run time (an argument), a different K
// (other activations), one sibling with a bias and one without (each
// kind alone), and a product whose activation is used once.
// CHECK-LABEL: func.func @near_misses(
// CHECK-NOT: tosa.concat
// CHECK-COUNT-3: tosa.matmul
// CHECK-NOT: tosa.slice
func.func @near_misses(%x: tensor<1x4x8xf32>, %w: tensor<1x8x6xf32>) -> (tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1x4x6xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %wa = "tosa.const"() <{values = dense<1.0> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %ba = "tosa.const"() <{values = dense<0.5> : tensor<1x1x6xf32>}> : () -> tensor<1x1x6xf32>
  %a0 = tosa.matmul %x, %wa, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  %a = tosa.add %ba, %a0 : (tensor<1x1x6xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %wb = "tosa.const"() <{values = dense<2.0> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %b = tosa.matmul %x, %wb, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  %c = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  return %a, %b, %c : tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1x4x6xf32>
}
