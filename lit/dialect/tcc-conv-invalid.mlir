// Invalid `#tcc.conv` attributes and generics that do not compute what
// their `#tcc.conv` says are rejected with a located error.
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

func.func @not_a_generic(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.addf' op carries tcc.conv, which only a linalg.generic may carry}}
  %r = arith.addf %a, %b {tcc.conv = #tcc.conv<pooling_nhwc_max, strides = [1, 1], dilations = [1, 1]>} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @string_tag(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects tcc.conv to be a #tcc.conv attribute, got "conv_2d_nhwc_hwcf"}}
  %r = arith.negf %a {tcc.conv = "conv_2d_nhwc_hwcf"} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

#filter = affine_map<(n, oh, ow, f, kh, kw) -> (kh, kw, f)>
#out = affine_map<(n, oh, ow, f, kh, kw) -> (n, oh, ow, f)>
func.func @too_few_loops(%w: tensor<3x3x4xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{has 6 loops, but a conv_2d_nhwc_hwcf has 7 (4 parallel, then 3 reduction)}}
  %r = linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%w : tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4xf32>) attrs = {tcc.conv = #tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]>} {
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
  %r = linalg.generic {indexing_maps = [#window, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) attrs = {tcc.conv = #tcc.conv<pooling_nhwc_max, strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#x = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
#window = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw, c)>
#out = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @input_operand(%x: tensor<1x4x4x4xf32>, %w: tensor<3x3x4xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{has 2 inputs and 1 outputs, but a depthwise_conv_2d_nhwc_hwc generic reads its filter (or window) and writes one output}}
  %r = linalg.generic {indexing_maps = [#x, #window, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x4x4xf32>, tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4xf32>) attrs = {tcc.conv = #tcc.conv<depthwise_conv_2d_nhwc_hwc, strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

#filter = affine_map<(n, oh, ow, c, m, kh, kw) -> (kh, kw, c)>
#out = affine_map<(n, oh, ow, c, m, kh, kw) -> (n, oh, ow, c, m)>
func.func @filter_rank(%w: tensor<3x3x4xf32>, %init: tensor<1x4x4x4x2xf32>) -> tensor<1x4x4x4x2xf32> {
  // expected-error @+1 {{has a filter of rank 3, but a depthwise_conv_2d_nhwc_hwcm filter has rank 4}}
  %r = linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%w : tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4x2xf32>) attrs = {tcc.conv = #tcc.conv<depthwise_conv_2d_nhwc_hwcm, strides = [1, 1], dilations = [1, 1]>} {
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
  %r = linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%w : tensor<3x3x2x4xf32>) outs(%init : tensor<4x4x4xf32>) attrs = {tcc.conv = #tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  return %r : tensor<4x4x4xf32>
}
