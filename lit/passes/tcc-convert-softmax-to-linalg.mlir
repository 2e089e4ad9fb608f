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
