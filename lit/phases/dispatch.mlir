// Phase 4 (dispatch): two kernels; the matmul carries its fill and its
// bias+relu epilogue, the softmax over the last axis is one kernel.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=dispatch --stats 2>&1 >/dev/null | FileCheck %s

// CHECK: kernels: 2
// CHECK-NEXT: batch_matmul_add_min_max_0  kind=matmul
// CHECK-NEXT: softmax_1  kind=softmax
