// tcc-convert-softmax-to-linalg turns last-axis f32 softmaxes into
// linalg.softmax (one row kernel later) and leaves the others alone.
// RUN: tcc-opt %s --tcc-convert-softmax-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @last_axis
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x10xf32>
// CHECK: %[[Y:.*]] = linalg.softmax dimension(1) ins(%[[X]] : tensor<4x10xf32>) outs(%[[E]] : tensor<4x10xf32>)
// CHECK: %[[Z:.*]] = linalg.softmax dimension(1) ins(%[[Y]]
// CHECK: return %[[Z]]
func.func @last_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = tcc.softmax %x axis = -1 : tensor<4x10xf32>
  %1 = tcc.softmax %0 axis = 1 : tensor<4x10xf32>
  return %1 : tensor<4x10xf32>
}

// CHECK-LABEL: func.func @other_axis
// CHECK: tcc.softmax %{{.*}} axis = 0
// CHECK-NOT: linalg.softmax
func.func @other_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = tcc.softmax %x axis = 0 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// CHECK-LABEL: func.func @half
// CHECK: tcc.softmax
func.func @half(%x: tensor<4x10xf16>) -> tensor<4x10xf16> {
  %0 = tcc.softmax %x axis = 1 : tensor<4x10xf16>
  return %0 : tensor<4x10xf16>
}

// A symbolic leading batch (issue 33): the destination reads it back with
// tensor.dim; the rows are static.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x10xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x10xf32>
// CHECK: linalg.softmax dimension(1) ins(%[[X]] : tensor<?x10xf32>) outs(%[[E]] : tensor<?x10xf32>) -> tensor<?x10xf32>
func.func @dynamic_batch(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %0 = tcc.softmax %x axis = -1 : tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}

// A symbolic last axis (attention's scores over a sequence) is a row of
// a length known at run time, which the row template takes; the
// destination reads both extents back.
// CHECK-LABEL: func.func @dynamic_row
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?xf32>
// CHECK: %[[T:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]], %[[T]]) : tensor<?x?xf32>
// CHECK: linalg.softmax dimension(1) ins(%[[X]] : tensor<?x?xf32>) outs(%[[E]] : tensor<?x?xf32>)
// CHECK-NOT: tcc.softmax
func.func @dynamic_row(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tcc.softmax %x axis = 1 : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
