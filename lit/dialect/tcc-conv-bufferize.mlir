// tcc.conv takes upstream's linalg machinery as a generic does: one-shot
// bufferization (its model: the memref form writes init's buffer, the
// body moved over, an input read through `tensor.extract` becoming a
// `memref.load`), and the loop lowering through linalg's structured-op
// interface (parallel loops over n, oh, ow, c, then the window's
// reductions, `linalg.index` replaced by the induction variables).
// RUN: tcc-opt %s --one-shot-bufferize=bufferize-function-boundaries | FileCheck %s --check-prefix=BUF
// RUN: tcc-opt %s --one-shot-bufferize=bufferize-function-boundaries --convert-linalg-to-parallel-loops | FileCheck %s --check-prefix=LOOPS

#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
// BUF-LABEL: func.func @max_pool
// BUF-SAME: (%[[X:.*]]: memref<1x8x8x4xf32{{.*}}>, %[[W:.*]]: memref<2x2xf32{{.*}}>, %[[INIT:.*]]: memref<1x4x4x4xf32{{.*}}>)
// BUF: tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]> ins(%[[W]] : memref<2x2xf32{{.*}}>) outs(%[[INIT]] : memref<1x4x4x4xf32{{.*}}>)
// BUF-SAME: attributes {tcc.kind = "convolution"}
// BUF: memref.load %[[X]]
// BUF: arith.maximumf
// BUF: linalg.yield
// BUF-NEXT: }{{$}}
// BUF: return %[[INIT]]
// LOOPS-LABEL: func.func @max_pool
// LOOPS-NOT: tcc.conv
// LOOPS: scf.parallel (%[[N:.*]], %[[OH:.*]], %[[OW:.*]], %[[C:.*]]) =
// LOOPS: scf.for %[[KH:.*]] =
// LOOPS: scf.for %[[KW:.*]] =
// LOOPS: arith.muli %[[OH]]
// LOOPS: arith.addi {{.*}}, %[[KH]]
// LOOPS: memref.load
// LOOPS: arith.maximumf
// LOOPS: memref.store
func.func @max_pool(%x: tensor<1x8x8x4xf32>, %w: tensor<2x2xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %r = tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]> ins(%w : tensor<2x2xf32>) outs(%init : tensor<1x4x4x4xf32>) indexing_maps = [#window, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] attributes {tcc.kind = "convolution"} {
  ^bb0(%in: f32, %acc: f32):
    %n = linalg.index 0 : index
    %oh = linalg.index 1 : index
    %ow = linalg.index 2 : index
    %c = linalg.index 3 : index
    %kh = linalg.index 4 : index
    %kw = linalg.index 5 : index
    %c2 = arith.constant 2 : index
    %h0 = arith.muli %oh, %c2 : index
    %h = arith.addi %h0, %kh : index
    %w0 = arith.muli %ow, %c2 : index
    %wi = arith.addi %w0, %kw : index
    %v = tensor.extract %x[%n, %h, %wi, %c] : tensor<1x8x8x4xf32>
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}
