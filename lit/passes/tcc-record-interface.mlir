// tcc-record-interface records the result count and I/O names of each
// function before bufferization turns results into output arguments.
// RUN: tcc-opt %s --tcc-record-interface | FileCheck %s

// CHECK-LABEL: func.func @two_results
// CHECK-SAME: tcc.io_names = ["x", "", "probs", ""]
// CHECK-SAME: tcc.num_outputs = 2 : i64
func.func @two_results(%x: tensor<4xf32> {tcc.name = "x"}, %y: tensor<4xf32>) -> (tensor<4xf32> {tcc.name = "probs"}, tensor<4xf32>) {
  return %x, %y : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @no_names
// CHECK-SAME: tcc.io_names = ["", ""]
// CHECK-SAME: tcc.num_outputs = 1 : i64
func.func @no_names(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
