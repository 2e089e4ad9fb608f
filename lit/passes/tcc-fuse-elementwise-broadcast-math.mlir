// RUN: tcc-opt %s --split-input-file --tcc-fuse-elementwise | FileCheck %s --check-prefix=FUSE
// RUN: tcc-opt %s --split-input-file --tcc-fuse-elementwise="recompute-broadcast-math=false" | FileCheck %s --check-prefix=KEEP
// RUN: tcc-opt %s --split-input-file --tcc-fuse-elementwise="recompute-broadcast-math=auto" | FileCheck %s --check-prefix=FUSE
// RUN: not tcc-opt %s --split-input-file --tcc-fuse-elementwise="recompute-broadcast-math=maybe" 2>&1 | FileCheck %s --check-prefix=BAD

// tcc-fuse-elementwise{recompute-broadcast-math}: a squeeze-and-excitation
// gate, sigmoid(s) per channel, scaling a 16x16 image per channel. Fused
// (the default without a target, and GPUs'), the sigmoid is recomputed for
// every pixel; with recompute-broadcast-math=false (pocl-cpu's choice) the
// gate stays a kernel of its own, computed once per channel, and the
// scaling reads it.
// FUSE-LABEL: func.func @gate
// FUSE: linalg.generic
// FUSE: math.exp
// FUSE: arith.mulf
// FUSE-NOT: linalg.generic
// KEEP-LABEL: func.func @gate
// KEEP: %[[GATE:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>)
// KEEP: math.exp
// KEEP: arith.divf
// KEEP: linalg.generic {{.*}} ins(%{{.*}}, %[[GATE]] : tensor<4x8x16x16xf32>, tensor<4x8xf32>)
// KEEP-NOT: math.exp
// KEEP: arith.mulf
// KEEP-NOT: linalg.generic
// BAD: recompute-broadcast-math must be auto, true or false (got 'maybe')
#id2 = affine_map<(n, c) -> (n, c)>
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#bcast = affine_map<(n, c, h, w) -> (n, c)>
func.func @gate(%x: tensor<4x8x16x16xf32>, %s: tensor<4x8xf32>) -> tensor<4x8x16x16xf32> {
  %e2 = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %x1, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x8x16x16xf32>
  %y = linalg.generic {indexing_maps = [#id4, #bcast, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %g : tensor<4x8x16x16xf32>, tensor<4x8xf32>) outs(%e4 : tensor<4x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8x16x16xf32>
  return %y : tensor<4x8x16x16xf32>
}

// -----

// A gate read at the consumer's own size (no broadcast) fuses either way:
// nothing is recomputed.
// FUSE-LABEL: func.func @same_size
// FUSE-COUNT-1: linalg.generic
// FUSE-NOT: linalg.generic
// KEEP-LABEL: func.func @same_size
// KEEP-COUNT-1: linalg.generic
// KEEP-NOT: linalg.generic
#id = affine_map<(i) -> (i)>
func.func @same_size(%x: tensor<64xf32>, %s: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%s : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %x1 = math.exp %a : f32
    linalg.yield %x1 : f32
  } -> tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %g : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %y : tensor<64xf32>
}

// -----

// A broadcast producer of cheap math (a multiply) fuses either way.
// FUSE-LABEL: func.func @cheap
// FUSE-COUNT-1: linalg.generic
// FUSE-NOT: linalg.generic
// KEEP-LABEL: func.func @cheap
// KEEP-COUNT-1: linalg.generic
// KEEP-NOT: linalg.generic
#id2 = affine_map<(n, c) -> (n, c)>
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#bcast = affine_map<(n, c, h, w) -> (n, c)>
func.func @cheap(%x: tensor<4x8x16x16xf32>, %s: tensor<4x8xf32>) -> tensor<4x8x16x16xf32> {
  %e2 = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.mulf %a, %a : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x8x16x16xf32>
  %y = linalg.generic {indexing_maps = [#id4, #bcast, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %g : tensor<4x8x16x16xf32>, tensor<4x8xf32>) outs(%e4 : tensor<4x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8x16x16xf32>
  return %y : tensor<4x8x16x16xf32>
}
