// tcc-merge-grouped-convs merges a grouped convolution that the ONNX
// importer gives as one tosa.conv2d per group (each reading a channel
// slice of one value, their results concatenated along the channels) into
// one grouped convolution: a linalg.generic marked tcc.grouped_conv over
// (n, oh, ow, g, f | kh, kw, c), its filter [G, KH, KW, Cg, Fg] built from
// the groups' weights, initialised with the concatenated biases, followed
// by the groups' common clamp. Near misses stay per group: groups of
// different geometry, slices that do not cover the input's channels, a
// group result used elsewhere, weights that are not constants, clamps
// that differ. A channel shuffle of the same groups after the concat
// becomes the merged convolution's output order.
// RUN: tcc-opt %s --split-input-file --tcc-merge-grouped-convs | FileCheck %s

// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3 * 2 + d7)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d5, d6, d7, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3 * 2 + d4)>
// CHECK-LABEL: func.func @nhwc_groups_with_relu(
// CHECK-SAME: %[[X:.*]]: tensor<1x4x4x4xf32>
// CHECK: %[[F:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]]], {{\[\[\[\[}}5.000000e+00, 7.000000e+00], [6.000000e+00, 8.000000e+00]]]]]> : tensor<2x1x1x2x2xf32>}>
// CHECK: %[[B:.*]] = "tosa.const"() <{values = dense<[5.000000e-01, 1.500000e+00, 2.500000e+00, 3.500000e+00]> : tensor<4xf32>}>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x4x4xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[B]] : tensor<4xf32>) outs(%[[E]] : tensor<1x4x4x4xf32>)
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[F]] : tensor<1x4x4x4xf32>, tensor<2x1x1x2x2xf32>) outs(%[[INIT]] : tensor<1x4x4x4xf32>) attrs =  {tcc.grouped_conv = array<i64: 2, 1, 1, 1, 1, 0>}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tosa.clamp %[[C]] {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NOT: tosa.conv2d
// CHECK-NOT: tosa.concat
// CHECK-NOT: tosa.slice %[[X]]
// CHECK: return %[[R]]
// Two groups of a 1x1 convolution reading an NHWC value, each with its
// ReLU: one grouped convolution (filter [G, KH, KW, Cg, Fg], each group's
// [Fg, 1, 1, Cg] weights transposed), its bias broadcast as init, one
// clamp, no concat.
func.func @nhwc_groups_with_relu(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w0 = "tosa.const"() <{values = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b0 = "tosa.const"() <{values = dense<[0.5, 1.5]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %w1 = "tosa.const"() <{values = dense<[[[[5.0, 6.0]]], [[[7.0, 8.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b1 = "tosa.const"() <{values = dense<[2.5, 3.5]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %w0, %b0, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r0 = tosa.clamp %c0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w1, %b1, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r1 = tosa.clamp %c1 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %y = tosa.concat %r0, %r1 {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d3 + d7)>
// CHECK-LABEL: func.func @nchw_padded_strided_in_a_larger_concat(
// CHECK-SAME: %[[X:.*]]: tensor<1x3x5x5xf32>, %[[OTHER:.*]]: tensor<1x3x3x2xf32>
// CHECK: %[[F:.*]] = "tosa.const"() <{values = dense<2.500000e-01> : tensor<3x3x3x1x1xf32>}>
// CHECK: %[[T:.*]] = tosa.transpose %[[X]] {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x5x5xf32>) -> tensor<1x5x5x3xf32>
// CHECK: %[[PADS:.*]] = tosa.const_shape {values = dense<[0, 0, 1, 1, 1, 1, 0, 0]> : tensor<8xindex>}
// CHECK: %[[P:.*]] = tosa.pad %[[T]], %[[PADS]], %{{.*}} : (tensor<1x5x5x3xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x7x7x3xf32>
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#[[IN]], {{.*}}]{{.*}} ins(%[[P]], %[[F]] : tensor<1x7x7x3xf32>, tensor<3x3x3x1x1xf32>) outs(%{{.*}} : tensor<1x3x3x3xf32>) attrs =  {tcc.grouped_conv = array<i64: 3, 2, 2, 1, 1, 0>}
// CHECK: %[[Y:.*]] = tosa.concat %[[C]], %[[OTHER]] {axis = 3 : i32} : (tensor<1x3x3x3xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x5xf32>
// CHECK-NOT: tosa.conv2d
// CHECK: return %[[Y]]
// A padded, strided 3x3 convolution of three groups reading an NCHW
// model input through slices and transposes, inside a larger concat
// (another part after it): one transpose, a tosa.pad, the grouped
// convolution with its strides in the input's map, and a concat of two.
func.func @nchw_padded_strided_in_a_larger_concat(%x: tensor<1x3x5x5xf32>, %other: tensor<1x3x3x2xf32>) -> tensor<1x3x3x5xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 1, 0, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s2 = tosa.const_shape {values = dense<[0, 2, 0, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 1, 5, 5]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x3x3x1xf32>}> : () -> tensor<1x3x3x1xf32>
  %b = "tosa.const"() <{values = dense<1.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x3x5x5xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x1x5x5xf32>
  %t0 = tosa.transpose %x0 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x5x5x1xf32>
  %c0 = tosa.conv2d %t0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x5x5x1xf32>, tensor<1x3x3x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x1xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x3x5x5xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x1x5x5xf32>
  %t1 = tosa.transpose %x1 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x5x5x1xf32>
  %c1 = tosa.conv2d %t1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x5x5x1xf32>, tensor<1x3x3x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x1xf32>
  %x2 = tosa.slice %x, %s2, %size : (tensor<1x3x5x5xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x1x5x5xf32>
  %t2 = tosa.transpose %x2 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x5x5x1xf32>
  %c2 = tosa.conv2d %t2, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x5x5x1xf32>, tensor<1x3x3x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x1xf32>
  %y = tosa.concat %c0, %c1, %c2, %other {axis = 3 : i32} : (tensor<1x3x3x1xf32>, tensor<1x3x3x1xf32>, tensor<1x3x3x1xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x5xf32>
  return %y : tensor<1x3x3x5xf32>
}

// -----

// A channel shuffle of the groups after them (ShuffleNet's, between the
// layout's transposes): the grouped convolution writes output channel
// f * G + g (its bias in that order), and the shuffle's ops go; it runs
// over loops (n, oh, ow, f, g | kh, kw, c), so that its parallel loops
// run in its output's order.
// CHECK-DAG: #[[SIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d4 * 2 + d7)>
// CHECK-DAG: #[[SW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d5, d6, d7, d3)>
// CHECK-DAG: #[[SOUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3 * 2 + d4)>
// CHECK-LABEL: func.func @channel_shuffle_after_the_groups(
// CHECK: %[[B:.*]] = "tosa.const"() <{values = dense<[5.000000e-01, 2.500000e+00, 1.500000e+00, 3.500000e+00]> : tensor<4xf32>}>
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#[[SIN]], #[[SW]], #[[SOUT]]]{{.*}}attrs =  {tcc.grouped_conv = array<i64: 2, 1, 1, 1, 1, 1>}
// CHECK: %[[R:.*]] = tosa.clamp %[[C]]
// CHECK-NOT: tosa.transpose
// CHECK-NOT: tosa.reshape
// CHECK: return %[[R]]
func.func @channel_shuffle_after_the_groups(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w0 = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b0 = "tosa.const"() <{values = dense<[0.5, 1.5]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %w1 = "tosa.const"() <{values = dense<2.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b1 = "tosa.const"() <{values = dense<[2.5, 3.5]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %w0, %b0, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r0 = tosa.clamp %c0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w1, %b1, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r1 = tosa.clamp %c1 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %y = tosa.concat %r0, %r1 {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  %t1 = tosa.transpose %y {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %g = tosa.const_shape {values = dense<[1, 2, 2, 4, 4]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %e = tosa.reshape %t1, %g : (tensor<1x4x4x4xf32>, !tosa.shape<5>) -> tensor<1x2x2x4x4xf32>
  %t2 = tosa.transpose %e {perms = array<i32: 0, 2, 1, 3, 4>} : (tensor<1x2x2x4x4xf32>) -> tensor<1x2x2x4x4xf32>
  %f = tosa.const_shape {values = dense<[1, 4, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %m = tosa.reshape %t2, %f : (tensor<1x2x2x4x4xf32>, !tosa.shape<4>) -> tensor<1x4x4x4xf32>
  %z = tosa.transpose %m {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %z : tensor<1x4x4x4xf32>
}

// -----

// A shuffle into other groups than the convolution's (3 of a 6-channel
// output of 2 groups) is no output order of it: the convolution merges,
// the shuffle stays.
// CHECK-LABEL: func.func @shuffle_of_other_groups(
// CHECK: tcc.grouped_conv = array<i64: 2, 1, 1, 1, 1, 0>
// CHECK: tosa.reshape
// CHECK: tosa.transpose
func.func @shuffle_of_other_groups(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x6xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w = "tosa.const"() <{values = dense<1.0> : tensor<3x1x1x2xf32>}> : () -> tensor<3x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<3xf32>}> : () -> tensor<3xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<3x1x1x2xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x3xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<3x1x1x2xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x3xf32>
  %y = tosa.concat %c0, %c1 {axis = 3 : i32} : (tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x4x6xf32>
  %g = tosa.const_shape {values = dense<[1, 4, 4, 3, 2]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %e = tosa.reshape %y, %g : (tensor<1x4x4x6xf32>, !tosa.shape<5>) -> tensor<1x4x4x3x2xf32>
  %t = tosa.transpose %e {perms = array<i32: 0, 1, 2, 4, 3>} : (tensor<1x4x4x3x2xf32>) -> tensor<1x4x4x2x3xf32>
  %f = tosa.const_shape {values = dense<[1, 4, 4, 6]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %z = tosa.reshape %t, %f : (tensor<1x4x4x2x3xf32>, !tosa.shape<4>) -> tensor<1x4x4x6xf32>
  return %z : tensor<1x4x4x6xf32>
}

// -----

// Two groups of 2 channels of a 6-channel value: not a grouped convolution of it.
// CHECK-LABEL: func.func @slices_short_of_the_channels(
// CHECK-NOT: linalg.generic
// CHECK-COUNT-2: tosa.conv2d
// CHECK: tosa.concat
func.func @slices_short_of_the_channels(%x: tensor<1x4x4x6xf32>) -> tensor<1x4x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<2xf32>}> : () -> tensor<2xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x6xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r0 = tosa.clamp %c0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x6xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r1 = tosa.clamp %c1 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %y = tosa.concat %r0, %r1 {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// One group's weights are an argument.
// CHECK-LABEL: func.func @weights_not_constant(
// CHECK-NOT: linalg.generic
// CHECK-COUNT-2: tosa.conv2d
// CHECK: tosa.concat
func.func @weights_not_constant(%x: tensor<1x4x4x4xf32>, %v: tensor<2x1x1x2xf32>) -> tensor<1x4x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<2xf32>}> : () -> tensor<2xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %v, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r0 = tosa.clamp %c0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r1 = tosa.clamp %c1 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %y = tosa.concat %r0, %r1 {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// The groups' clamps differ (ReLU and ReLU6).
// CHECK-LABEL: func.func @clamps_differ(
// CHECK-NOT: linalg.generic
// CHECK-COUNT-2: tosa.conv2d
// CHECK: tosa.concat
func.func @clamps_differ(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<2xf32>}> : () -> tensor<2xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r0 = tosa.clamp %c0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r1 = tosa.clamp %c1 {max_val = 6.000000e+00 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %y = tosa.concat %r0, %r1 {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// A group's convolution is also a result of the function.
// CHECK-LABEL: func.func @group_result_used_elsewhere(
// CHECK-NOT: linalg.generic
// CHECK-COUNT-2: tosa.conv2d
// CHECK: tosa.concat
func.func @group_result_used_elsewhere(%x: tensor<1x4x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s0 = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 4, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w = "tosa.const"() <{values = dense<1.0> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<2xf32>}> : () -> tensor<2xf32>
  %x0 = tosa.slice %x, %s0, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c0 = tosa.conv2d %x0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r0 = tosa.clamp %c0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %x1 = tosa.slice %x, %s1, %size : (tensor<1x4x4x4xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x4x2xf32>
  %c1 = tosa.conv2d %x1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %r1 = tosa.clamp %c1 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %y = tosa.concat %r0, %r1 {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  return %y, %c0 : tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32>
}
