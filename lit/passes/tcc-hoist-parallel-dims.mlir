// tcc-hoist-parallel-dims moves parallel iteration dimensions before the
// reductions, so the loop nest maps every output dimension onto work-items.
// RUN: tcc-opt %s --split-input-file --tcc-hoist-parallel-dims | FileCheck %s

// A reduction over the middle axis: (d0, d1=red, d2) becomes (d0, d2, d1=red).
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @middle
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: tcc.kind = "reduction"
func.func @middle(%x: tensor<4x6x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<4x6x8xf32>) outs(%init : tensor<4x8xf32>) attrs = {tcc.kind = "reduction"} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// linalg.index follows its dimension (argmax-style bodies).
// CHECK-LABEL: func.func @index
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: linalg.index 1 : index
func.func @index(%x: tensor<6x8xf32>, %init: tensor<8xi32>) -> tensor<8xi32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<6x8xf32>) outs(%init : tensor<8xi32>) {
  ^bb0(%in: f32, %acc: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %m = arith.maxsi %c, %acc : i32
    linalg.yield %m : i32
  } -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// Named reductions are generalized first; already-outer ops are untouched.
// CHECK-LABEL: func.func @named
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.matmul
func.func @named(%x: tensor<6x8xf32>, %init: tensor<8xf32>, %a: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> (tensor<8xf32>, tensor<4x4xf32>) {
  %0 = linalg.reduce ins(%x : tensor<6x8xf32>) outs(%init : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %1 = linalg.matmul ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0, %1 : tensor<8xf32>, tensor<4x4xf32>
}
