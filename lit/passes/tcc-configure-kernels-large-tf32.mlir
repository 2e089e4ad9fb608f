// tcc-configure-kernels{large-tf32-tiles=true} (what `tcc compile
// --backend=cuda --precision=tf32` asks for): on nvidia, a matmul the
// table gives 128x128 tiles takes the 256x128 tile of the large wgmma body
// where M, N and K divide 256, 128 and 32; other shapes, convolutions and
// other targets keep the table's tile, and so does every matmul without
// the option.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia large-tf32-tiles=true})' | FileCheck %s
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia})' | FileCheck %s --check-prefix=TABLE --implicit-check-not="tile_m = 256"
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=generic large-tf32-tiles=true})' | FileCheck %s --check-prefix=GENERIC --implicit-check-not="tile_m = 256"
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{large-tf32-tiles=maybe})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: large-tf32-tiles

// CHECK-LABEL: func.func @fits
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 256, tile_n = 128, tile_k = 8, work_m = 16, work_n = 8, split_k = 1, batch = 1, m = 2048, n = 2048, k = 64>
// TABLE-LABEL: func.func @fits
// Without the option (exact fp32), the nvidia fp32 matmul tile.
// TABLE: tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 2048, n = 2048, k = 64>
// GENERIC-LABEL: func.func @fits
func.func @fits(%x: tensor<1x2048x64xf32>, %w: tensor<1x64x2048xf32>) -> tensor<1x2048x2048xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2048x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2048x2048xf32>
  return %h : tensor<1x2048x2048xf32>
}

// M = 2176 is not a multiple of 256: the table's 128x128.
// CHECK-LABEL: func.func @rows
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 2176, n = 2048, k = 64>
func.func @rows(%x: tensor<1x2176x64xf32>, %w: tensor<1x64x2048xf32>) -> tensor<1x2176x2048xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2176x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2176x2048xf32>
  return %h : tensor<1x2176x2048xf32>
}

// K = 48 is not a multiple of 32.
// CHECK-LABEL: func.func @short_k
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128
func.func @short_k(%x: tensor<1x2048x48xf32>, %w: tensor<1x48x2048xf32>) -> tensor<1x2048x2048xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2048x48xf32>, tensor<1x48x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2048x2048xf32>
  return %h : tensor<1x2048x2048xf32>
}

// A small product: the table's own tile (not 128x128), untouched.
// CHECK-LABEL: func.func @small
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16
func.func @small(%x: tensor<1x256x64xf32>, %w: tensor<1x64x256xf32>) -> tensor<1x256x256xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x256x64xf32>, tensor<1x64x256xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x256x256xf32>
  return %h : tensor<1x256x256xf32>
}
