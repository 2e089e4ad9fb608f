// The structural attributes other dialects' ops carry: a `#tcc.conv` on
// the linalg.generic that computes a convolution or pooling, and the
// kernel boundary (`tcc.kernel`, `tcc.kind`) on the ops of one kernel.
// Valid ones round-trip; invalid ones are rejected with a located error
// (the dialect's attribute verifier, cpp/TccStructure.cpp; see
// tcc-conv-invalid.mlir and tcc-kernel-invalid.mlir).
// RUN: tcc-opt %s --split-input-file | FileCheck %s

#filter = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#out = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
// CHECK-LABEL: func.func @conv
// CHECK: linalg.generic
// CHECK-SAME: tcc.conv = #tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 1], dilations = [1, 3]>, tcc.kernel = "conv_0", tcc.kind = "convolution"
func.func @conv(%x: tensor<1x9x9x2xf32>, %w: tensor<3x3x2x4xf32>, %init: tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32> {
  %r = linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%w : tensor<3x3x2x4xf32>) outs(%init : tensor<1x4x3x4xf32>) attrs = {tcc.conv = #tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 1], dilations = [1, 3]>, tcc.kernel = "conv_0", tcc.kind = "convolution"} {
  ^bb0(%a: f32, %acc: f32):
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
// CHECK: tcc.conv = #tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]>
func.func @pool(%w: tensor<3x3xf32>, %init: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %r = linalg.generic {indexing_maps = [#window, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x8xf32>) attrs = {tcc.conv = #tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x8xf32>
  return %r : tensor<1x4x4x8xf32>
}

// -----

// Ops of one kernel may nest (a kernel's loop holding its body ops).
// CHECK-LABEL: func.func @kernel_nesting
// CHECK: scf.for {{.*}} {
// CHECK: tcc.kernel = "add_1"
// CHECK: } {tcc.kernel = "add_1"}
func.func @kernel_nesting(%a: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> f32 {
    %s = arith.addf %acc, %a {tcc.kernel = "add_1"} : f32
    scf.yield %s : f32
  } {tcc.kernel = "add_1"}
  return %r : f32
}
