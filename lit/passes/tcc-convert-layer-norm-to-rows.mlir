// tcc-convert-layer-norm-to-rows turns last-axis f32 layer norms into
// tcc.layer_norm_rows (one row kernel later) and leaves the others alone.
// RUN: tcc-opt %s --tcc-convert-layer-norm-to-rows | FileCheck %s

// CHECK-LABEL: func.func @last_axis
// CHECK-SAME: (%[[X:.*]]: tensor<4x3x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x3x32xf32>
// CHECK: %[[Y:.*]] = tcc.layer_norm_rows ins(%[[X]], %[[G]], %[[B]] : tensor<4x3x32xf32>, tensor<32xf32>, tensor<32xf32>) outs(%[[E]] : tensor<4x3x32xf32>) epsilon = 9.99999974E-6 -> tensor<4x3x32xf32>
// CHECK: %[[Z:.*]] = tcc.layer_norm_rows ins(%[[Y]], %[[B]], %[[G]] : {{.*}}) epsilon = 1.000000e-03
// CHECK: return %[[Z]]
func.func @last_axis(%x: tensor<4x3x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x3x32xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : tensor<4x3x32xf32>, tensor<32xf32>
  %1 = tcc.layer_norm %0, %b, %g axis = 2 epsilon = 1.0e-03 : tensor<4x3x32xf32>, tensor<32xf32>
  return %1 : tensor<4x3x32xf32>
}

// Over the last two axes: left to tcc-decompose-composites.
// CHECK-LABEL: func.func @trailing_two
// CHECK: tcc.layer_norm %{{.*}} axis = 1
// CHECK-NOT: tcc.layer_norm_rows
func.func @trailing_two(%x: tensor<2x8x16xf32>, %g: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %0 = tcc.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 : tensor<2x8x16xf32>, tensor<8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @half
// CHECK: tcc.layer_norm
// CHECK-NOT: tcc.layer_norm_rows
func.func @half(%x: tensor<4x16xf16>, %g: tensor<16xf16>) -> tensor<4x16xf16> {
  %0 = tcc.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 : tensor<4x16xf16>, tensor<16xf16>
  return %0 : tensor<4x16xf16>
}

// A symbolic leading batch (issue 33): the destination reads it back with
// tensor.dim; the rows are static.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x3x32xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x3x32xf32>
// CHECK: tcc.layer_norm_rows ins(%[[X]], %[[G]], %[[B]] : tensor<?x3x32xf32>, tensor<32xf32>, tensor<32xf32>) outs(%[[E]] : tensor<?x3x32xf32>) epsilon = 9.99999974E-6 -> tensor<?x3x32xf32>
func.func @dynamic_batch(%x: tensor<?x3x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x3x32xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : tensor<?x3x32xf32>, tensor<32xf32>
  return %0 : tensor<?x3x32xf32>
}
