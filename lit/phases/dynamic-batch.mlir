// OpenCL C kernels on a symbolic batch (issue 33): a kernel reads each
// dynamic extent it needs from a scalar `tcc_index` argument after its
// buffers (`a{buffer}_d{dim}`); the GEMM template takes M from it and
// keeps every M bounds check (its tiles are the declared maximum's); the
// index width counts the batch at its declared maximum; the artifact
// states the dimension and its range. Each scalar is read through a
// macro: the constant TCC_ARG_<kernel>_<argument> where the runtime
// defines it (a program specialized for a call's shape), else the
// argument, declared `NAME_arg`.
// RUN: split-file %s %t
// RUN: tcc compile %t/abs.mlir --dim batch=1..64 --emit=opencl-c | FileCheck %s --check-prefix=ABS
// RUN: tcc compile %t/abs.mlir --dim batch=1..4096 --emit=opencl-c | FileCheck %s --check-prefix=WIDE
// RUN: tcc compile %t/matmul.mlir --dim batch=1..64 --emit=opencl-c | FileCheck %s --check-prefix=GEMM
// RUN: tcc compile %t/abs.mlir --dim batch=1..64 -o %t/abs.so
// RUN: tcc inspect %t/abs.so | FileCheck %s --check-prefix=HOST

// ABS: typedef int tcc_index;
// ABS: #ifdef TCC_ARG_abs_0_2
// ABS-NEXT: #define a0_d0 ((tcc_index)(TCC_ARG_abs_0_2))
// ABS-NEXT: #else
// ABS-NEXT: #define a0_d0 a0_d0_arg
// ABS-NEXT: #endif
// ABS: void abs_0(__global const float* restrict a0,
// ABS-NEXT: __global float* restrict a1,
// ABS-NEXT: const tcc_index a0_d0_arg) {
// ABS: const tcc_index [[POINTS:v[0-9]+]] = (a0_d0 * 1048576);
// ABS: for (tcc_index [[I:v[0-9]+]] = {{v[0-9]+}}; [[I]] < [[POINTS]];
// ABS: #undef a0_d0

// 4096 x 2^20 elements at the maximum: 64-bit indices.
// WIDE: typedef long tcc_index;

// GEMM: void batch_matmul_0(
// GEMM: const tcc_index a0_d1_arg) {
// GEMM-NEXT: /* tile 32x32x16, 2x2 outputs per work-item; M=a0_d1 (at most 64) N=64 K=32 batch=1 */
// GEMM: fetch_a[r] = (i < a0_d1 && k < 32)
// GEMM: if (i < a0_d1 && j < 64) {
// GEMM-NOT: i < 64

// The host code reads the call's batch (ABI 4); with one declared
// dimension and no names, the `?` of the MLIR function is it.
// HOST: ABI version: 4
// HOST: @abs(batchx1024x1024xf32) -> (batchx1024x1024xf32) {{.*}} dims batch=1..64

//--- abs.mlir
func.func @abs(%x: tensor<?x1024x1024xf32>) -> tensor<?x1024x1024xf32> {
  %z = tosa.abs %x : (tensor<?x1024x1024xf32>) -> tensor<?x1024x1024xf32>
  return %z : tensor<?x1024x1024xf32>
}

//--- matmul.mlir
func.func @mm(%a: tensor<1x?x32xf32>, %b: tensor<1x32x64xf32>) -> tensor<1x?x64xf32> {
  %za = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %zb = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.matmul %a, %b, %za, %zb : (tensor<1x?x32xf32>, tensor<1x32x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x64xf32>
  return %c : tensor<1x?x64xf32>
}
