// Phase 5 (tile): work-group sizes per target, visible in the IR.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=tile --target=nvidia | FileCheck %s
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=tile --target=nvidia --stats 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS

// CHECK: module attributes {tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}
// CHECK: tcc.dispatch "{{.*}}" -> tensor
// CHECK: linalg.batch_matmul {tcc.kind = "matmul", tcc.strategy = #tcc.loops<workgroup_size = 64>}
// STATS: batch_matmul_add_min_max_0  kind=matmul  workgroup_size=64
// A 16-wide row gets 64 work-items (the smallest group tcc launches).
// STATS: softmax_1  kind=softmax  workgroup_size=64
