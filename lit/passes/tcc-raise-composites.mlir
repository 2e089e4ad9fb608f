// tcc-raise-composites replaces softmax and layer norm written in primitive
// TOSA ops by tcc.softmax / tcc.layer_norm, and leaves near misses alone.
// RUN: tcc-opt %s --split-input-file --tcc-raise-composites | FileCheck %s

// The shifted softmax, as tcc-decompose-composites writes it.
// CHECK-LABEL: func.func @softmax_shifted
// CHECK-SAME: (%[[X:.*]]: tensor<2x10xf32>)
// CHECK-NOT: tosa.reduce
// CHECK: %[[Y:.*]] = tcc.softmax %[[X]] axis = 1 : tensor<2x10xf32>
// CHECK-NOT: tosa.exp
// CHECK: return %[[Y]]
func.func @softmax_shifted(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  %d = tosa.sub %x, %m : (tensor<2x10xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
  %e = tosa.exp %d : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  %r = tosa.reciprocal %s : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %y = tosa.mul %e, %r, %shift : (tensor<2x10xf32>, tensor<2x1xf32>, tensor<1xi8>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}

// -----

// Without the shift by the maximum, reciprocal first in the product.
// CHECK-LABEL: func.func @softmax_unshifted
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x8xf32>)
// CHECK: %[[Y:.*]] = tcc.softmax %[[X]] axis = 2 : tensor<3x4x8xf32>
// CHECK-NOT: tosa.
// CHECK: return %[[Y]]
func.func @softmax_unshifted(%x: tensor<3x4x8xf32>) -> tensor<3x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %e = tosa.exp %x : (tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  %s = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<3x4x8xf32>) -> tensor<3x4x1xf32>
  %r = tosa.reciprocal %s : (tensor<3x4x1xf32>) -> tensor<3x4x1xf32>
  %y = tosa.mul %r, %e, %shift : (tensor<3x4x1xf32>, tensor<3x4x8xf32>, tensor<1xi8>) -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}

// -----

// tcc.softmax takes any axis: a softmax over the first axis is raised too
// (the linalg phase expands it again; only last-axis ones become one kernel).
// CHECK-LABEL: func.func @softmax_first_axis
// CHECK-SAME: (%[[X:.*]]: tensor<5x7xf32>)
// CHECK: %[[Y:.*]] = tcc.softmax %[[X]] axis = 0 : tensor<5x7xf32>
// CHECK: return %[[Y]]
func.func @softmax_first_axis(%x: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 0 : i32} : (tensor<5x7xf32>) -> tensor<1x7xf32>
  %d = tosa.sub %x, %m : (tensor<5x7xf32>, tensor<1x7xf32>) -> tensor<5x7xf32>
  %e = tosa.exp %d : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %s = tosa.reduce_sum %e {axis = 0 : i32} : (tensor<5x7xf32>) -> tensor<1x7xf32>
  %r = tosa.reciprocal %s : (tensor<1x7xf32>) -> tensor<1x7xf32>
  %y = tosa.mul %e, %r, %shift : (tensor<5x7xf32>, tensor<1x7xf32>, tensor<1xi8>) -> tensor<5x7xf32>
  return %y : tensor<5x7xf32>
}

// -----

// Near miss: the sum of exponentials is also a result; nothing is raised.
// CHECK-LABEL: func.func @softmax_sum_escapes
// CHECK-NOT: tcc.softmax
// CHECK: %[[S:.*]] = tosa.reduce_sum
// CHECK: %[[R:.*]] = tosa.reciprocal %[[S]]
// CHECK: %[[Y:.*]] = tosa.mul %{{.*}}, %[[R]]
// CHECK: return %[[Y]], %[[S]]
func.func @softmax_sum_escapes(%x: tensor<2x10xf32>) -> (tensor<2x10xf32>, tensor<2x1xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  %d = tosa.sub %x, %m : (tensor<2x10xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
  %e = tosa.exp %d : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  %r = tosa.reciprocal %s : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %y = tosa.mul %e, %r, %shift : (tensor<2x10xf32>, tensor<2x1xf32>, tensor<1xi8>) -> tensor<2x10xf32>
  return %y, %s : tensor<2x10xf32>, tensor<2x1xf32>
}

// -----

// The maximum is taken over another axis than the sum: not the shifted
// softmax of x, but still exactly the (unshifted) softmax of x - max along
// axis 1, which is what is raised; the maximum stays.
// CHECK-LABEL: func.func @softmax_axes_differ
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK: %[[M:.*]] = tosa.reduce_max %[[X]] {axis = 0 : i32}
// CHECK: %[[D:.*]] = tosa.sub %[[X]], %[[M]]
// CHECK: %[[Y:.*]] = tcc.softmax %[[D]] axis = 1 : tensor<4x4xf32>
// CHECK-NOT: tosa.reduce_sum
// CHECK: return %[[Y]]
func.func @softmax_axes_differ(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 0 : i32} : (tensor<4x4xf32>) -> tensor<1x4xf32>
  %d = tosa.sub %x, %m : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %e = tosa.exp %d : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<4x4xf32>) -> tensor<4x1xf32>
  %r = tosa.reciprocal %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %e, %r, %shift : (tensor<4x4xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Near miss: f16 (the softmax kernel and the matcher are f32 only).
// CHECK-LABEL: func.func @softmax_f16
// CHECK-NOT: tcc.softmax
// CHECK: tosa.reciprocal
func.func @softmax_f16(%x: tensor<2x10xf16>) -> tensor<2x10xf16> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %e = tosa.exp %x : (tensor<2x10xf16>) -> tensor<2x10xf16>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<2x10xf16>) -> tensor<2x1xf16>
  %r = tosa.reciprocal %s : (tensor<2x1xf16>) -> tensor<2x1xf16>
  %y = tosa.mul %e, %r, %shift : (tensor<2x10xf16>, tensor<2x1xf16>, tensor<1xi8>) -> tensor<2x10xf16>
  return %y : tensor<2x10xf16>
}

// -----

// Layer norm with gamma and beta (constants shaped 1x1x16), variance through
// pow(d, 2), constants on the left of the products and sums.
// CHECK-LABEL: func.func @layer_norm_affine
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x16xf32>, %[[G:.*]]: tensor<1x1x16xf32>, %[[B:.*]]: tensor<1x1x16xf32>)
// CHECK-DAG: %[[G1:.*]] = tosa.reshape %[[G]], %{{.*}} -> tensor<16xf32>
// CHECK-DAG: %[[B1:.*]] = tosa.reshape %[[B]], %{{.*}} -> tensor<16xf32>
// CHECK: %[[Y:.*]] = tcc.layer_norm %[[X]], %[[G1]], %[[B1]] axis = 2 epsilon = 9.99999974E-6 : tensor<2x3x16xf32>, tensor<16xf32>
// CHECK-NOT: tosa.rsqrt
// CHECK: return %[[Y]]
func.func @layer_norm_affine(%x: tensor<2x3x16xf32>, %g: tensor<1x1x16xf32>, %b: tensor<1x1x16xf32>) -> tensor<2x3x16xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<6.250000e-02> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 2 : i32} : (tensor<2x3x16xf32>) -> tensor<2x3x1xf32>
  %mean = tosa.mul %n, %s1, %shift : (tensor<1x1x1xf32>, tensor<2x3x1xf32>, tensor<1xi8>) -> tensor<2x3x1xf32>
  %d = tosa.sub %x, %mean : (tensor<2x3x16xf32>, tensor<2x3x1xf32>) -> tensor<2x3x16xf32>
  %sq = tosa.pow %d, %two : (tensor<2x3x16xf32>, tensor<1x1x1xf32>) -> tensor<2x3x16xf32>
  %s2 = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<2x3x16xf32>) -> tensor<2x3x1xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<2x3x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x3x1xf32>
  %ve = tosa.add %eps, %var : (tensor<1x1x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %norm = tosa.mul %rs, %d, %shift : (tensor<2x3x1xf32>, tensor<2x3x16xf32>, tensor<1xi8>) -> tensor<2x3x16xf32>
  %scaled = tosa.mul %g, %norm, %shift : (tensor<1x1x16xf32>, tensor<2x3x16xf32>, tensor<1xi8>) -> tensor<2x3x16xf32>
  %y = tosa.add %scaled, %b : (tensor<2x3x16xf32>, tensor<1x1x16xf32>) -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// -----

// Layer norm without gamma and beta, variance through mul(d, d): the
// composite gets a scale of ones and a bias of zeros.
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK-SAME: (%[[X:.*]]: tensor<4x32xf32>)
// CHECK-DAG: %[[ONES:.*]] = "tosa.const"() <{values = dense<1.000000e+00> : tensor<32xf32>}>
// CHECK-DAG: %[[ZEROS:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<32xf32>}>
// CHECK: %[[Y:.*]] = tcc.layer_norm %[[X]], %[[ONES]], %[[ZEROS]] axis = 1 epsilon = 1.000000e-03 : tensor<4x32xf32>, tensor<32xf32>
// CHECK-NOT: tosa.reduce_sum
// CHECK: return %[[Y]]
func.func @layer_norm_plain(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-03> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %mean : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %d, %rs, %shift : (tensor<4x32xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Gamma only; beta's shape (4x32, per element) is not the normalized
// shape, so the add stays outside the composite.
// CHECK-LABEL: func.func @layer_norm_scale_only
// CHECK-SAME: (%[[X:.*]]: tensor<4x32xf32>, %[[G:.*]]: tensor<1x32xf32>, %[[B:.*]]: tensor<4x32xf32>)
// CHECK: %[[G1:.*]] = tosa.reshape %[[G]]
// CHECK: %[[ZEROS:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<32xf32>}>
// CHECK: %[[N:.*]] = tcc.layer_norm %[[X]], %[[G1]], %[[ZEROS]] axis = 1
// CHECK: %[[Y:.*]] = tosa.add %[[N]], %[[B]]
// CHECK: return %[[Y]]
func.func @layer_norm_scale_only(%x: tensor<4x32xf32>, %g: tensor<1x32xf32>, %b: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %mean : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %norm = tosa.mul %d, %rs, %shift : (tensor<4x32xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %scaled = tosa.mul %norm, %g, %shift : (tensor<4x32xf32>, tensor<1x32xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %y = tosa.add %scaled, %b : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the variance divides by N - 1 (1/31, an unbiased estimate):
// not a layer norm.
// CHECK-LABEL: func.func @layer_norm_wrong_count
// CHECK-NOT: tcc.layer_norm
// CHECK: tosa.rsqrt
func.func @layer_norm_wrong_count(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %n1 = "tosa.const"() <{values = dense<0.0322580636> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %mean : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %s2, %n1, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %d, %rs, %shift : (tensor<4x32xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the centred values are also a result.
// CHECK-LABEL: func.func @layer_norm_centred_escapes
// CHECK-NOT: tcc.layer_norm
// CHECK: %[[D:.*]] = tosa.sub
// CHECK: return %{{.*}}, %[[D]]
func.func @layer_norm_centred_escapes(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %mean : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %d, %rs, %shift : (tensor<4x32xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  return %y, %d : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Near miss: statistics over the first axis (tcc.layer_norm normalizes
// trailing dimensions only), and a zero epsilon below.
// CHECK-LABEL: func.func @layer_norm_first_axis
// CHECK-NOT: tcc.layer_norm
// CHECK: tosa.rsqrt
func.func @layer_norm_first_axis(%x: tensor<32x4xf32>) -> tensor<32x4xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 0 : i32} : (tensor<32x4xf32>) -> tensor<1x4xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<1x4xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<1x4xf32>
  %d = tosa.sub %x, %mean : (tensor<32x4xf32>, tensor<1x4xf32>) -> tensor<32x4xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<32x4xf32>, tensor<32x4xf32>, tensor<1xi8>) -> tensor<32x4xf32>
  %s2 = tosa.reduce_sum %sq {axis = 0 : i32} : (tensor<32x4xf32>) -> tensor<1x4xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<1x4xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<1x4xf32>
  %ve = tosa.add %var, %eps : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x4xf32>
  %rs = tosa.rsqrt %ve : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %y = tosa.mul %d, %rs, %shift : (tensor<32x4xf32>, tensor<1x4xf32>, tensor<1xi8>) -> tensor<32x4xf32>
  return %y : tensor<32x4xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_zero_epsilon
// CHECK-NOT: tcc.layer_norm
// CHECK: tosa.rsqrt
func.func @layer_norm_zero_epsilon(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<0.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %mean : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = tosa.mul %d, %d, %shift : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %s2, %n, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %d, %rs, %shift : (tensor<4x32xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
