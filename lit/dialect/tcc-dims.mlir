// The symbolic dimensions attribute (#tcc.dims, written by `tcc compile
// --dim`) round-trips through its assembly form and is rejected with a
// located error when its ranges are invalid.
// RUN: tcc-opt %s --split-input-file | FileCheck %s
// RUN: tcc-opt %S/Inputs/dims-invalid.mlir --split-input-file --verify-diagnostics

// CHECK: tcc.dims = #tcc.dims<names = ["batch", "seq"], min = [1, 1], max = [64, 512]>
// CHECK: func.func @f(%{{.*}}: tensor<?x?x8xf32> {tcc.dim_names = ["batch", "seq", ""]})
module attributes {tcc.dims = #tcc.dims<names = ["batch", "seq"], min = [1, 1], max = [64, 512]>} {
  func.func @f(%x: tensor<?x?x8xf32> {tcc.dim_names = ["batch", "seq", ""]}) -> tensor<?x?x8xf32> {
    return %x : tensor<?x?x8xf32>
  }
}
