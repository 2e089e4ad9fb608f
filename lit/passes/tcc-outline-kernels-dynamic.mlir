// tcc-outline-kernels on a symbolic dimension (issue 33): each kernel is
// launched for the extent of the call, not the declared maximum its
// strategy was chosen for: the grid along the dynamic axis is computed on
// the host from the extents of the buffer the launch counts (memref.dim),
// and a view rebuilt inside a kernel takes its dynamic sizes (host values)
// as index arguments after the buffers.
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-configure-kernels{target=generic},tcc-outline-kernels)' | FileCheck %s

// A loop nest over ?x4 (64 x 4 points at the maximum: work-groups of 128):
// ceil(batch x 4 / 128) work-groups.
// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.*]]: memref<?x4xf32>, %[[Y:.*]]: memref<?x4xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = memref.dim %[[Y]], %[[C0]] : memref<?x4xf32>
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[POINTS:.*]] = arith.muli %[[N]], %[[C4]] : index
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[GROUPS:.*]] = arith.ceildivui %[[POINTS]], %[[C128]] : index
// CHECK: gpu.launch_func @tcc_kernels::@relu_0 blocks in (%[[GROUPS]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[X]] : memref<?x4xf32>, %[[Y]] : memref<?x4xf32>)
// CHECK: gpu.func @relu_0(%{{.*}}: memref<?x4xf32>, %{{.*}}: memref<?x4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tcc.kind = "elementwise", tcc.strategy = #tcc.loops<workgroup_size = 128>}
// CHECK-NOT: tcc.flops
#map = affine_map<(d0, d1) -> (d0, d1)>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @relu(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %zero = arith.constant 0.0 : f32
    tcc.dispatch "relu_0" {
      linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x4xf32>) outs(%y : memref<?x4xf32>) attrs = {tcc.kind = "elementwise"} {
      ^bb0(%in: f32, %out: f32):
        %r = arith.maximumf %in, %zero : f32
        linalg.yield %r : f32
      } loc("relu")
      tcc.yield
    }
    return
  }
}

// -----

// A product with a dynamic M (the tile phase's GEMM template, 32x32 tiles
// for M = 64):
// ceil(M / 32) tiles along y, N's along x stay constant; the view of the
// input as 1x?x32 is rebuilt in the kernel from its host size, an index
// argument.
// CHECK-LABEL: func.func @fc
// CHECK-SAME: (%[[A:.*]]: memref<?x32xf32>, %[[B:.*]]: memref<1x32x64xf32>, %[[C:.*]]: memref<1x?x64xf32>)
// CHECK: %[[ROWS:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x32xf32>
// CHECK: %[[M:.*]] = memref.dim %[[C]], %{{.*}} : memref<1x?x64xf32>
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[M]], %[[C32]] : index
// CHECK: gpu.launch_func @tcc_kernels::@fc_0 blocks in (%{{.*}}, %[[TILES]], %{{.*}}) threads in ({{.*}}) args(%[[C]] : memref<1x?x64xf32>, %[[A]] : memref<?x32xf32>, %[[B]] : memref<1x32x64xf32>, %[[ROWS]] : index)
// CHECK: gpu.func @fc_0(%[[KC:.*]]: memref<1x?x64xf32>, %[[KA:.*]]: memref<?x32xf32>, %{{.*}}: memref<1x32x64xf32>, %[[KROWS:.*]]: index) kernel
// CHECK-SAME: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 32>
// CHECK: memref.expand_shape %[[KA]] {{\[}}[0, 1], [2]] output_shape [1, %[[KROWS]], 32] : memref<?x32xf32> into memref<1x?x32xf32>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @fc(%a: memref<?x32xf32>, %b: memref<1x32x64xf32>, %c: memref<1x?x64xf32>) {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %rows = memref.dim %a, %c0 : memref<?x32xf32>
    %a3 = memref.expand_shape %a [[0, 1], [2]] output_shape [1, %rows, 32] : memref<?x32xf32> into memref<1x?x32xf32>
    tcc.dispatch "fc_0" {
      linalg.fill ins(%zero : f32) outs(%c : memref<1x?x64xf32>)
      linalg.batch_matmul {tcc.kind = "matmul", tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 32>} ins(%a3, %b : memref<1x?x32xf32>, memref<1x32x64xf32>) outs(%c : memref<1x?x64xf32>) loc("fc")
      tcc.yield
    }
    return
  }
}

// -----

// A kernel whose body reads a host extent itself (a gather that wraps
// negative indices by the batch, as the importer reads it at run time):
// the extent becomes an index argument after the buffers.
// CHECK-LABEL: func.func @wrap
// CHECK-SAME: (%[[I:.*]]: memref<?xi64>, %[[O:.*]]: memref<?xi64>)
// CHECK: %[[N:.*]] = memref.dim %[[I]], %{{.*}} : memref<?xi64>
// CHECK: gpu.launch_func @tcc_kernels::@wrap_0 blocks in ({{.*}}) threads in ({{.*}}) args(%[[I]] : memref<?xi64>, %[[O]] : memref<?xi64>, %[[N]] : index)
// CHECK: gpu.func @wrap_0(%{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %[[KN:.*]]: index) kernel
// CHECK: arith.index_cast %[[KN]] : index to i64
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @wrap(%i: memref<?xi64>, %o: memref<?xi64>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %i, %c0 : memref<?xi64>
    tcc.dispatch "wrap_0" {
      linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%i : memref<?xi64>) outs(%o : memref<?xi64>) attrs = {tcc.kind = "elementwise"} {
      ^bb0(%in: i64, %out: i64):
        %size = arith.index_cast %n : index to i64
        %r = arith.addi %in, %size : i64
        linalg.yield %r : i64
      } loc("wrap")
      tcc.yield
    }
    return
  }
}
