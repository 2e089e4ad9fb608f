// The convolution op: `tcc.conv` (what tcc-fold-conv-inputs makes of a
// convolution or pooling) round-trips on tensors, on memrefs (no result)
// and with a 2-D convolution's filter in panels; its window is a
// `#tcc.conv` attribute. Invalid ones: tcc-conv-invalid.mlir.
// RUN: tcc-opt %s --split-input-file | FileCheck %s
// RUN: tcc-opt %s --split-input-file | tcc-opt --split-input-file | FileCheck %s

#filter = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#out = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
// CHECK-LABEL: func.func @conv
// CHECK: %[[R:.*]] = tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 1], dilations = [1, 3]> ins(%{{.*}} : tensor<3x3x2x4xf32>) outs(%{{.*}} : tensor<1x4x3x4xf32>) indexing_maps = [#{{.*}}, #{{.*}}] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] attributes {tcc.kind = "convolution"} {
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[I:.*]] = linalg.index 1 : index
// CHECK: arith.addf %[[IN]], %[[OUT]] : f32
// CHECK: linalg.yield
// CHECK-NEXT: } -> tensor<1x4x3x4xf32>
// CHECK: return %[[R]]
func.func @conv(%x: tensor<1x9x9x2xf32>, %w: tensor<3x3x2x4xf32>, %init: tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32> {
  %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 1], dilations = [1, 3]> ins(%w : tensor<3x3x2x4xf32>) outs(%init : tensor<1x4x3x4xf32>) indexing_maps = [#filter, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] attributes {tcc.kind = "convolution"} {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 1 : index
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x3x4xf32>
  return %r : tensor<1x4x3x4xf32>
}

// -----

// A pooling's filter operand is its window (kh, kw).
#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
// CHECK-LABEL: func.func @pool
// CHECK: tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]> ins(%{{.*}} : tensor<3x3xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>) {{.*}}iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
func.func @pool(%w: tensor<3x3xf32>, %init: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %r = tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]> ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x8xf32>) indexing_maps = [#window, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x8xf32>
  return %r : tensor<1x4x4x8xf32>
}

// -----

// On memrefs (after bufferization) it writes its init and returns nothing.
#filter = affine_map<(n, oh, ow, c, m, kh, kw) -> (kh, kw, c, m)>
#out = affine_map<(n, oh, ow, c, m, kh, kw) -> (n, oh, ow, c, m)>
// CHECK-LABEL: func.func @depthwise_buffers
// CHECK: tcc.conv<depthwise_conv_2d_nhwc_hwcm, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : memref<3x3x4x2xf32>) outs(%{{.*}} : memref<1x4x4x4x2xf32>)
// CHECK: linalg.yield
// CHECK-NEXT: }{{$}}
func.func @depthwise_buffers(%w: memref<3x3x4x2xf32>, %out: memref<1x4x4x4x2xf32>) {
  tcc.conv<depthwise_conv_2d_nhwc_hwcm, strides = [1, 1], dilations = [1, 1]> ins(%w : memref<3x3x4x2xf32>) outs(%out : memref<1x4x4x4x2xf32>) indexing_maps = [#filter, #out] iterator_types = [parallel, parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 2-D convolution's filter in panels of 4 output channels
// (tcc-pack-weight-panels): F/P x KH x KW x C x P.
#panels = affine_map<(n, oh, ow, f, kh, kw, c) -> (f floordiv 4, kh, kw, c, f mod 4)>
#out = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
// CHECK-LABEL: func.func @panels
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : tensor<2x3x3x2x4xf32>)
func.func @panels(%w: tensor<2x3x3x2x4xf32>, %init: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<2x3x3x2x4xf32>) outs(%init : tensor<1x4x4x8xf32>) indexing_maps = [#panels, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x8xf32>
  return %r : tensor<1x4x4x8xf32>
}
