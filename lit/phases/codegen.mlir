// Phase 8 (codegen): readable OpenCL C, one __kernel per dispatch, named
// after the fused ops, with the configured work-group size.
// RUN: tcc compile %S/Inputs/mlp.mlir --emit=opencl-c | FileCheck %s
// RUN: tcc compile %S/Inputs/mlp.mlir --emit=llvm-ir | FileCheck %s --check-prefix=HOST
// RUN: tcc compile %S/Inputs/mlp.mlir -o %t.so
// RUN: llvm-readelf -h %t.so | FileCheck %s --check-prefix=ELF
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SYMBOLS

// CHECK: typedef int tcc_index;
// CHECK: inline float tcc_maximumf(float a, float b)
// CHECK: __kernel __attribute__((reqd_work_group_size(64, 1, 1)))
// CHECK-NEXT: void batch_matmul_add_min_max_0(__global float* restrict a0,
// CHECK-NEXT: __global const float* restrict a1,
// CHECK-NEXT: __global const float* restrict a2,
// CHECK-NEXT: __global float* restrict a3) {
// CHECK: for (tcc_index [[L:v[0-9]+]] = {{v[0-9]+}}; [[L]] < 64; [[L]] += {{v[0-9]+}}) {
// CHECK: tcc_maximumf(
// CHECK: __kernel __attribute__((reqd_work_group_size(64, 1, 1)))
// CHECK-NEXT: void softmax_1(
// CHECK: __local float scratch[64];
// CHECK-NOT: __kernel

// HOST: @tcc.artifact = private constant
// HOST: define internal i32 @tcc_entry_mlp(ptr
// HOST: define {{.*}}ptr @tcc_artifact_v1()

// The artifact is a shared library exporting the runtime's entry points.
// ELF: Type: DYN (Shared object file)
// SYMBOLS: T tcc_artifact_v1
