// tcc-attach-target writes the module's target once, as #tcc.target, from
// the table of known targets (compiler/src/config/targets.rs) and the
// command line's changes (precision, launch API, vector width); every
// later pass reads it. The family names are aliases of known targets, and
// only `host` looks at the compiling machine.
// RUN: tcc-opt %s --tcc-attach-target=target=opencl-generic | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --tcc-attach-target=target=generic | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --tcc-attach-target | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --tcc-attach-target=target=nvidia-sm90 | FileCheck %s --check-prefix=SM90
// RUN: tcc-opt %s --tcc-attach-target=target=nvidia | FileCheck %s --check-prefix=SM90
// RUN: tcc-opt %s --tcc-attach-target=target=nvidia-sm80 | FileCheck %s --check-prefix=SM80
// RUN: tcc-opt %s --tcc-attach-target=target=pocl-cpu-avx2 | FileCheck %s --check-prefix=AVX2
// RUN: tcc-opt %s --tcc-attach-target=target=pocl-cpu | FileCheck %s --check-prefix=AVX2
// RUN: tcc-opt %s --tcc-attach-target=target=pocl-cpu-avx512 | FileCheck %s --check-prefix=AVX512
// RUN: tcc-opt %s --tcc-attach-target=target=host | FileCheck %s --check-prefix=HOST
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{target=nvidia precision=tf32 api=cuda})' | FileCheck %s --check-prefix=CUDA
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{target=pocl-cpu vector-width=16})' | FileCheck %s --check-prefix=WIDE
// The driver writes the same attribute in the input phase.
// RUN: tcc compile %s --compile-to=input --target=nvidia-sm80 | FileCheck %s --check-prefix=SM80
// RUN: tcc compile %s --compile-to=input | FileCheck %s --check-prefix=GENERIC
// RUN: tcc compile %s --compile-to=input --target=nvidia --precision=tf32 --backend=cuda | FileCheck %s --check-prefix=CUDA
// RUN: not tcc compile %s --compile-to=input --target=nvidia-sm75 2>&1 | FileCheck %s --check-prefix=UNKNOWN-CLI
// RUN: not tcc-opt %s --tcc-attach-target=target=nvidia-sm75 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{precision=fp8})' 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-attach-target{api=metal})' 2>&1 | FileCheck %s --check-prefix=API

// GENERIC: module attributes {tcc.target = #tcc.target<name = "opencl-generic", family = "generic", arch = "", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 32768, max_workgroup_size = 256>}
// SM90: module attributes {tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}
// SM80: module attributes {tcc.target = #tcc.target<name = "nvidia-sm80", family = "nvidia", arch = "sm_80", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}
// AVX2: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx2", family = "pocl-cpu", arch = "x86-64-v3", api = "opencl", precision = "fp32", vector_width = 8, max_local_bytes = 65536, max_workgroup_size = 4096>}
// AVX512: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx512", family = "pocl-cpu", arch = "x86-64-v4", api = "opencl", precision = "fp32", vector_width = 16, max_local_bytes = 65536, max_workgroup_size = 4096>}
// HOST: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx{{2|512}}", family = "pocl-cpu", arch = "x86-64-v{{3|4}}", api = "opencl", precision = "fp32", vector_width = {{8|16}},
// CUDA: module attributes {tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "cuda", precision = "tf32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}
// WIDE: module attributes {tcc.target = #tcc.target<name = "pocl-cpu-avx2", family = "pocl-cpu", arch = "x86-64-v3", api = "opencl", precision = "fp32", vector_width = 16,
// UNKNOWN-CLI: --target=nvidia-sm75: unknown target 'nvidia-sm75' (targets: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host, generic, nvidia, pocl-cpu, vulkan, opencl-spirv, auto)
// UNKNOWN: tcc-attach-target: unknown target 'nvidia-sm75'
// PRECISION: unknown precision 'fp8' (fp32, tf32, fp16, bf16)
// API: unknown launch API 'metal' (opencl, cuda, vulkan)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
