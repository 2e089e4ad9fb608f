// tcc-unique-results copies a value that a function returns more than
// once, so that every output gets its own buffer.
// RUN: tcc-opt %s --tcc-unique-results | FileCheck %s

// CHECK-LABEL: func.func @twice
// CHECK: %[[E:.*]] = tosa.exp
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[COPY:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<4xf32>) outs(%[[INIT]] : tensor<4xf32>)
// CHECK: %[[INIT2:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[COPY2:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<4xf32>) outs(%[[INIT2]] : tensor<4xf32>)
// CHECK: return %[[E]], %[[COPY]], %[[COPY2]]
func.func @twice(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %e = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %e, %e, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
