// tcc-configure-kernels gives int8 contractions (int8 x int8 -> int32, what
// tcc-quantize-int8 makes) the GEMM template on the GPU targets, with the
// fp32 table's tiles and a k step of 64 (two mma.sync.m16n8k32); on pocl-cpu
// (no integer register-blocked form) with the generic target's tiles; loop
// nests under int8-gemm=off; int8-gemm=N sets the k step (tcc compile maps
// the deprecated TCC_INT8_GEMM to it), a multiple of 32 or an error.
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=nvidia | FileCheck %s --check-prefix=NVIDIA
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=generic | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=pocl-cpu-avx512 | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia int8-gemm=off})' | FileCheck %s --check-prefix=LOOPS
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia int8-gemm=32})' | FileCheck %s --check-prefix=K32
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{int8-gemm=48})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: int8-gemm must be on, off or a k step that is a multiple of 32, not '48'

// NVIDIA: tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 64, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// GENERIC: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 64, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// LOOPS: tcc.strategy = #tcc.loops<
// K32: tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 32,
func.func @int8_matmul(%a: tensor<64x128xi8>, %b: tensor<128x96xi8>) -> tensor<64x96xi32> {
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<64x96xi32>
  %fill = linalg.fill ins(%zero : i32) outs(%empty : tensor<64x96xi32>) -> tensor<64x96xi32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x128xi8>, tensor<128x96xi8>) outs(%fill : tensor<64x96xi32>) -> tensor<64x96xi32>
  return %0 : tensor<64x96xi32>
}

// N = 64 where the fp32 table takes 128x128 tiles: 128x64 int8 tiles.
// NVIDIA-LABEL: func.func @int8_narrow
// NVIDIA: tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 64, tile_k = 64, work_m = 8, work_n = 4, split_k = 1, batch = 1, m = 65536, n = 64, k = 256>
func.func @int8_narrow(%a: tensor<65536x256xi8>, %b: tensor<256x64xi8>) -> tensor<65536x64xi32> {
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<65536x64xi32>
  %fill = linalg.fill ins(%zero : i32) outs(%empty : tensor<65536x64xi32>) -> tensor<65536x64xi32>
  %0 = linalg.matmul ins(%a, %b : tensor<65536x256xi8>, tensor<256x64xi8>) outs(%fill : tensor<65536x64xi32>) -> tensor<65536x64xi32>
  return %0 : tensor<65536x64xi32>
}
