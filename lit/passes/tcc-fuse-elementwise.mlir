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

// -----

// A quantize step (f32 -> i8) in front of an int8 matrix-vector product
// stays a generic of its own: fused, the product's body would compute its
// int8 operand from floats and the int8 templates (plain byte loads) could
// not take it. The same step in front of an elementwise consumer fuses.
// CAP4-LABEL: func.func @quantize_then_int8_sum
// CAP2-LABEL: func.func @quantize_then_int8_sum
// ALL-LABEL: func.func @quantize_then_int8_sum
// ALL: %[[Q:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]
// ALL: arith.fptosi
// ALL: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[Q]], %{{.*}} : tensor<256xi8>, tensor<256x16xi8>)
// ALL-NOT: arith.fptosi
// ALL: arith.muli
// ALL-LABEL: func.func @quantize_then_elementwise
// ALL: linalg.generic
// ALL: arith.fptosi
// ALL: arith.extsi
// ALL-NOT: linalg.generic
#v = affine_map<(k) -> (k)>
#vk = affine_map<(n, k) -> (k)>
#wk = affine_map<(n, k) -> (k, n)>
#on = affine_map<(n, k) -> (n)>
func.func @quantize_then_int8_sum(%x: tensor<256xf32>, %w: tensor<256x16xi8>) -> tensor<16xi32> {
  %e = tensor.empty() : tensor<256xi8>
  %q = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<256xf32>) outs(%e : tensor<256xi8>) {
  ^bb0(%a: f32, %o: i8):
    %s = arith.mulf %a, %a : f32
    %c = arith.fptosi %s : f32 to i8
    linalg.yield %c : i8
  } -> tensor<256xi8>
  %zero = arith.constant 0 : i32
  %init = tensor.empty() : tensor<16xi32>
  %acc = linalg.fill ins(%zero : i32) outs(%init : tensor<16xi32>) -> tensor<16xi32>
  %r = linalg.generic {indexing_maps = [#vk, #wk, #on], iterator_types = ["parallel", "reduction"]} ins(%q, %w : tensor<256xi8>, tensor<256x16xi8>) outs(%acc : tensor<16xi32>) {
  ^bb0(%a: i8, %b: i8, %o: i32):
    %a32 = arith.extsi %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %o, %p : i32
    linalg.yield %s : i32
  } -> tensor<16xi32>
  return %r : tensor<16xi32>
}
func.func @quantize_then_elementwise(%x: tensor<256xf32>) -> tensor<256xi32> {
  %e = tensor.empty() : tensor<256xi8>
  %q = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<256xf32>) outs(%e : tensor<256xi8>) {
  ^bb0(%a: f32, %o: i8):
    %c = arith.fptosi %a : f32 to i8
    linalg.yield %c : i8
  } -> tensor<256xi8>
  %e32 = tensor.empty() : tensor<256xi32>
  %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%q : tensor<256xi8>) outs(%e32 : tensor<256xi32>) {
  ^bb0(%a: i8, %o: i32):
    %w = arith.extsi %a : i8 to i32
    linalg.yield %w : i32
  } -> tensor<256xi32>
  return %r : tensor<256xi32>
}

// An elementwise producer of a contraction's operand (a global pool's
// division before the classifier) is not fused into it: the contraction's
// body stays a multiply-add, which tcc-collapse-contractions can give back
// its named form. The division fuses nowhere else and stays its own
// generic.
// ALL-LABEL: func.func @producer_of_contraction
// ALL: %[[D:.*]] = linalg.generic
// ALL: arith.divf
// ALL: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[D]], %{{.*}} :
// ALL-NEXT: ^bb0
// ALL-NEXT: arith.mulf
// ALL-NEXT: arith.addf
// ALL-NEXT: linalg.yield
#pid = affine_map<(b, m, k) -> (b, m, k)>
#pa = affine_map<(b, m, n, k) -> (b, m, k)>
#pw = affine_map<(b, m, n, k) -> (b, k, n)>
#py = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @producer_of_contraction(%x: tensor<1x1x64xf32>, %w: tensor<1x64x10xf32>, %init: tensor<1x1x10xf32>) -> tensor<1x1x10xf32> {
  %c = arith.constant 49.0 : f32
  %e = tensor.empty() : tensor<1x1x64xf32>
  %d = linalg.generic {indexing_maps = [#pid, #pid], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x1x64xf32>) outs(%e : tensor<1x1x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %c : f32
    linalg.yield %q : f32
  } -> tensor<1x1x64xf32>
  %y = linalg.generic {indexing_maps = [#pa, #pw, #py], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%d, %w : tensor<1x1x64xf32>, tensor<1x64x10xf32>) outs(%init : tensor<1x1x10xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x10xf32>
  return %y : tensor<1x1x10xf32>
}
