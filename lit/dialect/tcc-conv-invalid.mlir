// Invalid `#tcc.conv` windows, `tcc.conv` ops that do not compute what
// their window says (the op's verifier, cpp/TccConv.cpp) or that break
// linalg's structured-op rules (its interface's verifier), and a
// `tcc.conv` left as a discardable attribute on another op, are rejected
// with a located error.
// RUN: tcc-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{expects 2 strides and 2 dilations (height, width), got 1 and 2}}
func.func private @one_stride() attributes {c = #tcc.conv<conv_2d_nhwc_hwcf, strides = [1], dilations = [1, 1]>}

// -----

// expected-error @+1 {{strides and dilations must be positive, got 0}}
func.func private @zero_dilation() attributes {c = #tcc.conv<pooling_nhwc_sum, strides = [1, 1], dilations = [0, 1]>}

// -----

// expected-error @+2 {{expected ::tcc::WindowKind to be one of: conv_2d_nhwc_hwcf, depthwise_conv_2d_nhwc_hwcm, depthwise_conv_2d_nhwc_hwc, pooling_nhwc_max, pooling_nhwc_sum}}
// expected-error @+1 {{failed to parse Tcc_ConvAttr parameter 'kind' which is to be a `::tcc::WindowKind`}}
func.func private @unknown_kind() attributes {c = #tcc.conv<conv_3d_ndhwc_dhwcf, strides = [1, 1], dilations = [1, 1]>}

// -----

func.func @tag_on_another_op(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.addf' op carries tcc.conv, but a convolution is the tcc.conv op, not an attribute}}
  %r = arith.addf %a, %b {tcc.conv = #tcc.conv<pooling_nhwc_max, strides = [1, 1], dilations = [1, 1]>} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

#filter = affine_map<(n, oh, ow, f, kh, kw) -> (kh, kw, f)>
#out = affine_map<(n, oh, ow, f, kh, kw) -> (n, oh, ow, f)>
func.func @too_few_loops(%w: tensor<3x3x4xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{'tcc.conv' op has 6 loops, but a conv_2d_nhwc_hwcf has 7 (4 parallel, then 3 reduction)}}
  %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4xf32>) indexing_maps = [#filter, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @reduction_first(%w: tensor<3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{loop 4 is parallel, but a pooling_nhwc_max has 4 parallel loops, then 2 reduction loops}}
  %r = tcc.conv<pooling_nhwc_max, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) indexing_maps = [#window, #out] iterator_types = [parallel, parallel, parallel, parallel, parallel, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#filter = affine_map<(n, oh, ow, c, m, kh, kw) -> (kh, kw, c)>
#out = affine_map<(n, oh, ow, c, m, kh, kw) -> (n, oh, ow, c, m)>
func.func @filter_rank(%w: tensor<3x3x4xf32>, %init: tensor<1x4x4x4x2xf32>) -> tensor<1x4x4x4x2xf32> {
  // expected-error @+1 {{has a filter of rank 3, but a depthwise_conv_2d_nhwc_hwcm filter has rank 4}}
  %r = tcc.conv<depthwise_conv_2d_nhwc_hwcm, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4x2xf32>) indexing_maps = [#filter, #out] iterator_types = [parallel, parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x4x2xf32>
  return %r : tensor<1x4x4x4x2xf32>
}

// -----

#filter = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#out = affine_map<(n, oh, ow, f, kh, kw, c) -> (oh, ow, f)>
func.func @output_rank(%w: tensor<3x3x2x4xf32>, %init: tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
  // expected-error @+1 {{has an output of rank 3, but a conv_2d_nhwc_hwcf output has rank 4}}
  %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<3x3x2x4xf32>) outs(%init : tensor<4x4x4xf32>) indexing_maps = [#filter, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  return %r : tensor<4x4x4xf32>
}

// -----

#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @mixed_operands(%w: memref<3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{expects a filter and an output that are both tensors or both memrefs}}
  %r = tcc.conv<pooling_nhwc_sum, strides = [1, 1], dilations = [1, 1]> ins(%w : memref<3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) indexing_maps = [#window, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    linalg.yield %acc : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @unknown_iterator(%w: tensor<3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{expected 'parallel' or 'reduction', got 'window'}}
  %r = tcc.conv<pooling_nhwc_sum, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) indexing_maps = [#window, #out] iterator_types = [parallel, parallel, parallel, parallel, window, reduction] {
  ^bb0(%a: f32, %acc: f32):
    linalg.yield %acc : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @missing_map(%w: tensor<3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{expected the number of indexing_map (1) to be equal to the number of input/output operands (2)}}
  %r = tcc.conv<pooling_nhwc_sum, strides = [1, 1], dilations = [1, 1]> ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) indexing_maps = [#out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    linalg.yield %acc : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @result_on_buffers(%w: memref<3x3xf32>, %init: memref<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{expected the number of tensor results (1) to be equal to the number of output tensors (0)}}
  %r = tcc.conv<pooling_nhwc_sum, strides = [1, 1], dilations = [1, 1]> ins(%w : memref<3x3xf32>) outs(%init : memref<1x4x4x4xf32>) indexing_maps = [#window, #out] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
  ^bb0(%a: f32, %acc: f32):
    linalg.yield %acc : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}
