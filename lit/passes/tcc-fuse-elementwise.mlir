// RUN: tcc-opt %s --tcc-fuse-elementwise | FileCheck %s --check-prefix=ALL
// RUN: tcc-opt %s --tcc-fuse-elementwise="max-ops=4" | FileCheck %s --check-prefix=CAP4
// RUN: tcc-opt %s --tcc-fuse-elementwise="max-ops=2" | FileCheck %s --check-prefix=CAP2
// RUN: not tcc-opt %s --tcc-fuse-elementwise="max-ops=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// A chain of six one-op elementwise generics. Without a cap (upstream's
// behaviour) it fuses into one generic of six ops; with max-ops=4 a fused
// body stops at four ops, so the chain is two generics (4 + 2); with
// max-ops=2, three of two ops each.
// ALL-LABEL: func.func @chain
// ALL: linalg.generic
// ALL-NEXT: ^bb0
// ALL-NEXT: math.exp
// ALL-NEXT: arith.mulf
// ALL-NEXT: math.exp
// ALL-NEXT: arith.mulf
// ALL-NEXT: math.exp
// ALL-NEXT: arith.mulf
// ALL-NEXT: linalg.yield
// ALL-NOT: linalg.generic
// CAP4-LABEL: func.func @chain
// CAP4: %[[FIRST:.*]] = linalg.generic
// CAP4-NEXT: ^bb0
// CAP4-NEXT: math.exp
// CAP4-NEXT: arith.mulf
// CAP4-NEXT: math.exp
// CAP4-NEXT: arith.mulf
// CAP4-NEXT: linalg.yield
// CAP4: linalg.generic {{.*}} ins(%[[FIRST]] :
// CAP4-NEXT: ^bb0
// CAP4-NEXT: math.exp
// CAP4-NEXT: arith.mulf
// CAP4-NEXT: linalg.yield
// CAP4-NOT: linalg.generic
// CAP2-LABEL: func.func @chain
// CAP2-COUNT-3: linalg.generic
// CAP2-NOT: linalg.generic
// BAD: max-ops must be a count of operations (0: no cap), not '-1'
#id = affine_map<(i) -> (i)>
func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%1 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%2 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%3 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %5 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%4 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  return %5 : tensor<64xf32>
}
