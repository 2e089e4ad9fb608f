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

// Each kernel's launch record (tcc_kernel_desc): name, flops, work-group
// size, dynamic local bytes, then its arguments (tcc_kernel_arg: buffer,
// f32, elements, TCC_ARG_WRITTEN for the two it writes).
// HOST: @tcc.kernel0.args = private constant [4 x { i32, i32, i64, i32, i32 }] [{ i32, i32, i64, i32, i32 } { i32 0, i32 0, i64 64, i32 1, i32 0 }, { i32, i32, i64, i32, i32 } { i32 0, i32 0, i64 32, i32 0, i32 0 }, { i32, i32, i64, i32, i32 } { i32 0, i32 0, i64 128, i32 0, i32 0 }, { i32, i32, i64, i32, i32 } { i32 0, i32 0, i64 64, i32 1, i32 0 }]
// HOST: @tcc.kernels = private constant [2 x { ptr, i64, i32, i32, i32, i32, i32, i32, ptr }] [{ ptr, i64, i32, i32, i32, i32, i32, i32, ptr } { ptr @{{.str.[0-9]+}}, i64 1024, i32 64, i32 1, i32 1, i32 0, i32 4, i32 0, ptr @tcc.kernel0.args }, { ptr, i64, i32, i32, i32, i32, i32, i32, ptr } { ptr @{{.str.[0-9]+}}, i64 0, i32 64, i32 1, i32 1, i32 0, i32 2, i32 0, ptr @tcc.kernel1.args }]
// HOST: @tcc.artifact = private constant { i32, i32, ptr, i64, ptr, i32, i32, ptr, ptr, i32, i32, ptr, ptr } { i32 3, {{.*}}, ptr @tcc.kernels, ptr @tcc.functions
// HOST: define internal i32 @tcc_entry_mlp(ptr
// HOST: define {{.*}}ptr @tcc_artifact_v1()

// The artifact is a shared library exporting the runtime's entry points.
// ELF: Type: DYN (Shared object file)
// SYMBOLS: T tcc_artifact_v1
// SYMBOLS-NOT: tcc_kernel_flops_v1
