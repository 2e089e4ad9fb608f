// Phase 7 (gpu): a host function of launches and one gpu.func per kernel
// whose loops are mapped onto work-items.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=gpu | FileCheck %s

// CHECK: module attributes {gpu.container_module
// CHECK-LABEL: func.func @mlp
// CHECK-COUNT-2: gpu.launch_func @tcc_kernels::
// CHECK-NOT: linalg.
// CHECK: return
// CHECK: gpu.module @tcc_kernels
// CHECK: gpu.func @batch_matmul_add_min_max_0({{.*}}) kernel attributes {known_block_size = array<i32: 64, 1, 1>, tcc.flops = 1024 : i64, tcc.kind = "matmul", tcc.strategy = #tcc.loops<workgroup_size = 64>}
// CHECK: gpu.global_id x
// CHECK: scf.for
// CHECK-NOT: scf.parallel
// 2 * 4 * 16 * 8 flops for the matmul (tcc.flops, reported by tcc-benchmark).
// The softmax kernel keeps linalg.softmax for the row template (its
// strategy set at the start of the gpu phase: bufferization drops the
// tile phase's).
// CHECK: gpu.func @softmax_1({{.*}}) kernel attributes {known_block_size = array<i32: 64, 1, 1>, tcc.kind = "softmax", tcc.strategy = #tcc.softmax<workgroup_size = 64>}
// CHECK: linalg.softmax
