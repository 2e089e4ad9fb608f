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

// A symbolic leading batch (issue 33); the rows are static.
// CHECK-LABEL: func.func @layer_norm_rows_dynamic_batch
// CHECK: tcc.layer_norm_rows ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%{{.*}} : tensor<?x64xf32>)
func.func @layer_norm_rows_dynamic_batch(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %i: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = tcc.layer_norm_rows ins(%x, %g, %g : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%i : tensor<?x64xf32>) epsilon = 1.0e-05 -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @layer_norm_rows_buffers
// CHECK: tcc.layer_norm_rows ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x3x16xf32>, memref<16xf32>, memref<16xf32>) outs(%{{.*}} : memref<2x3x16xf32>) epsilon = 1.000000e-03{{$}}
func.func @layer_norm_rows_buffers(%x: memref<2x3x16xf32>, %g: memref<16xf32>, %o: memref<2x3x16xf32>) {
  tcc.layer_norm_rows ins(%x, %g, %g : memref<2x3x16xf32>, memref<16xf32>, memref<16xf32>) outs(%o : memref<2x3x16xf32>) epsilon = 1.0e-03
  return
}

// CHECK-LABEL: func.func @attention
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : tensor<2x1x1x8xf32> scale = 1.250000e-01 causal = true : tensor<2x4x6x64xf32>, tensor<2x2x8x64xf32>, tensor<2x2x8x64xf32> -> tensor<2x4x6x64xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 1.000000e+00 : tensor<2x4x6x64xf32>
func.func @attention(%q: tensor<2x4x6x64xf32>, %k: tensor<2x2x8x64xf32>, %v: tensor<2x2x8x64xf32>, %m: tensor<2x1x1x8xf32>) -> tensor<2x4x6x64xf32> {
  %0 = tcc.attention %q, %k, %v mask %m : tensor<2x1x1x8xf32> scale = 0.125 causal = true : tensor<2x4x6x64xf32>, tensor<2x2x8x64xf32>, tensor<2x2x8x64xf32> -> tensor<2x4x6x64xf32>
  %1 = tcc.attention %0, %k, %v scale = 1.0 : tensor<2x4x6x64xf32>, tensor<2x2x8x64xf32>, tensor<2x2x8x64xf32> -> tensor<2x4x6x64xf32>
  return %1 : tensor<2x4x6x64xf32>
}

// CHECK-LABEL: func.func @flash_attention
// CHECK: tcc.flash_attention ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) outs(%{{.*}} : tensor<1x2x4x8xf32>) scale = 5.000000e-01 causal = true -> tensor<1x2x4x8xf32>
// CHECK: tcc.flash_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>) outs(%{{.*}} : memref<1x2x4x8xf32>) scale = 5.000000e-01{{$}}
func.func @flash_attention(%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xf32>, %b: memref<1x2x4x8xf32>, %o: memref<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %0 = tcc.flash_attention ins(%q, %q, %q, %m : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) outs(%q : tensor<1x2x4x8xf32>) scale = 0.5 causal = true -> tensor<1x2x4x8xf32>
  tcc.flash_attention ins(%b, %b, %b : memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>) outs(%o : memref<1x2x4x8xf32>) scale = 0.5
  return %0 : tensor<1x2x4x8xf32>
}
