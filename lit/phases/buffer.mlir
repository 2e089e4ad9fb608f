// Phase 6 (buffer): memrefs; the result is a caller-provided output buffer,
// the weights are memref.globals.
// RUN: tcc compile %S/Inputs/mlp.mlir --compile-to=buffer | FileCheck %s

// CHECK: memref.global "private" constant @{{.*}} : memref<1x8x16xf32> = dense<1.250000e-01>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: memref<1x4x8xf32>, %[[OUT:.*]]: memref<1x4x16xf32>)
// CHECK-NOT: -> memref
// CHECK: linalg.batch_matmul {{.*}} ins(%[[X]], %{{.*}} : memref<1x4x8xf32>, memref<1x8x16xf32>)
// CHECK-NOT: tensor<
// CHECK: return
