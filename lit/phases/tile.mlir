// Phase 5 (tile): work-group sizes per target, visible in the IR.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=tile --target=nvidia | FileCheck %s
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=tile --target=nvidia --stats 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS

// CHECK: module attributes {tcc.target = "nvidia"}
// CHECK: linalg.batch_matmul {tcc.kernel = {{.*}}, tcc.strategy = #tcc.loops<workgroup_size = 64>}
// STATS: batch_matmul_add_min_max_0  kind=matmul  workgroup_size=64
// A 16-wide row gets 64 work-items (the smallest group tcc launches).
// STATS: softmax_1  kind=softmax  workgroup_size=64
