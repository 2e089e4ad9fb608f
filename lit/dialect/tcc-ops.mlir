// Round trip of every tcc dialect op: the printed form parses back to the
// same IR, in custom and generic form.
// RUN: tcc-opt %s | tcc-opt | FileCheck %s
// RUN: tcc-opt %s --mlir-print-op-generic | tcc-opt | FileCheck %s

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x10xf32>)
// CHECK: %[[Y:.*]] = tcc.softmax %[[X]] axis = -1 : tensor<2x10xf32>
// CHECK: return %[[Y]]
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = tcc.softmax %x axis = -1 : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK: tcc.log_softmax %{{.*}} axis = 0 : tensor<3x4x5xf16>
func.func @log_softmax(%x: tensor<3x4x5xf16>) -> tensor<3x4x5xf16> {
  %0 = tcc.log_softmax %x axis = 0 : tensor<3x4x5xf16>
  return %0 : tensor<3x4x5xf16>
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>, %[[G:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<8x16xf32>)
// CHECK: tcc.layer_norm %[[X]], %[[G]], %[[B]] axis = 1 epsilon = 9.99999974E-6 : tensor<2x8x16xf32>, tensor<8x16xf32>
func.func @layer_norm(%x: tensor<2x8x16xf32>, %g: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<2x8x16xf32>, tensor<8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// The default approximation ("none") is not printed: the operand is
// followed directly by the type; "tanh" is.
// CHECK-LABEL: func.func @gelu
// CHECK: %[[G:[^ ]+]] = tcc.gelu %{{[^ ]+}} : tensor<4x16xf32>
// CHECK-NEXT: tcc.gelu %[[G]] approximate = "tanh" : tensor<4x16xf32>
func.func @gelu(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = tcc.gelu %x approximate = "none" : tensor<4x16xf32>
  %1 = tcc.gelu %0 approximate = "tanh" : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @silu
// CHECK: tcc.silu %{{.*}} : tensor<7xbf16>
func.func @silu(%x: tensor<7xbf16>) -> tensor<7xbf16> {
  %0 = tcc.silu %x : tensor<7xbf16>
  return %0 : tensor<7xbf16>
}

// The destination-style row layer norm, on tensors and on memrefs.
// CHECK-LABEL: func.func @layer_norm_rows
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[I:.*]]: tensor<8x64xf32>)
// CHECK: %[[Y:.*]] = tcc.layer_norm_rows ins(%[[X]], %[[G]], %[[B]] : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%[[I]] : tensor<8x64xf32>) epsilon = 9.99999974E-6 -> tensor<8x64xf32>
// CHECK: return %[[Y]]
func.func @layer_norm_rows(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %i: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = tcc.layer_norm_rows ins(%x, %g, %b : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%i : tensor<8x64xf32>) epsilon = 1.0e-05 -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// CHECK-LABEL: func.func @layer_norm_rows_buffers
// CHECK: tcc.layer_norm_rows ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x3x16xf32>, memref<16xf32>, memref<16xf32>) outs(%{{.*}} : memref<2x3x16xf32>) epsilon = 1.000000e-03{{$}}
func.func @layer_norm_rows_buffers(%x: memref<2x3x16xf32>, %g: memref<16xf32>, %o: memref<2x3x16xf32>) {
  tcc.layer_norm_rows ins(%x, %g, %g : memref<2x3x16xf32>, memref<16xf32>, memref<16xf32>) outs(%o : memref<2x3x16xf32>) epsilon = 1.0e-03
  return
}
