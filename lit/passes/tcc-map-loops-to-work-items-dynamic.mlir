// tcc-map-loops-to-work-items does not map a loop nest bounded by a
// symbolic dimension yet (issue 33: the next step makes the grid-stride
// loop's point count a product of the kernel's extent arguments): such a
// loop is refused with its node, the declared dimensions and the pass;
// without declared dimensions the message is the static-shape one.
// RUN: not tcc-opt %s --split-input-file --tcc-map-loops-to-work-items 2>&1 | FileCheck %s
// CHECK: error: {{.*}}parallel loop (node 'relu') with a dynamic bound (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet by tcc-map-loops-to-work-items (the gpu phase); compile one shape with --input-shape
// CHECK: error: {{.*}}parallel loop with non-constant bounds: tcc needs static shapes
module attributes {gpu.container_module, tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  gpu.module @tcc_kernels {
    gpu.func @relu_0(%x: memref<?x4xf32>, %y: memref<?x4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.strategy = #tcc.loops<workgroup_size = 128>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %zero = arith.constant 0.0 : f32
      %n = memref.dim %x, %c0 : memref<?x4xf32>
      scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c4) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : memref<?x4xf32>
        %r = arith.maximumf %v, %zero : f32
        memref.store %r, %y[%i, %j] : memref<?x4xf32>
        scf.reduce
      } loc("relu")
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @copy_0(%x: memref<?xf32>, %y: memref<?xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.strategy = #tcc.loops<workgroup_size = 128>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %x, %c0 : memref<?xf32>
      scf.parallel (%i) = (%c0) to (%n) step (%c1) {
        %v = memref.load %x[%i] : memref<?xf32>
        memref.store %v, %y[%i] : memref<?xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}
