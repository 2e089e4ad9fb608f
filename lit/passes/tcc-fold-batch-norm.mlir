// tcc-fold-batch-norm folds constant per-channel scales and shifts after a
// convolution or matmul into its weights and bias.
// RUN: tcc-opt %s --split-input-file --tcc-fold-batch-norm --canonicalize | FileCheck %s

// conv -> * s -> + t (an inference BatchNorm): W' = W * s per output
// channel (OHWI: dimension 0), b' = b * s + t; the ReLU stays.
// CHECK-LABEL: func.func @conv_scale_shift
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x2xf32>)
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<[1.500000e+00, -3.000000e+00]> : tensor<2xf32>}>
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}2.000000e+00, 4.000000e+00]]], {{\[\[\[}}-3.000000e+00, -6.000000e+00]]]]> : tensor<2x1x1x2xf32>}>
// CHECK: %[[C:.*]] = tosa.conv2d %[[X]], %[[W]], %[[B]]
// CHECK-NOT: tosa.mul
// CHECK-NOT: tosa.add
// CHECK: %[[R:.*]] = tosa.clamp %[[C]]
// CHECK: return %[[R]]
func.func @conv_scale_shift(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0, 2.0]]], [[[1.0, 2.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<[0.5, 1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = "tosa.const"() <{values = dense<[[[[2.0, -3.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %t = "tosa.const"() <{values = dense<[[[[0.5, 0.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %m = tosa.mul %c, %s, %shift : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x4x4x2xf32>
  %a = tosa.add %m, %t : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x4x2xf32>
  %r = tosa.clamp %a {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  return %r : tensor<1x4x4x2xf32>
}

// -----

// Depthwise (HWCM weights, channel c*M+m along the last two dimensions)
// and a matmul (scale folds into B's columns; a matmul has no bias, so
// its add stays).
// CHECK-LABEL: func.func @depthwise_and_matmul
// CHECK-DAG: %[[DW:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x2x2xf32>}>
// CHECK-DAG: %[[MB:.*]] = "tosa.const"() <{values = dense<{{\[\[\[}}1.000000e+01, 2.000000e+01], [1.000000e+01, 2.000000e+01]]]> : tensor<1x2x2xf32>}>
// CHECK: tosa.depthwise_conv2d %{{.*}}, %[[DW]]
// CHECK: %[[MM:.*]] = tosa.matmul %{{.*}}, %[[MB]]
// CHECK: tosa.add %[[MM]]
func.func @depthwise_and_matmul(%x: tensor<1x3x3x2xf32>, %a: tensor<1x1x2xf32>) -> (tensor<1x3x3x4xf32>, tensor<1x1x2xf32>) {
  %w = "tosa.const"() <{values = dense<1.0> : tensor<1x1x2x2xf32>}> : () -> tensor<1x1x2x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = "tosa.const"() <{values = dense<[[[[1.0, 2.0, 3.0, 4.0]]]]> : tensor<1x1x1x4xf32>}> : () -> tensor<1x1x1x4xf32>
  %d = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x4xf32>
  %ds = tosa.mul %s, %d, %shift : (tensor<1x1x1x4xf32>, tensor<1x3x3x4xf32>, tensor<1xi8>) -> tensor<1x3x3x4xf32>
  %mb = "tosa.const"() <{values = dense<1.0> : tensor<1x2x2xf32>}> : () -> tensor<1x2x2xf32>
  %ms = "tosa.const"() <{values = dense<[[[10.0, 20.0]]]> : tensor<1x1x2xf32>}> : () -> tensor<1x1x2xf32>
  %mt = "tosa.const"() <{values = dense<[[[1.0, 1.0]]]> : tensor<1x1x2xf32>}> : () -> tensor<1x1x2xf32>
  %mm = tosa.matmul %a, %mb, %zp, %zp : (tensor<1x1x2xf32>, tensor<1x2x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2xf32>
  %mms = tosa.mul %mm, %ms, %shift : (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<1xi8>) -> tensor<1x1x2xf32>
  %mma = tosa.add %mms, %mt : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
  return %ds, %mma : tensor<1x3x3x4xf32>, tensor<1x1x2xf32>
}

// -----

// Near misses stay unfused: a scale that is not constant, a scale that
// varies along a spatial dimension, and a convolution whose result has
// another user.
// CHECK-LABEL: func.func @near_misses
// CHECK-COUNT-3: tosa.mul
func.func @near_misses(%x: tensor<1x2x2x2xf32>, %s: tensor<1x1x1x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %spatial = "tosa.const"() <{values = dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>}> : () -> tensor<1x2x1x1xf32>
  %c1 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %m1 = tosa.mul %c1, %s, %shift : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x2x2x2xf32>
  %c2 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %m2 = tosa.mul %c2, %spatial, %shift : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<1xi8>) -> tensor<1x2x2x2xf32>
  %k = "tosa.const"() <{values = dense<[[[[3.0, 4.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %c3 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %m3 = tosa.mul %c3, %k, %shift : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x2x2x2xf32>
  return %m1, %m2, %m3, %c3 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
