// tcc-plan-memory does not plan buffers sized by a symbolic dimension yet
// (issue 33: the next step plans the arena at the declared maximum): a
// host function computing on one is refused, with the launch, its node,
// the declared dimensions and the pass, before any size is read from a `?`.
// RUN: not tcc-opt %s --tcc-plan-memory 2>&1 | FileCheck %s
// CHECK: error: {{.*}}'gpu.launch_func' (node 'relu') computes on the dynamically shaped type 'memref<?x4xf32>' (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet by tcc-plan-memory (the gpu phase); compile one shape with --input-shape
// CHECK-NOT: tcc.arena_bytes
module attributes {gpu.container_module, tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %tmp = memref.alloc(%n) : memref<?x4xf32>
    gpu.launch_func @tcc_kernels::@relu_0 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<?x4xf32>, %tmp : memref<?x4xf32>) loc("relu")
    memref.copy %tmp, %y : memref<?x4xf32> to memref<?x4xf32>
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @relu_0(%x: memref<?x4xf32>, %y: memref<?x4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}
