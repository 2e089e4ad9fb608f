// tcc inspect: functions and their I/O, kernels (kind, work-group size,
// flops), constants, arena, target, producer and ABI version, as text and
// as JSON, read from the ELF file without loading it (so an AArch64
// artifact is described on x86-64 too); and what it says about files that
// are not artifacts.
// RUN: tcc compile %s --target=pocl-cpu -o %t.so
// RUN: tcc inspect %t.so | FileCheck %s --check-prefix=TEXT
// RUN: tcc inspect %t.so --json | FileCheck %s --check-prefix=JSON
// RUN: not tcc inspect %s 2>&1 | FileCheck %s --check-prefix=NOT-ELF
// RUN: not tcc inspect %t.missing.so 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: tcc compile %s --host-triple=aarch64-unknown-linux-gnu -o %t.arm64.so
// RUN: tcc inspect %t.arm64.so 2>&1 | FileCheck %s --check-prefix=FOREIGN

// TEXT: inspect.mlir.tmp.so
// TEXT-NEXT:   ABI version: 3 (this runtime loads 3..=4)
// TEXT-NEXT:   producer: tcc 0.1.0 (git {{[0-9a-f]+|unknown}})
// TEXT-NEXT:   target: pocl-cpu (pocl-cpu-avx2, x86-64-v3)
// TEXT-NEXT:   host: x86_64-{{.*}}linux-gnu
// TEXT-NEXT:   kernel format: OpenCL C
// TEXT-NEXT: functions: 1
// TEXT-NEXT:   @mm(1x8x16xf32, 1x16x4xf32) -> (1x8x4xf32)  arena 4096 bytes
// TEXT-NEXT: kernels: 3
// TEXT-NEXT:   batch_matmul_add_0  kind=matmul  workgroup_size={{[0-9x]+}}  flops=1024
// TEXT-NEXT:   reduce_add_1  kind=reduction  workgroup_size={{[0-9x]+}}  flops=0
// TEXT-NEXT:   sub_2  kind=elementwise  workgroup_size={{[0-9x]+}}  flops=0
// TEXT-NEXT: constants: 1 (16 bytes)
// TEXT-NEXT: arena: 4096 bytes (largest function)

// JSON:      "abi_version": 3,
// JSON:      "arena_bytes": 4096,
// JSON:      "constants": {
// JSON-NEXT:   "bytes": 16,
// JSON-NEXT:   "count": 1
// JSON:      "cpu_arch": "x86-64-v3",
// JSON:      "functions": [
// JSON:          "inputs": [
// JSON:              "bytes": 512,
// JSON-NEXT:         "dtype": "f32",
// JSON-NEXT:         "name": "",
// JSON-NEXT:         "shape": [
// JSON-NEXT:           1,
// JSON-NEXT:           8,
// JSON-NEXT:           16
// JSON:      "kernel_format": "OpenCL C",
// JSON:      "kernels": [
// JSON:          "flops": 1024,
// JSON-NEXT:     "kind": "matmul",
// JSON:      "producer": "tcc 0.1.0 (git
// JSON:      "target": "pocl-cpu",
// JSON-NEXT: "target_name": "pocl-cpu-avx2",

// NOT-ELF: error: malformed artifact {{.*}}inspect.mlir: not a valid ELF file
// MISSING: error: cannot inspect {{.*}}missing.so: cannot open it: No such file
// FOREIGN: host: aarch64-unknown-linux-gnu

func.func @mm(%a: tensor<1x8x16xf32>, %b: tensor<1x16x4xf32>) -> tensor<1x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x4xf32>
  %bias = "tosa.const"() <{values = dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>}> : () -> tensor<1x1x4xf32>
  %d = tosa.add %c, %bias : (tensor<1x8x4xf32>, tensor<1x1x4xf32>) -> tensor<1x8x4xf32>
  %s = tosa.reduce_sum %d {axis = 2 : i32} : (tensor<1x8x4xf32>) -> tensor<1x8x1xf32>
  %e = tosa.sub %d, %s : (tensor<1x8x4xf32>, tensor<1x8x1xf32>) -> tensor<1x8x4xf32>
  return %e : tensor<1x8x4xf32>
}
