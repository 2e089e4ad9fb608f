// tcc-fold-batch-norm folds constant per-channel scales and shifts after a
// convolution or matmul into its weights and bias, also through a channel
// concat of convolutions (a grouped convolution's groups), and moves a
// clamp after such a concat into its inputs.
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

// -----

// A grouped convolution (two groups of 2 output channels, joined along
// the channels) -> * s -> + t -> ReLU: each group takes its slice of s and
// t (W' = W * s, b' = b * s + t per channel), and the ReLU moves into the
// concat's inputs, one clamp per group.
// CHECK-LABEL: func.func @grouped_conv
// CHECK-DAG: %[[W0:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]]]]> : tensor<2x1x1x1xf32>}>
// CHECK-DAG: %[[W1:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}4.000000e+00]]], {{\[\[\[}}-5.000000e+00]]]]> : tensor<2x1x1x1xf32>}>
// CHECK-DAG: %[[B0:.*]] = "tosa.const"() <{values = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}>
// CHECK-DAG: %[[B1:.*]] = "tosa.const"() <{values = dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>}>
// CHECK: %[[C0:.*]] = tosa.conv2d %{{.*}}, %[[W0]], %[[B0]]
// CHECK: %[[C1:.*]] = tosa.conv2d %{{.*}}, %[[W1]], %[[B1]]
// CHECK-DAG: %[[R0:.*]] = tosa.clamp %[[C0]] {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32}
// CHECK-DAG: %[[R1:.*]] = tosa.clamp %[[C1]] {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32}
// CHECK: %[[J:.*]] = tosa.concat %[[R0]], %[[R1]] {axis = 3 : i32}
// CHECK-NOT: tosa.mul
// CHECK-NOT: tosa.add
// CHECK-NOT: tosa.clamp
// CHECK: return %[[J]]
func.func @grouped_conv(%x0: tensor<1x2x2x1xf32>, %x1: tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32> {
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x1xf32>}> : () -> tensor<2x1x1x1xf32>
  %b = "tosa.const"() <{values = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = "tosa.const"() <{values = dense<[[[[2.0, 3.0, 4.0, -5.0]]]]> : tensor<1x1x1x4xf32>}> : () -> tensor<1x1x1x4xf32>
  %t = "tosa.const"() <{values = dense<[[[[-1.0, -1.0, -1.0, 9.0]]]]> : tensor<1x1x1x4xf32>}> : () -> tensor<1x1x1x4xf32>
  %c0 = tosa.conv2d %x0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %c1 = tosa.conv2d %x1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %j = tosa.concat %c0, %c1 {axis = 3 : i32} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %m = tosa.mul %j, %s, %shift : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>, tensor<1xi8>) -> tensor<1x2x2x4xf32>
  %a = tosa.add %m, %t : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x2x4xf32>
  %r = tosa.clamp %a {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %r : tensor<1x2x2x4xf32>
}

// -----

// Left alone: a group's result also used elsewhere (folding would change
// that use), and a concat along another axis than the channels.
// CHECK-LABEL: func.func @concat_not_folded
// CHECK: %[[J:.*]] = tosa.concat
// CHECK: %[[M:.*]] = tosa.mul %[[J]]
// CHECK: tosa.clamp %[[M]]
// CHECK: %[[K:.*]] = tosa.concat {{.*}} {axis = 2 : i32}
// CHECK: %[[N:.*]] = tosa.mul %[[K]]
// CHECK: tosa.clamp %[[N]]
func.func @concat_not_folded(%x: tensor<1x2x2x1xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x4x2xf32>) {
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x1xf32>}> : () -> tensor<2x1x1x1xf32>
  %b = "tosa.const"() <{values = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = "tosa.const"() <{values = dense<[[[[2.0, 3.0, 4.0, -5.0]]]]> : tensor<1x1x1x4xf32>}> : () -> tensor<1x1x1x4xf32>
  %s2 = "tosa.const"() <{values = dense<[[[[2.0, 3.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %c0 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %c1 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %j = tosa.concat %c0, %c1 {axis = 3 : i32} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %m = tosa.mul %j, %s, %shift : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>, tensor<1xi8>) -> tensor<1x2x2x4xf32>
  %r = tosa.clamp %m {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %c2 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %c3 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %k = tosa.concat %c2, %c3 {axis = 2 : i32} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x2xf32>
  %n = tosa.mul %k, %s2, %shift : (tensor<1x2x4x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x2x4x2xf32>
  %q = tosa.clamp %n {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  return %r, %c1, %q : tensor<1x2x2x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x4x2xf32>
}
