// RUN: tcc-opt %s --tcc-generalize-reductions --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-generalize-reductions --linalg-fuse-elementwise-ops --split-input-file | FileCheck %s --check-prefix=FUSED

// A sum over the last axis becomes a generic with the reduced dimension
// last; its body is the reduce's.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sum_of_exp
// CHECK: %[[EXP:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK-NOT: linalg.reduce
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]} ins(%[[EXP]] : tensor<8x128xf32>) outs(%[[FILL]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[X]], %[[ACC]] : f32
// CHECK-NEXT: linalg.yield %[[SUM]] : f32

// As a generic, the exponential fuses into the reduction: one op.
// FUSED-LABEL: func.func @row_sum_of_exp
// FUSED: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<8x128xf32>)
// FUSED: math.exp
// FUSED: arith.addf
// FUSED-NOT: linalg.generic
func.func @row_sum_of_exp(%x: tensor<8x128xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8x128xf32>
  %exp = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x128xf32>) outs(%e : tensor<8x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<8x128xf32>
  %zero = arith.constant 0.0 : f32
  %r = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%r : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%exp : tensor<8x128xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %sum : tensor<8xf32>
}

// -----

// A maximum over the middle axis keeps its dimension order (hoisting the
// parallel dimensions is the tile phase's job); attributes survive.
// CHECK-LABEL: func.func @middle_max
// FUSED-LABEL: func.func @middle_max
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: tcc.kind = "reduction"
// CHECK: arith.maximumf
func.func @middle_max(%x: tensor<4x16x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = linalg.reduce ins(%x : tensor<4x16x8xf32>) outs(%init : tensor<4x8xf32>) dimensions = [1] {tcc.kind = "reduction"}
    (%in: f32, %acc: f32) {
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    }
  return %m : tensor<4x8xf32>
}

// -----

// Named contractions are left alone.
// CHECK-LABEL: func.func @matmul_stays
// CHECK: linalg.matmul
func.func @matmul_stays(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %m : tensor<4x2xf32>
}
