// tcc-map-loops-to-work-items turns each parallel loop nest of a kernel
// into a grid-stride loop over its linearized points, delinearized into
// every dimension; reductions stay sequential per output element.
// RUN: tcc-opt %s --split-input-file --tcc-map-loops-to-work-items --verify-diagnostics | FileCheck %s

// CHECK-LABEL: gpu.func @reduce
// CHECK-SAME: (%[[OUT:.*]]: memref<4x8xf32>, %[[IN:.*]]: memref<4x8x16xf32>)
// CHECK: %[[BD:.*]] = gpu.block_dim x
// CHECK: %[[GD:.*]] = gpu.grid_dim x
// CHECK: %[[STEP:.*]] = arith.muli %[[BD]], %[[GD]] : index
// CHECK: %[[ID:.*]] = gpu.global_id x
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: scf.for %[[L:.*]] = %[[ID]] to %[[C32]] step %[[STEP]] {
// CHECK:   %[[C8:.*]] = arith.constant 8 : index
// CHECK:   %[[J:.*]] = arith.remui %[[L]], %[[C8]] : index
// CHECK:   %[[C8B:.*]] = arith.constant 8 : index
// CHECK:   %[[I:.*]] = arith.divui %[[L]], %[[C8B]] : index
// CHECK:   scf.for %[[K:.*]] =
// CHECK:     memref.load %[[IN]][%[[I]], %[[J]], %[[K]]]
// CHECK:     memref.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT: scf.parallel
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @reduce(%out: memref<4x8xf32>, %in: memref<4x8x16xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
        scf.for %k = %c0 to %c16 step %c1 {
          %v = memref.load %in[%i, %j, %k] : memref<4x8x16xf32>
          %acc = memref.load %out[%i, %j] : memref<4x8xf32>
          %s = arith.addf %v, %acc : f32
          memref.store %s, %out[%i, %j] : memref<4x8xf32>
        }
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// Non-zero lower bounds and steps are applied after delinearizing.
// CHECK-LABEL: gpu.func @strided
// CHECK: scf.for %[[L:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[T:.*]] = arith.muli %[[L]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.addi %[[T]], %{{.*}} : index
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]]]
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @strided(%out: memref<16xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant 0.0 : f32
      scf.parallel (%i) = (%c1) to (%c16) step (%c2) {
        memref.store %zero, %out[%i] : memref<16xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// Nests that exchange data through memory must cover the same points.
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @mismatch(%a: memref<8xf32>, %b: memref<4xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
        memref.store %zero, %a[%i] : memref<8xf32>
        scf.reduce
      }
      // expected-error @+1 {{fused loop nests cover 8 and 4 points: cannot share one mapping}}
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
        memref.store %zero, %b[%i] : memref<4xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}
