// tcc-lower-bool-casts rewrites tosa.cast from i1 as a tosa.select of one
// and zero of the result type (true is 1, as TOSA and ONNX say); casts
// from other types are left alone. The second RUN line folds the result:
// upstream's tosa.cast folder alone makes a constant true -1 (see
// @folds_to_one).
// RUN: tcc-opt %s --split-input-file --tcc-lower-bool-casts | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-lower-bool-casts --canonicalize | FileCheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @to_float(
// CHECK-SAME: %[[B:.*]]: tensor<2x3xi1>
// CHECK-DAG: %[[ONE:.*]] = "tosa.const"() <{values = dense<1.000000e+00> : tensor<1x1xf32>}>
// CHECK-DAG: %[[ZERO:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x1xf32>}>
// CHECK: %[[S:.*]] = tosa.select %[[B]], %[[ONE]], %[[ZERO]] : (tensor<2x3xi1>, tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
// CHECK-NOT: tosa.cast
// CHECK: return %[[S]]
func.func @to_float(%b: tensor<2x3xi1>) -> tensor<2x3xf32> {
  %0 = tosa.cast %b : (tensor<2x3xi1>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @to_int(
// CHECK-DAG: "tosa.const"() <{values = dense<1> : tensor<1xi32>}>
// CHECK-DAG: "tosa.const"() <{values = dense<0> : tensor<1xi32>}>
// CHECK: tosa.select
// CHECK-NOT: tosa.cast
// CHECK-LABEL: func.func @other_casts_stay(
// CHECK: tosa.cast %{{.*}} : (tensor<4xi32>) -> tensor<4xf32>
func.func @to_int(%b: tensor<4xi1>) -> tensor<4xi32> {
  %0 = tosa.cast %b : (tensor<4xi1>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @other_casts_stay(%x: tensor<4xi32>) -> tensor<4xf32> {
  %0 = tosa.cast %x : (tensor<4xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An argmax over an axis of one is 0 whatever the input, so the comparison
// folds to a constant true: it selects the one (the cast folded to -1.0).
// FOLD-LABEL: func.func @folds_to_one(
// FOLD-DAG: %[[ZERO:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x1x1xf32>}>
// FOLD-DAG: %[[ONE:.*]] = "tosa.const"() <{values = dense<1.000000e+00> : tensor<1x1x1xf32>}>
// FOLD-DAG: %[[TRUE:.*]] = "tosa.const"() <{values = dense<true> : tensor<5x1x1xi1>}>
// FOLD: %[[S:.*]] = tosa.select %[[TRUE]], %[[ONE]], %[[ZERO]]
// FOLD-NOT: -1.0
// FOLD: return %[[S]]
func.func @folds_to_one(%x: tensor<5x1x1xf32>) -> tensor<5x1x1xf32> {
  %0 = tosa.argmax %x {axis = 1 : i32} : (tensor<5x1x1xf32>) -> tensor<5x1xi32>
  %1 = tosa.const_shape {values = dense<[5, 1, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %2 = tosa.reshape %0, %1 : (tensor<5x1xi32>, !tosa.shape<3>) -> tensor<5x1x1xi32>
  %3 = "tosa.const"() <{values = dense<0> : tensor<1x1x1xi32>}> : () -> tensor<1x1x1xi32>
  %4 = tosa.equal %3, %2 : (tensor<1x1x1xi32>, tensor<5x1x1xi32>) -> tensor<5x1x1xi1>
  %5 = tosa.cast %4 : (tensor<5x1x1xi1>) -> tensor<5x1x1xf32>
  return %5 : tensor<5x1x1xf32>
}
