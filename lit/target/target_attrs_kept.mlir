// A module that states its target keeps it through tcc-attach-target
// without target= (the options given still change it), and a later pass
// reads it: here tcc-configure-kernels sizes pocl-cpu-avx512's register
// blocks (6x64 for a 64-column product) without being told the target.
// RUN: tcc-opt %s --tcc-attach-target | FileCheck %s --check-prefix=KEPT
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{precision=bf16})' | FileCheck %s --check-prefix=CHANGED
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels 2>/dev/null | FileCheck %s --check-prefix=GEMM

// KEPT: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx512", family = "pocl-cpu", arch = "x86-64-v4", api = "opencl", precision = "fp32", vector_width = 16, max_local_bytes = 65536, max_workgroup_size = 4096>}
// CHANGED: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx512", family = "pocl-cpu", arch = "x86-64-v4", api = "opencl", precision = "bf16", vector_width = 16, max_local_bytes = 65536, max_workgroup_size = 4096>}
// GEMM: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 64, tile_k = 4, work_m = 6, work_n = 64, split_k = 1, batch = 1, m = 128, n = 64, k = 32>
module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx512", family = "pocl-cpu", arch = "x86-64-v4", api = "opencl", precision = "fp32", vector_width = 16, max_local_bytes = 65536, max_workgroup_size = 4096>} {
  func.func @mm(%a: tensor<1x128x32xf32>, %b: tensor<1x32x64xf32>) -> tensor<1x128x64xf32> {
    %za = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %zb = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %0 = tosa.matmul %a, %b, %za, %zb : (tensor<1x128x32xf32>, tensor<1x32x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x128x64xf32>
    return %0 : tensor<1x128x64xf32>
  }
}

