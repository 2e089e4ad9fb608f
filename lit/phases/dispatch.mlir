// Phase 4 (dispatch): five kernels; the matmul carries its fill and its
// bias+relu epilogue.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=dispatch --stats 2>&1 >/dev/null | FileCheck %s

// CHECK: kernels: 5
// CHECK-NEXT: batch_matmul_add_min_max_0  kind=matmul
// CHECK-NEXT: reduce_max_1  kind=reduction
// CHECK-NEXT: sub_exp_2  kind=elementwise
// CHECK-NEXT: reduce_add_3  kind=reduction
// CHECK-NEXT: div_mul_4  kind=elementwise
