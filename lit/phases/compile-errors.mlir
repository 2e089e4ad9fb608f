// tcc compile rejects bad requests with a clear message and exit code 1,
// and writes nothing.
// RUN: not tcc compile %s --compile-to=tiles 2>&1 | FileCheck %s --check-prefix=PHASE
// RUN: not tcc compile %s --emit=cubin 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not tcc compile %s --target=amd 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not tcc compile %s 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: rm -f %t.so && not tcc compile %S/Inputs/truncated.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=TRUNCATED && not test -e %t.so
// RUN: not tcc compile %t.missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tcc compile %s --emit=spirv 2>&1 | FileCheck %s --check-prefix=SPIRV
// RUN: rm -rf %t.spv && tcc compile %s --emit=spirv -o %t.spv && spirv-val --target-env opencl1.2 %t.spv/exp_0.spv

// PHASE: unknown phase 'tiles' (phases: input, graph, linalg, dispatch, tile, buffer, gpu, codegen)
// EMIT: invalid value 'cubin' for '--emit <EMIT>'
// TARGET: unknown target 'amd' (targets: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host, generic, nvidia, pocl-cpu, vulkan, opencl-spirv, auto)
// NO-OUTPUT: the artifact is a shared library: give -o model.so
// TRUNCATED: truncated.mlir:2:{{[0-9]+}}: error:
// MISSING: cannot read {{.*}}missing.mlir
// SPIRV: --emit=spirv writes one .spv per kernel: give -o DIRECTORY

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
