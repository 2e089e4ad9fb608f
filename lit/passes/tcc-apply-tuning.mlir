// tcc-apply-tuning attaches a tuning record's configuration to each kernel
// whose kind and (batch, M, N, K) it names, as `tcc.tuning = #tcc.gemm<...>`
// (IREE's compilation_info), and tcc-configure-kernels takes it over the
// target's table; shapes the record does not name are left alone. A record
// for another family than the module's #tcc.target is an error.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{target=pocl-cpu-avx512},tcc-phase-linalg,tcc-form-dispatches,tcc-apply-tuning{record=%S/Inputs/pocl-cpu-tuning.json})' | FileCheck %s
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{target=pocl-cpu-avx512},tcc-phase-linalg,tcc-form-dispatches,tcc-apply-tuning{record=%S/Inputs/pocl-cpu-tuning.json},tcc-configure-kernels)' | FileCheck %s --check-prefix=CONFIGURED
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{target=nvidia},tcc-phase-linalg,tcc-form-dispatches,tcc-apply-tuning{record=%S/Inputs/pocl-cpu-tuning.json})' 2>&1 | FileCheck %s --check-prefix=FAMILY
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-apply-tuning{record=%S/Inputs/missing.json})' 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @tuned
// CHECK: linalg.batch_matmul {{.*}}tcc.tuning = #tcc.gemm<tile_m = 8, tile_n = 16, tile_k = 4, work_m = 8, work_n = 16, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// CHECK-LABEL: func.func @untuned
// CHECK-NOT: tcc.tuning
// CONFIGURED-LABEL: func.func @tuned
// CONFIGURED: tcc.strategy = #tcc.gemm<tile_m = 8, tile_n = 16, tile_k = 4, work_m = 8, work_n = 16, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// CONFIGURED-LABEL: func.func @untuned
// CONFIGURED: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 64, tile_k = 4, work_m = 6, work_n = 64, split_k = 1, batch = 1, m = 64, n = 64, k = 128>
// FAMILY: the tuning record is for --target=pocl-cpu (measured on pthread-lit-test), the module for nvidia
// MISSING: cannot read tuning record {{.*}}missing.json

func.func @tuned(%a: tensor<1x64x128xf32>, %b: tensor<1x128x96xf32>) -> tensor<1x64x96xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x96xf32>
  return %0 : tensor<1x64x96xf32>
}

func.func @untuned(%a: tensor<1x64x128xf32>, %b: tensor<1x128x64xf32>) -> tensor<1x64x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x64xf32>
  return %0 : tensor<1x64x64xf32>
}
