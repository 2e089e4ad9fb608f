// tcc-unshare-empty-tensors gives each linalg/tcc op that writes into a
// shared tensor.empty an empty tensor of its own (the first keeps the
// original), so one-shot bufferization does not chain the intermediates
// through one buffer, which becomes the output argument when the chain
// ends in a result. Other users (slices) keep the original.
// RUN: tcc-opt %s --split-input-file --tcc-unshare-empty-tensors | FileCheck %s

// CHECK-LABEL: func.func @chain(
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[A:.*]] = linalg.exp ins(%{{.*}} : tensor<4xf32>) outs(%[[E]] : tensor<4xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[B:.*]] = linalg.exp ins(%[[A]] : tensor<4xf32>) outs(%[[E1]] : tensor<4xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[C:.*]] = linalg.exp ins(%[[B]] : tensor<4xf32>) outs(%[[E2]] : tensor<4xf32>)
// CHECK: return %[[C]]
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %b = linalg.exp ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %c = linalg.exp ins(%b : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// A dynamic empty tensor is copied with its extent; a slice of it keeps
// the original.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[X:.*]]: tensor<?xf32>, %[[N:.*]]: index
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK: linalg.exp ins(%[[X]] : tensor<?xf32>) outs(%[[E]] : tensor<?xf32>)
// CHECK: %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK: linalg.exp ins(%{{.*}} : tensor<?xf32>) outs(%[[E1]] : tensor<?xf32>)
// CHECK: tensor.extract_slice %[[E]][0] [2] [1]
func.func @dynamic(%x: tensor<?xf32>, %n: index) -> (tensor<?xf32>, tensor<2xf32>) {
  %e = tensor.empty(%n) : tensor<?xf32>
  %a = linalg.exp ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %b = linalg.exp ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %s = tensor.extract_slice %e[0] [2] [1] : tensor<?xf32> to tensor<2xf32>
  return %b, %s : tensor<?xf32>, tensor<2xf32>
}
