// Phase 1 (input): verification, the coverage gate and the recorded interface.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=input | FileCheck %s
// RUN: not tcc compile %s --compile-to=input 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tcc.io_names = ["", ""], tcc.num_outputs = 1 : i64
// CHECK: tosa.transpose
// CHECK: tcc.softmax

// BAD: input.mlir:[[# @LINE + 2]]:8: error: unsupported op 'tosa.sin': tcc cannot compile it
func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.sin %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
