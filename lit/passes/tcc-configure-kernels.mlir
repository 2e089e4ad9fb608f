// tcc-configure-kernels asks the target's configuration for each kernel's
// typed strategy (tcc.strategy) and work-group size: at least 64 work-items where the iteration space has
// that many points, never more than it has.
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=generic | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --tcc-phase-linalg --tcc-form-dispatches --tcc-configure-kernels=target=nvidia | FileCheck %s --check-prefix=NVIDIA
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx512})' | FileCheck %s --check-prefix=POCL
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx2})' | FileCheck %s --check-prefix=AVX2
// RUN: not tcc-opt %s --tcc-configure-kernels=target=amd 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx512 tuning=%S/Inputs/pocl-cpu-tuning.json})' | FileCheck %s --check-prefix=TUNED
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx512 candidate=1})' | FileCheck %s --check-prefix=CANDIDATE
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{target=pocl-cpu tuning=%S/Inputs/missing.json})' 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{target=pocl-cpu candidate=-1})' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// BAD: tcc-configure-kernels: unknown target 'amd' (targets: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host, generic, nvidia, pocl-cpu)
// MISSING: cannot read tuning record {{.*}}missing.json
// NEGATIVE: candidate must be a non-negative integer, not '-1'

// GENERIC: module attributes {tcc.target = #tcc.target<name = "opencl-generic", family = "generic", arch = "", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 32768, max_workgroup_size = 256>}
// NVIDIA: module attributes {tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}
// POCL: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx512", family = "pocl-cpu", arch = "x86-64-v4", api = "opencl", precision = "fp32", vector_width = 16, max_local_bytes = 65536, max_workgroup_size = 4096>}

// GENERIC-LABEL: func.func @big
// GENERIC: tcc.strategy = #tcc.loops<workgroup_size = 128>
// NVIDIA-LABEL: func.func @big
// NVIDIA: tcc.strategy = #tcc.loops<workgroup_size = 256>
// On CPUs a loop-nest kernel launches at most 64 work-groups (grid-stride
// loops cover the rest of its 65536 points).
// POCL-LABEL: func.func @big
// POCL: tcc.strategy = #tcc.loops<workgroup_size = 256, max_workgroups = 64>
func.func @big(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %0 = tosa.exp %x : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %0 : tensor<64x1024xf32>
}

// Two outputs: a work-group of two work-items.
// GENERIC-LABEL: func.func @small
// GENERIC: tcc.kind = "reduction", tcc.strategy = #tcc.loops<workgroup_size = 2>
// NVIDIA-LABEL: func.func @small
// NVIDIA: tcc.strategy = #tcc.loops<workgroup_size = 2>
func.func @small(%x: tensor<2x5xf32>) -> tensor<2x1xf32> {
  %0 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// 100 points: rounded up to a multiple of 32 below the preferred size.
// GENERIC-LABEL: func.func @hundred
// GENERIC: tcc.strategy = #tcc.loops<workgroup_size = 128>
// POCL-LABEL: func.func @hundred
// POCL: tcc.strategy = #tcc.loops<workgroup_size = 128, max_workgroups = 64>
func.func @hundred(%x: tensor<100xf32>) -> tensor<100xf32> {
  %0 = tosa.abs %x : (tensor<100xf32>) -> tensor<100xf32>
  return %0 : tensor<100xf32>
}

// A 64x128 @ 128x96 product: the pocl-cpu table takes 6x32 register
// blocks on AVX-512 (pocl-cpu-avx512: 4x64 would pad N = 96 to 128) and 6x16
// with AVX2's 8-float registers; the tuning record names this shape
// (8x16), and `candidate=1` forces the target's second candidate (4x16).
// Templates size their own grids: no max_workgroups.
// POCL-LABEL: func.func @tunable
// POCL: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 32, tile_k = 4, work_m = 6, work_n = 32, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// AVX2-LABEL: func.func @tunable
// AVX2: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 16, tile_k = 4, work_m = 6, work_n = 16, split_k = 1, batch = 1, m = 64, n = 96, k = 128>
// TUNED-LABEL: func.func @tunable
// TUNED: #tcc.gemm<tile_m = 8, tile_n = 16, tile_k = 4, work_m = 8, work_n = 16, split_k = 1,
// CANDIDATE-LABEL: func.func @tunable
// CANDIDATE: #tcc.gemm<tile_m = 4, tile_n = 16, tile_k = 4, work_m = 4, work_n = 16, split_k = 1,
func.func @tunable(%a: tensor<1x64x128xf32>, %b: tensor<1x128x96xf32>) -> tensor<1x64x96xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x96xf32>
  return %0 : tensor<1x64x96xf32>
}

// A layer norm over short rows (768 columns): on NVIDIA many rows (4096,
// BERT-base at batch 32) take two warps a row, few rows (128) keep 256.
// NVIDIA-LABEL: func.func @layer_norm_many_rows
// NVIDIA: tcc.strategy = #tcc.layer_norm<workgroup_size = 64>
func.func @layer_norm_many_rows(%x: tensor<4096x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<4096x768xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 9.99999974E-6 : tensor<4096x768xf32>, tensor<768xf32>
  return %0 : tensor<4096x768xf32>
}

// NVIDIA-LABEL: func.func @layer_norm_few_rows
// NVIDIA: tcc.strategy = #tcc.layer_norm<workgroup_size = 256>
func.func @layer_norm_few_rows(%x: tensor<128x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<128x768xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 9.99999974E-6 : tensor<128x768xf32>, tensor<768xf32>
  return %0 : tensor<128x768xf32>
}

// Many rows of at most 512 columns (ConvNeXt-T's norms over 96 channels of
// a 56x56 image at batch 32) pack several rows into a work-group of 256:
// 8 work-items of 12 columns a row, 32 rows; 1000 rows are too few, and
// the other targets keep one row a group.
// NVIDIA-LABEL: func.func @layer_norm_packed_rows
// NVIDIA: tcc.strategy = #tcc.layer_norm<workgroup_size = 8, rows = 32>
// GENERIC-LABEL: func.func @layer_norm_packed_rows
// GENERIC: tcc.strategy = #tcc.layer_norm<workgroup_size = {{[0-9]+}}>
func.func @layer_norm_packed_rows(%x: tensor<100352x96xf32>, %g: tensor<96xf32>, %b: tensor<96xf32>) -> tensor<100352x96xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 9.99999974E-6 : tensor<100352x96xf32>, tensor<96xf32>
  return %0 : tensor<100352x96xf32>
}

// NVIDIA-LABEL: func.func @layer_norm_short_rows_few
// NVIDIA: tcc.strategy = #tcc.layer_norm<workgroup_size = 128>
func.func @layer_norm_short_rows_few(%x: tensor<1000x96xf32>, %g: tensor<96xf32>, %b: tensor<96xf32>) -> tensor<1000x96xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 9.99999974E-6 : tensor<1000x96xf32>, tensor<96xf32>
  return %0 : tensor<1000x96xf32>
}
