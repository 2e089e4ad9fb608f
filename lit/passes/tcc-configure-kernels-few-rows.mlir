// tcc-configure-kernels gives a float product of at most 8 rows over K of
// at least 256 on nvidia the few-row form of the GEMM template (k_lanes
// work-items along K per column block, each owning every row: a decode
// step's projections, a classifier at batch 1), whatever the precision
// (its body multiplies in fp32 from the operands' storage), and a
// symbolic M whose bound is at most 8 too. Other targets, more rows, a
// short K and a tuning record's choice keep the table's.
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia})' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia half-wgmma-tiles=true})' | FileCheck %s --check-prefix=HALF
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=generic})' | FileCheck %s --check-prefix=GENERIC --implicit-check-not=k_lanes
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia candidate=0})' | FileCheck %s --check-prefix=FORCED --implicit-check-not=k_lanes

// GPT-2 small's QKV projection at batch 1: 16 columns (2 work-items of 8)
// by 128 lanes, 144 work-groups.
// CHECK-LABEL: func.func @decode_qkv
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 1, tile_n = 16, tile_k = 1, work_m = 1, work_n = 8, split_k = 1, k_lanes = 128, batch = 1, m = 1, n = 2304, k = 768>
// HALF-LABEL: func.func @decode_qkv
// HALF: k_lanes = 128
// GENERIC-LABEL: func.func @decode_qkv
// FORCED-LABEL: func.func @decode_qkv
// FORCED: tcc.strategy = #tcc.gemm<tile_m = 4, tile_n = 256, tile_k = 16, work_m = 1, work_n = 4, split_k = 16,
func.func @decode_qkv(%x: tensor<1x1x768xf32>, %w: tensor<1x768x2304xf32>) -> tensor<1x1x2304xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x1x768xf32>, tensor<1x768x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2304xf32>
  return %h : tensor<1x1x2304xf32>
}

// -----

// A classifier at batch 1 (N = 1000): 8, 4, 2 and 1 work-items across all
// leave SMs without a work-group (16, 32, 63, 125 groups): the narrowest.
// CHECK-LABEL: func.func @classifier
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 1, tile_n = 8, tile_k = 1, work_m = 1, work_n = 8, split_k = 1, k_lanes = 256, batch = 1, m = 1, n = 1000, k = 2048>
func.func @classifier(%x: tensor<1x1x2048xf32>, %w: tensor<1x2048x1000xf32>) -> tensor<1x1x1000xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x1x2048xf32>, tensor<1x2048x1000xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1000xf32>
  return %h : tensor<1x1x1000xf32>
}

// -----

// Near misses: 9 rows, and 8 rows over K = 128, keep the table's tiles.
// CHECK-LABEL: func.func @nine_rows
// CHECK-NOT: k_lanes
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 16,
// CHECK-NOT: k_lanes
// CHECK: return
func.func @nine_rows(%x: tensor<1x9x768xf32>, %w: tensor<1x768x2304xf32>, %y: tensor<1x8x128xf32>, %v: tensor<1x128x512xf32>) -> (tensor<1x9x2304xf32>, tensor<1x8x512xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x9x768xf32>, tensor<1x768x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x9x2304xf32>
  %g = tosa.matmul %y, %v, %zp, %zp : (tensor<1x8x128xf32>, tensor<1x128x512xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x512xf32>
  return %h, %g : tensor<1x9x2304xf32>, tensor<1x8x512xf32>
}

// -----

// A symbolic M bounded by 8 (a decode step of batch 1..8): the few-row
// form for M = 8, whose kernel guards the rows past the call's M.
// CHECK-LABEL: func.func @step
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 8, tile_n = 8, tile_k = 1, work_m = 8, work_n = 8, split_k = 1, k_lanes = 256, batch = 1, m = 8, n = 64, k = 256>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [8]>} {
  func.func @step(%a: tensor<1x?x256xf32>, %b: tensor<1x256x64xf32>) -> tensor<1x?x64xf32> {
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %n = tensor.dim %a, %c1 : tensor<1x?x256xf32>
    %e = tensor.empty(%n) : tensor<1x?x64xf32>
    %y = tcc.dispatch "step_0" -> tensor<1x?x64xf32> {
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      %p = linalg.batch_matmul {tcc.kind = "matmul"} ins(%a, %b : tensor<1x?x256xf32>, tensor<1x256x64xf32>) outs(%f : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      tcc.yield %p : tensor<1x?x64xf32>
    }
    return %y : tensor<1x?x64xf32>
  }
}
