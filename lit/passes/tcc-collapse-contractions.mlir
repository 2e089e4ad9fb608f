// RUN: tcc-opt %s --tcc-collapse-contractions --split-input-file | FileCheck %s

// A flatten folded into the fully connected layer after it: the
// reduction runs over C x H x W, contiguous and in order in both
// operands. The three dimensions merge into one K of 2304 and the result
// is a batch_matmul again.
// CHECK-LABEL: func.func @flattened_fc
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x64x6x6xf32>, %[[W:.*]]: tensor<1x64x6x6x512xf32>
// CHECK-DAG: %[[XK:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3, 4]] : tensor<1x1x64x6x6xf32> into tensor<1x1x2304xf32>
// CHECK-DAG: %[[WK:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3], [4]] : tensor<1x64x6x6x512xf32> into tensor<1x2304x512xf32>
// CHECK: %[[Y:.*]] = linalg.batch_matmul ins(%[[XK]], %[[WK]] : tensor<1x1x2304xf32>, tensor<1x2304x512xf32>) outs(%{{.*}} : tensor<1x1x512xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
#x = affine_map<(b, m, n, c, h, w) -> (b, m, c, h, w)>
#w = affine_map<(b, m, n, c, h, w) -> (b, c, h, w, n)>
#y = affine_map<(b, m, n, c, h, w) -> (b, m, n)>
func.func @flattened_fc(%x: tensor<1x1x64x6x6xf32>, %w: tensor<1x64x6x6x512xf32>, %init: tensor<1x1x512xf32>) -> tensor<1x1x512xf32> {
  %y = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x1x64x6x6xf32>, tensor<1x64x6x6x512xf32>) outs(%init : tensor<1x1x512xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x1x512xf32>
  return %y : tensor<1x1x512xf32>
}

// -----

// The dimensions merge, but B is indexed (n, k): not a batch_matmul, so
// the merged contraction stays a generic (with one reduction dimension).
// CHECK-LABEL: func.func @transposed_weight
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x1x72xf32>, tensor<1x16x72xf32>)
#x = affine_map<(b, m, n, c, h) -> (b, m, c, h)>
#w = affine_map<(b, m, n, c, h) -> (b, n, c, h)>
#y = affine_map<(b, m, n, c, h) -> (b, m, n)>
func.func @transposed_weight(%x: tensor<1x1x8x9xf32>, %w: tensor<1x16x8x9xf32>, %init: tensor<1x1x16xf32>) -> tensor<1x1x16xf32> {
  %y = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x1x8x9xf32>, tensor<1x16x8x9xf32>) outs(%init : tensor<1x1x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x1x16xf32>
  return %y : tensor<1x1x16xf32>
}

// -----

// Near miss: the weight holds (h, c), the activation (c, h): the two
// reduction dimensions are not contiguous in the same order in every
// operand, so nothing merges and the op is left as it was.
// CHECK-LABEL: func.func @permuted_reduction
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x1x8x9xf32>, tensor<1x9x8x16xf32>)
#x = affine_map<(b, m, n, c, h) -> (b, m, c, h)>
#w = affine_map<(b, m, n, c, h) -> (b, h, c, n)>
#y = affine_map<(b, m, n, c, h) -> (b, m, n)>
func.func @permuted_reduction(%x: tensor<1x1x8x9xf32>, %w: tensor<1x9x8x16xf32>, %init: tensor<1x1x16xf32>) -> tensor<1x1x16xf32> {
  %y = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x1x8x9xf32>, tensor<1x9x8x16xf32>) outs(%init : tensor<1x1x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x1x16xf32>
  return %y : tensor<1x1x16xf32>
}

// -----

// Near miss: a reduction that is not a contraction (a sum of squares with
// an epilogue in the body) is left alone even though its dimensions are
// contiguous.
// CHECK-LABEL: func.func @not_a_contraction
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK: math.sqrt
func.func @not_a_contraction(%x: tensor<4x8x9xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, c, h) -> (i, c, h)>, affine_map<(i, c, h) -> (i)>], iterator_types = ["parallel", "reduction", "reduction"]} ins(%x : tensor<4x8x9xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %a, %a : f32
    %r = math.sqrt %p : f32
    %s = arith.addf %acc, %r : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A classifier after a global pool, as reshape propagation leaves it: the
// rows are the pooled map's 1 x 1, two parallel dimensions contiguous in
// the activation and the output. They merge into one M and the result is
// a batch_matmul.
// CHECK-LABEL: func.func @pooled_classifier
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x1x64xf32>, %[[W:.*]]: tensor<1x64x10xf32>
// CHECK-DAG: %[[XM:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1, 2], [3]] : tensor<1x1x1x64xf32> into tensor<1x1x64xf32>
// CHECK: %[[Y:.*]] = linalg.batch_matmul ins(%[[XM]], %[[W]] : tensor<1x1x64xf32>, tensor<1x64x10xf32>)
// CHECK: tensor.expand_shape %[[Y]] {{\[}}[0], [1, 2], [3]]
#x = affine_map<(b, h, w, n, k) -> (b, h, w, k)>
#w = affine_map<(b, h, w, n, k) -> (b, k, n)>
#y = affine_map<(b, h, w, n, k) -> (b, h, w, n)>
func.func @pooled_classifier(%x: tensor<1x1x1x64xf32>, %w: tensor<1x64x10xf32>, %init: tensor<1x1x1x10xf32>) -> tensor<1x1x1x10xf32> {
  %y = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x1x1x64xf32>, tensor<1x64x10xf32>) outs(%init : tensor<1x1x1x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x10xf32>
  return %y : tensor<1x1x1x10xf32>
}
