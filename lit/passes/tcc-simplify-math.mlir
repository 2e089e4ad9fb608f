// RUN: tcc-opt %s --tcc-simplify-math --split-input-file | FileCheck %s

// An LRN's (1 + a * sum)^-0.75: the reciprocal of sqrt(x) * sqrt(sqrt(x)),
// no powf left.
// CHECK-LABEL: func.func @lrn_power
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[S:.*]] = math.sqrt %[[X]] : f32
// CHECK-DAG: %[[SS:.*]] = math.sqrt %[[S]] : f32
// CHECK: %[[P:.*]] = arith.mulf %[[S]], %[[SS]] : f32
// CHECK: %[[R:.*]] = arith.divf %[[ONE]], %[[P]] : f32
// CHECK-NOT: math.powf
// CHECK: return %[[R]]
func.func @lrn_power(%x: f32) -> f32 {
  %e = arith.constant -0.75 : f32
  %p = math.powf %x, %e : f32
  return %p : f32
}

// -----

// Upstream's reductions: squares, cubes, square roots, reciprocals.
// CHECK-LABEL: func.func @integer_and_half_powers
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[SQUARE:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[SQUARE2:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[CUBE:.*]] = arith.mulf %[[X]], %[[SQUARE2]] : f32
// CHECK: %[[INV_CUBE:.*]] = arith.divf %[[ONE]], %[[CUBE]] : f32
// CHECK: %[[ROOT:.*]] = math.sqrt %[[X]] : f32
// CHECK: %[[RROOT:.*]] = math.rsqrt %[[X]] : f32
// CHECK: return %[[SQUARE]], %[[INV_CUBE]], %[[ROOT]], %[[RROOT]]
func.func @integer_and_half_powers(%x: f32) -> (f32, f32, f32, f32) {
  %two = arith.constant 2.0 : f32
  %minus_three = arith.constant -3.0 : f32
  %half = arith.constant 0.5 : f32
  %minus_half = arith.constant -0.5 : f32
  %0 = math.powf %x, %two : f32
  %1 = math.powf %x, %minus_three : f32
  %2 = math.powf %x, %half : f32
  %3 = math.powf %x, %minus_half : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// -----

// An exponent with no cheaper form, or one that is not a constant, stays.
// CHECK-LABEL: func.func @general_powers
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
func.func @general_powers(%x: f32, %y: f32) -> (f32, f32) {
  %e = arith.constant 0.3 : f32
  %0 = math.powf %x, %e : f32
  %1 = math.powf %x, %y : f32
  return %0, %1 : f32, f32
}
