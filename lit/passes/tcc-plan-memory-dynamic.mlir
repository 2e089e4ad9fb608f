// tcc-plan-memory on a symbolic dimension (issue 33): a buffer sized by
// it (memref.alloc(%n)) gets the slot of the largest declared maximum
// (here 64 x 4 floats = 1 KiB, so two such buffers alive together take
// two 4 KiB slots), and its view takes the call's size: every
// offset holds at every batch in range. The liveness bound counts the
// maximum too; the arena and bound at the declared minimum (batch 1: 16
// bytes a buffer) are recorded for --stats.
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: tcc.arena_bytes = 8192 : i64
// CHECK-SAME: tcc.arena_bytes_at_min = 8192 : i64
// CHECK-SAME: tcc.live_bytes_bound = 2048 : i64
// CHECK-SAME: tcc.live_bytes_bound_at_min = 32 : i64
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 4096 : i64, tcc.arena} : memref<8192xi8>
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x4xf32>
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<8192xi8> to memref<?x4xf32>
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<8192xi8> to memref<?x4xf32>
// CHECK-NOT: memref.alloc(
module attributes {gpu.container_module, tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %a = memref.alloc(%n) : memref<?x4xf32>
    %b = memref.alloc(%n) : memref<?x4xf32>
    gpu.launch_func @tcc_kernels::@k_0 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<?x4xf32>, %a : memref<?x4xf32>)
    gpu.launch_func @tcc_kernels::@k_0 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%a : memref<?x4xf32>, %b : memref<?x4xf32>)
    gpu.launch_func @tcc_kernels::@k_0 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%b : memref<?x4xf32>, %y : memref<?x4xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @k_0(%x: memref<?x4xf32>, %y: memref<?x4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// Without declared dimensions a dynamic allocation is not planned (it is
// allocated at run time, as before).
// CHECK-LABEL: func.func @undeclared
// CHECK-NOT: at_min
// CHECK-SAME: tcc.arena_bytes = 0 : i64
// CHECK: memref.alloc(%{{.*}}) : memref<?x4xf32>
module attributes {gpu.container_module} {
  func.func @undeclared(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %a = memref.alloc(%n) : memref<?x4xf32>
    gpu.launch_func @tcc_kernels::@k_0 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<?x4xf32>, %a : memref<?x4xf32>)
    gpu.launch_func @tcc_kernels::@k_0 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%a : memref<?x4xf32>, %y : memref<?x4xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @k_0(%x: memref<?x4xf32>, %y: memref<?x4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}
