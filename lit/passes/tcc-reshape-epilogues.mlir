// tcc-reshape-epilogues: an elementwise op reading a matmul's product
// through reshapes takes the product's shape, so that form-dispatches can
// make it the GEMM's epilogue.
// RUN: tcc-opt %s --split-input-file --tcc-reshape-epilogues | FileCheck %s

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>

// A residual add after a [2, 4, 8] activation's product computed as
// [1, 8, 8]: the add reads the product directly, its other operand and
// its destination are reshaped to [1, 8, 8], its result back to [2, 4, 8].
// CHECK-LABEL: func.func @residual_add
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: tensor<1x8x16xf32>, %[[W:[a-z0-9_]+]]: tensor<1x16x8xf32>, %[[R:[a-z0-9_]+]]: tensor<2x4x8xf32>)
// CHECK: %[[P:.*]] = linalg.batch_matmul
// CHECK: %[[RF:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1, 2]] : tensor<2x4x8xf32> into tensor<64xf32>
// CHECK: %[[R3:.*]] = tensor.expand_shape %[[RF]] {{\[\[}}0, 1, 2]] output_shape [1, 8, 8] : tensor<64xf32> into tensor<1x8x8xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x8x8xf32>
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[P]], %[[R3]] : tensor<1x8x8xf32>, tensor<1x8x8xf32>) outs(%[[E]] : tensor<1x8x8xf32>)
// CHECK: %[[SF:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0, 1, 2]] : tensor<1x8x8xf32> into tensor<64xf32>
// CHECK: %[[S3:.*]] = tensor.expand_shape %[[SF]] {{\[\[}}0, 1, 2]] output_shape [2, 4, 8] : tensor<64xf32> into tensor<2x4x8xf32>
// CHECK: return %[[S3]]
func.func @residual_add(%a: tensor<1x8x16xf32>, %w: tensor<1x16x8xf32>, %r: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %p = linalg.batch_matmul ins(%a, %w : tensor<1x8x16xf32>, tensor<1x16x8xf32>) outs(%f : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %c = tensor.collapse_shape %p [[0, 1], [2]] : tensor<1x8x8xf32> into tensor<8x8xf32>
  %x = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %o = tensor.empty() : tensor<2x4x8xf32>
  %s = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %r : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %sum = arith.addf %in, %in2 : f32
    linalg.yield %sum : f32
  } -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>

// A broadcast operand indexed by the shared last dimension keeps its value
// and moves its map; the GELU-like body is unchanged.
// CHECK: #[[LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @bias_and_activation
// CHECK: %[[P:.*]] = linalg.batch_matmul
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[LAST]], #{{.*}}], {{.*}} ins(%[[P]], %{{.*}} : tensor<1x8x8xf32>, tensor<8xf32>)
// CHECK: math.erf
func.func @bias_and_activation(%a: tensor<1x8x16xf32>, %w: tensor<1x16x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %p = linalg.batch_matmul ins(%a, %w : tensor<1x8x16xf32>, tensor<1x16x8xf32>) outs(%f : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %c = tensor.collapse_shape %p [[0, 1], [2]] : tensor<1x8x8xf32> into tensor<8x8xf32>
  %x = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %o = tensor.empty() : tensor<2x4x8xf32>
  %s = linalg.generic {indexing_maps = [#id3, #last, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %b : tensor<2x4x8xf32>, tensor<8xf32>) outs(%o : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %sum = arith.addf %in, %bias : f32
    %g = math.erf %sum : f32
    linalg.yield %g : f32
  } -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#first = affine_map<(d0, d1, d2) -> (d0)>

// Near misses stay: an operand broadcast along the batch dimension (which
// the product's shape merges away), and a product the epilogue reads
// twice through its reshapes' other users.
// CHECK-LABEL: func.func @near_misses
// CHECK-COUNT-2: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]]
// CHECK-NOT: tensor<64xf32>
func.func @near_misses(%a: tensor<1x8x16xf32>, %w: tensor<1x16x8xf32>, %s: tensor<2xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %p = linalg.batch_matmul ins(%a, %w : tensor<1x8x16xf32>, tensor<1x16x8xf32>) outs(%f : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %c = tensor.collapse_shape %p [[0, 1], [2]] : tensor<1x8x8xf32> into tensor<8x8xf32>
  %x = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %o = tensor.empty() : tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #first, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %s : tensor<2x4x8xf32>, tensor<2xf32>) outs(%o : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %scale: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8xf32>
  %p2 = linalg.batch_matmul ins(%a, %w : tensor<1x8x16xf32>, tensor<1x16x8xf32>) outs(%f : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %c2 = tensor.collapse_shape %p2 [[0, 1], [2]] : tensor<1x8x8xf32> into tensor<8x8xf32>
  %x2 = tensor.expand_shape %c2 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %z = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x2 : tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4x8xf32>
  return %y, %z, %c2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (0, d1)>

// A symbolic batch: the product is the epilogue's shape after one leading
// unit dimension. The operands are expanded (their symbolic size read with
// tensor.dim), the destination's size comes from the product's own empty
// tensor (not a tensor.dim of the product, which would give it a second
// user), and the result is collapsed back.
// CHECK-LABEL: func.func @symbolic_batch
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<1x?x32xf32>, %[[W:[a-z0-9_]+]]: tensor<1x32x64xf32>, %[[B:[a-z0-9_]+]]: tensor<1x64xf32>, %[[N:[a-z0-9_]+]]: index)
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<1x?x64xf32>
// CHECK: %[[P:.*]] = linalg.batch_matmul
// CHECK: %[[D:.*]] = tensor.empty(%[[N]]) : tensor<1x?x64xf32>
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[B]] : tensor<1x?x64xf32>, tensor<1x64xf32>) outs(%[[D]] : tensor<1x?x64xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0, 1], [2]] : tensor<1x?x64xf32> into tensor<?x64xf32>
// CHECK: return %[[R]]
func.func @symbolic_batch(%x: tensor<1x?x32xf32>, %w: tensor<1x32x64xf32>, %b: tensor<1x64xf32>, %n: index) -> tensor<?x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %e = tensor.empty(%n) : tensor<1x?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %p = linalg.batch_matmul ins(%x, %w : tensor<1x?x32xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %c = tensor.collapse_shape %p [[0, 1], [2]] : tensor<1x?x64xf32> into tensor<?x64xf32>
  %d = tensor.dim %c, %c0 : tensor<?x64xf32>
  %o = tensor.empty(%d) : tensor<?x64xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]} ins(%c, %b : tensor<?x64xf32>, tensor<1x64xf32>) outs(%o : tensor<?x64xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %sum = arith.addf %in, %bias : f32
    linalg.yield %sum : f32
  } -> tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}
