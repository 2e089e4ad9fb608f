// tcc-configure-kernels gives int8 contractions (int8 x int8 -> int32, what
// tcc-quantize-int8 makes) the GEMM template on the GPU targets, with the
// fp32 table's tiles and a k step of 32 (one mma.sync.m16n8k32); loop nests
// on pocl-cpu (no integer register-blocked form) and under TCC_INT8_GEMM=off;
// TCC_INT8_GEMM=N sets the k step.
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=nvidia | FileCheck %s --check-prefix=NVIDIA
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=generic | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=pocl-cpu | FileCheck %s --check-prefix=LOOPS
// RUN: env TCC_INT8_GEMM=off tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=nvidia | FileCheck %s --check-prefix=LOOPS
// RUN: env TCC_INT8_GEMM=64 tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=nvidia | FileCheck %s --check-prefix=K64

// NVIDIA: tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 32, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// GENERIC: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 32, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// LOOPS: tcc.strategy = #tcc.loops<
// K64: tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 64,
func.func @int8_matmul(%a: tensor<64x128xi8>, %b: tensor<128x96xi8>) -> tensor<64x96xi32> {
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<64x96xi32>
  %fill = linalg.fill ins(%zero : i32) outs(%empty : tensor<64x96xi32>) -> tensor<64x96xi32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x128xi8>, tensor<128x96xi8>) outs(%fill : tensor<64x96xi32>) -> tensor<64x96xi32>
  return %0 : tensor<64x96xi32>
}
