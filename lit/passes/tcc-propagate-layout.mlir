// tcc-propagate-layout sinks transposes through layout-agnostic ops so that
// the NCHW<->NHWC pairs an importer puts around each convolution cancel.
// RUN: tcc-opt %s --split-input-file --tcc-propagate-layout --canonicalize | FileCheck %s

// A convolution, a per-channel affine and a ReLU in NCHW between two NHWC
// convolutions: the transposes meet and vanish, the [1,C,1,1] constants
// become [1,1,1,C] (a transpose of the constant, which canonicalize folds
// for dense constants and tcc-fold-constants for any).
// CHECK-LABEL: func.func @conv_bn_relu_conv
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x4xf32>
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x1x4xf32>}>
// CHECK: %[[C1:.*]] = tosa.conv2d %[[X]]
// CHECK: %[[M:.*]] = tosa.mul %[[C1]], %[[S]], %{{.*}} : (tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32>, tensor<1xi8>) -> tensor<1x8x8x4xf32>
// CHECK: %[[R:.*]] = tosa.clamp %[[M]]
// CHECK: %[[C2:.*]] = tosa.conv2d %[[R]]
// CHECK: return %[[C2]]
// CHECK-NOT: tosa.transpose
func.func @conv_bn_relu_conv(%x: tensor<1x8x8x4xf32>, %w: tensor<4x1x1x4xf32>) -> tensor<1x8x8x4xf32> {
  %b = "tosa.const"() <{values = dense<0.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = "tosa.const"() <{values = dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]]> : tensor<1x4x1x1xf32>}> : () -> tensor<1x4x1x1xf32>
  %c1 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x1x1x4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x4xf32>
  %t1 = tosa.transpose %c1 {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x8x8xf32>
  %m = tosa.mul %t1, %s, %shift : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>, tensor<1xi8>) -> tensor<1x4x8x8xf32>
  %r = tosa.clamp %m {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %t2 = tosa.transpose %r {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x8x8x4xf32>
  %c2 = tosa.conv2d %t2, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x1x1x4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x4xf32>
  return %c2 : tensor<1x8x8x4xf32>
}

// -----

// A residual add of two transposed values, a concat along channels (axis 1
// in NCHW becomes axis 3) and a reduction: one transpose is left, at the
// function's output.
// CHECK-LABEL: func.func @add_concat_reduce
// CHECK-SAME: (%[[A:.*]]: tensor<1x4x4x2xf32>, %[[B:.*]]: tensor<1x4x4x2xf32>)
// CHECK: %[[SUM:.*]] = tosa.add %[[A]], %[[B]] : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[CAT:.*]] = tosa.concat %[[SUM]], %[[A]] {axis = 3 : i32} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[RED:.*]] = tosa.reduce_max %[[CAT]] {axis = 2 : i32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x4xf32>
// CHECK: %[[OUT:.*]] = tosa.transpose %[[RED]] {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x1x4xf32>) -> tensor<1x4x4x1xf32>
// CHECK: return %[[OUT]]
func.func @add_concat_reduce(%a: tensor<1x4x4x2xf32>, %b: tensor<1x4x4x2xf32>) -> tensor<1x4x4x1xf32> {
  %ta = tosa.transpose %a {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
  %tb = tosa.transpose %b {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
  %sum = tosa.add %ta, %tb : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %cat = tosa.concat %sum, %ta {axis = 1 : i32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %red = tosa.reduce_max %cat {axis = 3 : i32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x1xf32>
  return %red : tensor<1x4x4x1xf32>
}

// -----

// A crop (slice) and a pad of a transposed value move below it with their
// start/size and padding permuted.
// CHECK-LABEL: func.func @slice_pad
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x6x3xf32>)
// CHECK-DAG: %[[START:.*]] = tosa.const_shape {values = dense<0> : tensor<4xindex>}
// CHECK-DAG: %[[SIZE:.*]] = tosa.const_shape {values = dense<[1, 5, 5, 3]> : tensor<4xindex>}
// CHECK-DAG: %[[PADS:.*]] = tosa.const_shape {values = dense<[0, 0, 1, 1, 2, 2, 0, 0]> : tensor<8xindex>}
// CHECK: %[[CROP:.*]] = tosa.slice %[[X]], %[[START]], %[[SIZE]] : (tensor<1x6x6x3xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x5x5x3xf32>
// CHECK: %[[PAD:.*]] = tosa.pad %[[CROP]], %[[PADS]], %{{.*}} : (tensor<1x5x5x3xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x7x9x3xf32>
// CHECK: return %[[PAD]]
func.func @slice_pad(%x: tensor<1x6x6x3xf32>) -> tensor<1x7x9x3xf32> {
  %start = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 3, 5, 5]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %pads = tosa.const_shape {values = dense<[0, 0, 0, 0, 1, 1, 2, 2]> : tensor<8xindex>} : () -> !tosa.shape<8>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x6x6x3xf32>) -> tensor<1x3x6x6xf32>
  %crop = tosa.slice %t, %start, %size : (tensor<1x3x6x6xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x3x5x5xf32>
  %pad = tosa.pad %crop, %pads, %zero : (tensor<1x3x5x5xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x3x7x9xf32>
  %back = tosa.transpose %pad {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x7x9xf32>) -> tensor<1x7x9x3xf32>
  return %back : tensor<1x7x9x3xf32>
}

// -----

// A transpose that only moves unit dimensions (global pooling output to
// NCHW) keeps the data's order: it becomes a reshape.
// CHECK-LABEL: func.func @unit_dims
// CHECK: %[[R:.*]] = tosa.reshape %{{.*}}, %{{.*}} : (tensor<1x1x1x8xf32>, !tosa.shape<4>) -> tensor<1x8x1x1xf32>
// CHECK: return %[[R]]
// CHECK-NOT: tosa.transpose
func.func @unit_dims(%x: tensor<1x1x1x8xf32>) -> tensor<1x8x1x1xf32> {
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x1x1x8xf32>) -> tensor<1x8x1x1xf32>
  return %t : tensor<1x8x1x1xf32>
}

// -----

// Near misses stay: operands transposed by different permutations, and an
// operand that is neither a transpose nor a constant (moving the transpose
// would add one).
// CHECK-LABEL: func.func @near_misses
// CHECK: tosa.transpose %{{.*}} {perms = array<i32: 0, 2, 3, 1>}
// CHECK: tosa.transpose %{{.*}} {perms = array<i32: 0, 3, 1, 2>}
// CHECK: tosa.add
// CHECK: tosa.sub
func.func @near_misses(%a: tensor<2x2x2x2xf32>, %b: tensor<2x2x2x2xf32>) -> (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) {
  %ta = tosa.transpose %a {perms = array<i32: 0, 2, 3, 1>} : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
  %tb = tosa.transpose %b {perms = array<i32: 0, 3, 1, 2>} : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
  %sum = tosa.add %ta, %tb : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
  %diff = tosa.sub %ta, %b : (tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
  return %sum, %diff : tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>
}

// -----

// A global pooling written in NCHW (transpose, reshape to [N, C, H*W],
// reduce over H*W): the reshape merges H and W, which are adjacent in the
// channels-last source, so the transpose moves below it and the reduction
// runs on the channels-last data; what is left is a unit-dim move, a
// reshape.
// CHECK-LABEL: func.func @pool_through_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x3x8xf32>)
// CHECK: %[[R:.*]] = tosa.reshape %[[X]], %{{.*}} : (tensor<1x3x3x8xf32>, !tosa.shape<3>) -> tensor<1x9x8xf32>
// CHECK: %[[S:.*]] = tosa.reduce_sum %[[R]] {axis = 1 : i32} : (tensor<1x9x8xf32>) -> tensor<1x1x8xf32>
// CHECK: %[[Y:.*]] = tosa.reshape %[[S]], %{{.*}} : (tensor<1x1x8xf32>, !tosa.shape<3>) -> tensor<1x8x1xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: tosa.transpose
func.func @pool_through_reshape(%x: tensor<1x3x3x8xf32>) -> tensor<1x8x1xf32> {
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x3x3x8xf32>) -> tensor<1x8x3x3xf32>
  %shape = tosa.const_shape {values = dense<[1, 8, 9]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %t, %shape : (tensor<1x8x3x3xf32>, !tosa.shape<3>) -> tensor<1x8x9xf32>
  %s = tosa.reduce_sum %r {axis = 2 : i32} : (tensor<1x8x9xf32>) -> tensor<1x8x1xf32>
  return %s : tensor<1x8x1xf32>
}

// -----

// A reshape that splits a dimension (ShuffleNet's channel shuffle) keeps
// its transpose.
// CHECK-LABEL: func.func @split_stays
// CHECK: tosa.transpose
// CHECK: tosa.reshape
func.func @split_stays(%x: tensor<1x2x2x6xf32>) -> tensor<1x2x3x4xf32> {
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x2x2x6xf32>) -> tensor<1x6x2x2xf32>
  %shape = tosa.const_shape {values = dense<[1, 2, 3, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %r = tosa.reshape %t, %shape : (tensor<1x6x2x2xf32>, !tosa.shape<4>) -> tensor<1x2x3x4xf32>
  return %r : tensor<1x2x3x4xf32>
}

// -----

// A channel-window stencil in NCHW between two NHWC ops (an LRN as ONNX's
// importer writes it): the transposed input feeds both the squares and the
// final multiply, so no single op can move first; the cluster as a whole
// removes both transposes and adds none. The pad and slice move to the
// channel axis (3) of the NHWC data.
// CHECK-LABEL: func.func @lrn_cluster
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x2x4xf32>)
// CHECK-NOT: tosa.transpose
// CHECK: %[[SQ:.*]] = tosa.mul %[[X]], %[[X]]
// CHECK: %[[P:.*]] = tosa.pad %[[SQ]], %{{.*}}, %{{.*}} : (tensor<1x2x2x4xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x2x2x6xf32>
// CHECK: tosa.slice %[[P]], %{{.*}}, %{{.*}} : (tensor<1x2x2x6xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x2x2x4xf32>
// CHECK: tosa.slice %[[P]], %{{.*}}, %{{.*}} : (tensor<1x2x2x6xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x2x2x4xf32>
// CHECK: %[[S:.*]] = tosa.add
// CHECK: %[[Y:.*]] = tosa.mul %[[X]], %[[S]]
// CHECK: return %[[Y]] : tensor<1x2x2x4xf32>
func.func @lrn_cluster(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %pads = tosa.const_shape {values = dense<[0, 0, 1, 1, 0, 0, 0, 0]> : tensor<8xindex>} : () -> !tosa.shape<8>
  %size = tosa.const_shape {values = dense<[1, 4, 2, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %o0 = tosa.const_shape {values = dense<[0, 0, 0, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %o2 = tosa.const_shape {values = dense<[0, 2, 0, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x2x2x4xf32>) -> tensor<1x4x2x2xf32>
  %sq = tosa.mul %t, %t, %shift : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1xi8>) -> tensor<1x4x2x2xf32>
  %p = tosa.pad %sq, %pads, %zero : (tensor<1x4x2x2xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x6x2x2xf32>
  %s0 = tosa.slice %p, %o0, %size : (tensor<1x6x2x2xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x2x2xf32>
  %s2 = tosa.slice %p, %o2, %size : (tensor<1x6x2x2xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x2x2xf32>
  %sum = tosa.add %s0, %s2 : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %y = tosa.mul %t, %sum, %shift : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1xi8>) -> tensor<1x4x2x2xf32>
  %back = tosa.transpose %y {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x2x4xf32>
  return %back : tensor<1x2x2x4xf32>
}

// -----

// Near miss: the same cluster with an operand from outside that is neither
// a transpose nor a constant (a function argument in NCHW). Clusters are
// only sunk when every operand entering them is one of those, so this one
// stays in NCHW (op by op nothing can move either).
// CHECK-LABEL: func.func @cluster_with_foreign_operand
// CHECK: tosa.transpose %{{.*}} {perms = array<i32: 0, 3, 1, 2>}
// CHECK: tosa.mul
// CHECK: tosa.add
func.func @cluster_with_foreign_operand(%x: tensor<1x2x2x4xf32>, %z: tensor<1x4x2x2xf32>) -> tensor<1x2x2x4xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x2x2x4xf32>) -> tensor<1x4x2x2xf32>
  %sq = tosa.mul %t, %t, %shift : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1xi8>) -> tensor<1x4x2x2xf32>
  %sum = tosa.add %sq, %z : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %y = tosa.mul %t, %sum, %shift : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1xi8>) -> tensor<1x4x2x2xf32>
  %back = tosa.transpose %y {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x2x4xf32>
  return %back : tensor<1x2x2x4xf32>
}

// -----

// A symbolic leading batch (issue 33) moves with the transposes like any
// other dimension: the pair around the ReLU between two NHWC windows
// cancels, and the batch stays `?` in every type.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x16x16x8xf32>)
// CHECK-NOT: tosa.transpose
// CHECK: %[[R:.*]] = tosa.clamp %[[X]] {{.*}} : (tensor<?x16x16x8xf32>) -> tensor<?x16x16x8xf32>
// CHECK-NOT: tosa.transpose
// CHECK: tosa.max_pool2d %[[R]] {{.*}} : (tensor<?x16x16x8xf32>) -> tensor<?x8x8x8xf32>
func.func @dynamic_batch(%x: tensor<?x16x16x8xf32>) -> tensor<?x8x8x8xf32> {
  %0 = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<?x16x16x8xf32>) -> tensor<?x8x16x16xf32>
  %1 = tosa.clamp %0 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<?x8x16x16xf32>) -> tensor<?x8x16x16xf32>
  %2 = tosa.transpose %1 {perms = array<i32: 0, 2, 3, 1>} : (tensor<?x8x16x16xf32>) -> tensor<?x16x16x8xf32>
  %3 = tosa.max_pool2d %2 {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<?x16x16x8xf32>) -> tensor<?x8x8x8xf32>
  return %3 : tensor<?x8x8x8xf32>
}

// -----

// A transpose to NCHW before a global pool's reshape sinks through it with
// a symbolic batch too: the `?` is a group of its own (the reshape's
// inferred -1), the static dimensions merge as for a static batch.
// CHECK-LABEL: func.func @dynamic_batch_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<?x8x8x4xf32>)
// CHECK: %[[S:.*]] = tosa.const_shape {values = dense<[-1, 64, 4]> : tensor<3xindex>}
// CHECK: %[[R:.*]] = tosa.reshape %[[X]], %[[S]] : (tensor<?x8x8x4xf32>, !tosa.shape<3>) -> tensor<?x64x4xf32>
// CHECK: tosa.transpose %[[R]] {perms = array<i32: 0, 2, 1>} : (tensor<?x64x4xf32>) -> tensor<?x4x64xf32>
func.func @dynamic_batch_reshape(%x: tensor<?x8x8x4xf32>) -> tensor<?x4x64xf32> {
  %0 = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<?x8x8x4xf32>) -> tensor<?x4x8x8xf32>
  %s = tosa.const_shape {values = dense<[-1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %1 = tosa.reshape %0, %s : (tensor<?x4x8x8xf32>, !tosa.shape<3>) -> tensor<?x4x64xf32>
  return %1 : tensor<?x4x64xf32>
}

// -----

// A squeeze-and-excitation block as the ONNX importer writes it between a
// depthwise convolution and a 1x1 convolution (EfficientNet's): SiLU,
// global pool and channel scale in NCHW, the scale computed in NHWC by 1x1
// convolutions and brought to [1,C,1,1] by a reshape. That reshape only
// moves unit dimensions as the transpose does, so the cluster takes it as
// a transposed operand: everything runs channels-last, the pool reduces
// over H*W (axis 1), the scale multiplies [1,1,1,C] into the NHWC data,
// and no transpose is left.
// CHECK-LABEL: func.func @squeeze_excitation
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x8xf32>
// CHECK-NOT: tosa.transpose
// CHECK: %[[SG:.*]] = tosa.sigmoid %[[X]] : (tensor<1x4x4x8xf32>)
// CHECK: %[[SILU:.*]] = tosa.mul %[[X]], %[[SG]], %{{.*}} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1xi8>) -> tensor<1x4x4x8xf32>
// CHECK: %[[FLAT:.*]] = tosa.reshape %[[SILU]], %{{.*}} -> tensor<1x16x8xf32>
// CHECK: tosa.reduce_sum %[[FLAT]] {axis = 1 : i32} : (tensor<1x16x8xf32>) -> tensor<1x1x8xf32>
// CHECK: %[[FC:.*]] = tosa.conv2d
// CHECK: %[[GATE:.*]] = tosa.sigmoid %[[FC]] : (tensor<1x1x1x8xf32>)
// CHECK: %[[Y:.*]] = tosa.mul %[[GATE]], %[[SILU]], %{{.*}} : (tensor<1x1x1x8xf32>, tensor<1x4x4x8xf32>, tensor<1xi8>) -> tensor<1x4x4x8xf32>
// CHECK: %[[OUT:.*]] = tosa.conv2d %[[Y]]
// CHECK: return %[[OUT]]
// CHECK-NOT: tosa.transpose
func.func @squeeze_excitation(%x: tensor<1x4x4x8xf32>, %w1: tensor<8x1x1x8xf32>, %w2: tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32> {
  %b = "tosa.const"() <{values = dense<0.0> : tensor<8xf32>}> : () -> tensor<8xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %scale = "tosa.const"() <{values = dense<0.0625> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %flat = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %nhwc = tosa.const_shape {values = dense<[1, 1, 1, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %nchw = tosa.const_shape {values = dense<[1, 8, 1, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %sg = tosa.sigmoid %t : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %silu = tosa.mul %t, %sg, %shift : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1xi8>) -> tensor<1x8x4x4xf32>
  %r = tosa.reshape %silu, %flat : (tensor<1x8x4x4xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %sum = tosa.reduce_sum %r {axis = 2 : i32} : (tensor<1x8x16xf32>) -> tensor<1x8x1xf32>
  %mean = tosa.mul %sum, %scale, %shift : (tensor<1x8x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x1xf32>
  %m4 = tosa.reshape %mean, %nhwc : (tensor<1x8x1xf32>, !tosa.shape<4>) -> tensor<1x1x1x8xf32>
  %fc = tosa.conv2d %m4, %w1, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x1x1x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1x8xf32>
  %fcc = tosa.reshape %fc, %nchw : (tensor<1x1x1x8xf32>, !tosa.shape<4>) -> tensor<1x8x1x1xf32>
  %gate = tosa.sigmoid %fcc : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %y = tosa.mul %gate, %silu, %shift : (tensor<1x8x1x1xf32>, tensor<1x8x4x4xf32>, tensor<1xi8>) -> tensor<1x8x4x4xf32>
  %back = tosa.transpose %y {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  %out = tosa.conv2d %back, %w2, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x8xf32>
  return %out : tensor<1x4x4x8xf32>
}

// -----

// A row permutation of a matmul's left operand (sequence-major tokens:
// [B, S, E] -> [S, B, E]) whose product is transposed back: the matmul
// multiplies the rows in their source order and both transposes vanish.
// CHECK-LABEL: func.func @rows_permuted_around_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x16xf32>, %[[W:.*]]: tensor<1x16x8xf32>)
// CHECK-NOT: tosa.transpose
// CHECK: %[[R:.*]] = tosa.reshape %[[X]], %{{.*}} : (tensor<2x5x16xf32>, !tosa.shape<3>) -> tensor<1x10x16xf32>
// CHECK: %[[M:.*]] = tosa.matmul %[[R]], %[[W]]
// CHECK: %[[Y:.*]] = tosa.reshape %[[M]], %{{.*}} : (tensor<1x10x8xf32>, !tosa.shape<3>) -> tensor<2x5x8xf32>
// CHECK-NOT: tosa.transpose
// CHECK: return %[[Y]]
func.func @rows_permuted_around_matmul(%x: tensor<2x5x16xf32>, %w: tensor<1x16x8xf32>) -> tensor<2x5x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %rows = tosa.const_shape {values = dense<[1, 10, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %seq = tosa.const_shape {values = dense<[5, 2, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t = tosa.transpose %x {perms = array<i32: 1, 0, 2>} : (tensor<2x5x16xf32>) -> tensor<5x2x16xf32>
  %r = tosa.reshape %t, %rows : (tensor<5x2x16xf32>, !tosa.shape<3>) -> tensor<1x10x16xf32>
  %m = tosa.matmul %r, %w, %zp, %zp : (tensor<1x10x16xf32>, tensor<1x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x10x8xf32>
  %p = tosa.reshape %m, %seq : (tensor<1x10x8xf32>, !tosa.shape<3>) -> tensor<5x2x8xf32>
  %y = tosa.transpose %p {perms = array<i32: 1, 0, 2>} : (tensor<5x2x8xf32>) -> tensor<2x5x8xf32>
  return %y : tensor<2x5x8xf32>
}

// -----

// A fused projection split in thirds along a dimension of its own
// ([S, B, 3, E]), each third's heads split and transposed to [B*H, S, D]
// and viewed as [B, H, S, D]: each third is a slice of the projection's
// columns, and its chain of reshapes and transposes one transpose.
// CHECK-LABEL: func.func @split_heads
// CHECK-SAME: (%[[QKV:.*]]: tensor<1x10x48xf32>)
// CHECK-DAG: %[[START:.*]] = tosa.const_shape {values = dense<[0, 0, 16]> : tensor<3xindex>}
// CHECK-DAG: %[[SIZE:.*]] = tosa.const_shape {values = dense<[1, 10, 16]> : tensor<3xindex>}
// CHECK: %[[K:.*]] = tosa.slice %[[QKV]], %[[START]], %[[SIZE]] : (tensor<1x10x48xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x10x16xf32>
// CHECK: %[[SBHD:.*]] = tosa.reshape %[[K]], %{{.*}} -> tensor<5x2x2x8xf32>
// CHECK: %[[BHSD:.*]] = tosa.transpose %[[SBHD]] {perms = array<i32: 1, 2, 0, 3>}
// CHECK: return %[[BHSD]]
func.func @split_heads(%qkv: tensor<1x10x48xf32>) -> tensor<2x2x5x8xf32> {
  %thirds = tosa.const_shape {values = dense<[5, 2, 3, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %start = tosa.const_shape {values = dense<[0, 0, 1, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[5, 2, 1, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %heads = tosa.const_shape {values = dense<[5, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %bhsd = tosa.const_shape {values = dense<[2, 2, 5, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %r = tosa.reshape %qkv, %thirds : (tensor<1x10x48xf32>, !tosa.shape<4>) -> tensor<5x2x3x16xf32>
  %k = tosa.slice %r, %start, %size : (tensor<5x2x3x16xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<5x2x1x16xf32>
  %h = tosa.reshape %k, %heads : (tensor<5x2x1x16xf32>, !tosa.shape<3>) -> tensor<5x4x8xf32>
  %t = tosa.transpose %h {perms = array<i32: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %y = tosa.reshape %t, %bhsd : (tensor<4x5x8xf32>, !tosa.shape<4>) -> tensor<2x2x5x8xf32>
  return %y : tensor<2x2x5x8xf32>
}

// -----

// The attention's output permuted (2, 0, 1, 3) to [S, B, H, D] for the
// output projection: the heads move next to the head dimension first (a
// transpose the attention kernel writes through strides), the rest is a
// row permutation that moves past the matmul and cancels there.
// CHECK-LABEL: func.func @attention_output_rows
// CHECK: %[[A:.*]] = tcc.attention
// CHECK: %[[BSHD:.*]] = tosa.transpose %[[A]] {perms = array<i32: 0, 2, 1, 3>} : (tensor<2x2x5x8xf32>) -> tensor<2x5x2x8xf32>
// CHECK: %[[ROWS:.*]] = tosa.reshape %[[BSHD]], %{{.*}} -> tensor<1x10x16xf32>
// CHECK: %[[M:.*]] = tosa.matmul %[[ROWS]]
// CHECK: %[[Y:.*]] = tosa.reshape %[[M]], %{{.*}} -> tensor<2x5x16xf32>
// CHECK-NOT: tosa.transpose
// CHECK: return %[[Y]]
func.func @attention_output_rows(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>, %w: tensor<1x16x16xf32>) -> tensor<2x5x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %rows = tosa.const_shape {values = dense<[1, 10, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %seq = tosa.const_shape {values = dense<[5, 2, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %a = tcc.attention %q, %k, %v scale = 0.353553385 : tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32> -> tensor<2x2x5x8xf32>
  %t = tosa.transpose %a {perms = array<i32: 2, 0, 1, 3>} : (tensor<2x2x5x8xf32>) -> tensor<5x2x2x8xf32>
  %r = tosa.reshape %t, %rows : (tensor<5x2x2x8xf32>, !tosa.shape<3>) -> tensor<1x10x16xf32>
  %m = tosa.matmul %r, %w, %zp, %zp : (tensor<1x10x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x10x16xf32>
  %p = tosa.reshape %m, %seq : (tensor<1x10x16xf32>, !tosa.shape<3>) -> tensor<5x2x16xf32>
  %y = tosa.transpose %p {perms = array<i32: 1, 0, 2>} : (tensor<5x2x16xf32>) -> tensor<2x5x16xf32>
  return %y : tensor<2x5x16xf32>
}

// -----

// Near miss: the contracted dimension is not the source's last, and the
// source is no attention: the transpose stays before the matmul.
// CHECK-LABEL: func.func @contracted_dimension_moves
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x5xf32>
// CHECK: %[[T:.*]] = tosa.transpose %[[X]] {perms = array<i32: 2, 0, 1>}
// CHECK: %[[R:.*]] = tosa.reshape %[[T]]
// CHECK: tosa.matmul %[[R]]
func.func @contracted_dimension_moves(%x: tensor<2x16x5xf32>, %w: tensor<1x16x8xf32>) -> tensor<1x10x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %rows = tosa.const_shape {values = dense<[1, 10, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t = tosa.transpose %x {perms = array<i32: 2, 0, 1>} : (tensor<2x16x5xf32>) -> tensor<5x2x16xf32>
  %r = tosa.reshape %t, %rows : (tensor<5x2x16xf32>, !tosa.shape<3>) -> tensor<1x10x16xf32>
  %m = tosa.matmul %r, %w, %zp, %zp : (tensor<1x10x16xf32>, tensor<1x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x10x8xf32>
  return %m : tensor<1x10x8xf32>
}
