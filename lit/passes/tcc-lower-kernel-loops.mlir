// tcc-lower-kernel-loops turns the linalg ops of each kernel into loop
// nests: parallel dimensions in one scf.parallel, reductions in scf.for.
// RUN: tcc-opt %s --tcc-lower-kernel-loops --canonicalize | FileCheck %s

// CHECK-LABEL: gpu.func @reduce
// CHECK-SAME: (%[[IN:.*]]: memref<4x8x6xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) =
// CHECK:   scf.for %[[K:.*]] =
// CHECK:     memref.load %[[IN]][%[[I]], %[[J]], %[[K]]]
// CHECK:     arith.addf
// CHECK:     memref.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT: linalg.
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @reduce(%in: memref<4x8x6xf32>, %out: memref<4x8xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%in : memref<4x8x6xf32>) outs(%out : memref<4x8xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %s = arith.addf %x, %acc : f32
        linalg.yield %s : f32
      }
      gpu.return
    }
  }
}
