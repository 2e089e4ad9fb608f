// tcc-map-loops-to-work-items on a symbolic dimension (issue 33): a nest
// whose first non-unit dimension runs to a dynamic extent (the kernel's
// memref.dim) becomes a grid-stride loop to that extent times the static
// inner points; the dynamic dimension's index is the quotient (no
// remainder), unit dimensions before it stay at 0. Symbolic extents
// further in (several of them) are delinearized by their extents.
// Without declared dimensions a dynamic bound is refused with the
// static-shape message.
// RUN: not tcc-opt %s --split-input-file --tcc-map-loops-to-work-items=serial-rows=false 2>/dev/null | FileCheck %s
// RUN: not tcc-opt %s --split-input-file --tcc-map-loops-to-work-items=serial-rows=true 2>/dev/null | FileCheck %s --check-prefix=ROWS
// RUN: not tcc-opt %s --split-input-file --tcc-map-loops-to-work-items 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR

// CHECK-LABEL: gpu.func @relu_0
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<1x?x4xf32>
// CHECK: %[[GID:.*]] = gpu.global_id x
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[POINTS:.*]] = arith.muli %[[N]], %[[C4]] : index
// CHECK: scf.for %[[I:.*]] = %[[GID]] to %[[POINTS]] step
// CHECK: %[[J:.*]] = arith.remui %[[I]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.divui %[[I]], %{{.*}} : index
// CHECK-NOT: arith.remui %[[ROW]]
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: memref.load %{{.*}}[%[[ZERO]], %[[ROW]], %[[J]]] : memref<1x?x4xf32>
// With serial rows too: a row of 4 is too short (fewer than 8 elements),
// so the elements are mapped.
// ROWS-LABEL: gpu.func @relu_0
// ROWS: arith.muli
// ROWS: scf.for
module attributes {gpu.container_module, tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  gpu.module @tcc_kernels {
    gpu.func @relu_0(%x: memref<1x?x4xf32>, %y: memref<1x?x4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.strategy = #tcc.loops<workgroup_size = 128>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %zero = arith.constant 0.0 : f32
      %n = memref.dim %x, %c1 : memref<1x?x4xf32>
      scf.parallel (%b, %i, %j) = (%c0, %c0, %c0) to (%c1, %n, %c4) step (%c1, %c1, %c1) {
        %v = memref.load %x[%b, %i, %j] : memref<1x?x4xf32>
        %r = arith.maximumf %v, %zero : f32
        memref.store %r, %y[%b, %i, %j] : memref<1x?x4xf32>
        scf.reduce
      } loc("relu")
      gpu.return
    }
  }
}

// -----

// Rows of 16: with serial rows each work-item takes whole rows, up to the
// dynamic extent, and walks the row in order.
// ROWS-LABEL: gpu.func @rows_0
// ROWS: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x16xf32>
// ROWS: %[[GID:.*]] = gpu.global_id x
// ROWS: scf.for %[[I:.*]] = %[[GID]] to %[[N]] step
// ROWS: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// ROWS: memref.load %{{.*}}[%[[I]], %[[J]]] : memref<?x16xf32>
module attributes {gpu.container_module, tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  gpu.module @tcc_kernels {
    gpu.func @rows_0(%x: memref<?x16xf32>, %y: memref<?x16xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.strategy = #tcc.loops<workgroup_size = 128>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %n = memref.dim %x, %c0 : memref<?x16xf32>
      scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : memref<?x16xf32>
        memref.store %v, %y[%i, %j] : memref<?x16xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// A symbolic inner bound (a row along a sequence): the points are the
// static extents times the symbolic one; its index is the remainder by
// its extent, the outer one the quotient.
// CHECK-LABEL: gpu.func @inner_0
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<4x?xf32>
// CHECK: %[[POINTS:.*]] = arith.muli %[[N]], %{{.*}} : index
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[POINTS]] step
// CHECK: %[[J:.*]] = arith.remui %[[I]], %[[N]] : index
// CHECK: %[[ROW:.*]] = arith.divui %[[I]], %[[N]] : index
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[J]]]
module attributes {gpu.container_module, tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  gpu.module @tcc_kernels {
    gpu.func @inner_0(%x: memref<4x?xf32>, %y: memref<4x?xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.strategy = #tcc.loops<workgroup_size = 128>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %n = memref.dim %x, %c1 : memref<4x?xf32>
      scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %n) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : memref<4x?xf32>
        memref.store %v, %y[%i, %j] : memref<4x?xf32>
        scf.reduce
      } loc("inner")
      gpu.return
    }
  }
}

// -----

// ERR: error: {{.*}}parallel loop with non-constant bounds: tcc needs static shapes
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @copy_0(%x: memref<4x?xf32>, %y: memref<4x?xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.strategy = #tcc.loops<workgroup_size = 128>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %n = memref.dim %x, %c1 : memref<4x?xf32>
      scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %n) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : memref<4x?xf32>
        memref.store %v, %y[%i, %j] : memref<4x?xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}
