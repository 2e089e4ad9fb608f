// tcc-map-loops-to-work-items{serial-rows}: the rows of a kernel's nests
// (all but the fewest innermost dimensions holding at least 8 elements)
// are mapped onto work-items, and each work-item walks its rows' inner
// dimensions in order. `auto` takes the module's #tcc.target: pocl-cpu
// maps rows, the GPU targets elements.
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-map-loops-to-work-items{serial-rows=true})' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-map-loops-to-work-items | FileCheck %s --check-prefix=AUTO
// RUN: not tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-map-loops-to-work-items{serial-rows=maybe})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: serial-rows must be auto, true or false (got 'maybe')

// 64 rows of 32: the grid-stride loop covers the rows, a loop of 32 the
// row, with the row's index straight from its induction variable.
// CHECK-LABEL: gpu.func @bias_relu
// CHECK: gpu.global_id x
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: scf.for %[[L:.*]] = %{{.*}} to %[[C64]] step %{{.*}} {
// CHECK-NOT: arith.remui
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.for %[[J:.*]] = %[[C0]] to %[[C32]] step %[[C1]] {
// CHECK: memref.load %{{.*}}[%[[L]], %[[J]]]
// CHECK: memref.load %{{.*}}[%[[J]]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[L]], %[[J]]]
// On pocl-cpu `auto` does the same; the nvidia module below maps elements.
// AUTO-LABEL: gpu.func @bias_relu
// AUTO: scf.for %[[L:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// AUTO: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "pocl-cpu-avx512", family = "pocl-cpu", arch = "x86-64-v4", api = "opencl", precision = "fp32", vector_width = 16, max_local_bytes = 65536, max_workgroup_size = 4096>} {
  gpu.module @tcc_kernels {
    gpu.func @bias_relu(%out: memref<64x32xf32>, %in: memref<64x32xf32>, %bias: memref<32xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
        %x = memref.load %in[%i, %j] : memref<64x32xf32>
        %b = memref.load %bias[%j] : memref<32xf32>
        %s = arith.addf %x, %b : f32
        %r = arith.maximumf %s, %zero : f32
        memref.store %r, %out[%i, %j] : memref<64x32xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// A copy in blocks of 7x4: both inner dimensions make the row (28
// elements), walked as two nested loops; 32 rows are mapped.
// CHECK-LABEL: gpu.func @blocks
// CHECK: gpu.global_id x
// CHECK-NEXT: %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT: scf.for %[[L:.*]] = %{{.*}} to %[[C32]] step %{{.*}} {
// CHECK: %[[C7:.*]] = arith.constant 7 : index
// CHECK: scf.for %[[A:.*]] = %{{.*}} to %[[C7]] step %{{.*}} {
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// CHECK: memref.load %{{.*}}[%[[L]], %[[B]], %[[A]]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[L]], %[[A]], %[[B]]]
// The nvidia target maps every element.
// AUTO-LABEL: gpu.func @blocks
// AUTO: gpu.global_id x
// AUTO-NEXT: %[[C896:.*]] = arith.constant 896 : index
// AUTO-NEXT: scf.for %{{.*}} = %{{.*}} to %[[C896]] step %{{.*}} {
// AUTO-NOT: scf.for
// AUTO: memref.store
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>} {
  gpu.module @tcc_kernels {
    gpu.func @blocks(%out: memref<32x7x4xf32>, %in: memref<32x4x7xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c32 = arith.constant 32 : index
      scf.parallel (%i, %a, %b) = (%c0, %c0, %c0) to (%c32, %c7, %c4) step (%c1, %c1, %c1) {
        %x = memref.load %in[%i, %b, %a] : memref<32x4x7xf32>
        memref.store %x, %out[%i, %a, %b] : memref<32x7x4xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// Too few rows (8 of 64) to keep the cores busy: elements are mapped.
// CHECK-LABEL: gpu.func @few_rows
// CHECK: gpu.global_id x
// CHECK-NEXT: %[[C512:.*]] = arith.constant 512 : index
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %[[C512]] step %{{.*}} {
// CHECK-NOT: scf.for
// CHECK: memref.store
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @few_rows(%out: memref<8x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
        memref.store %zero, %out[%i, %j] : memref<8x64xf32>
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// A reduction over outer dimensions (a global pool of a channels-last
// image): its row of 32 channels walks inside the pixel loops, so that
// each pixel's channels are read in order, and its one row is mapped (a
// work-item per channel would read them a row apart). The fill maps its
// row alike.
// CHECK-LABEL: gpu.func @pool
// CHECK: gpu.global_id x
// CHECK: memref.store
// CHECK: gpu.global_id x
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for %[[L:.*]] = %{{.*}} to %[[ONE]] step %{{.*}} {
// CHECK-NEXT: scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: scf.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[C32]] step %{{.*}} {
// CHECK-NEXT: %[[CI:.*]] = affine.apply #{{.*}}(%[[J]])
// CHECK-NEXT: memref.load %{{.*}}[%[[L]], %[[H]], %[[W]], %[[CI]]]
// CHECK-NEXT: memref.load %{{.*}}[%[[L]], %[[J]]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[L]], %[[J]]]
// The nvidia target maps every element, its loops inside.
// AUTO-LABEL: gpu.func @pool
// AUTO: gpu.global_id x
// AUTO: gpu.global_id x
// AUTO-NEXT: %[[C32:.*]] = arith.constant 32 : index
// AUTO-NEXT: scf.for %{{.*}} = %{{.*}} to %[[C32]] step %{{.*}} {
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>} {
  gpu.module @tcc_kernels {
    gpu.func @pool(%out: memref<1x32xf32>, %in: memref<1x4x4x32xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      scf.parallel (%n, %c) = (%c0, %c0) to (%c1, %c32) step (%c1, %c1) {
        memref.store %zero, %out[%n, %c] : memref<1x32xf32>
        scf.reduce
      }
      scf.parallel (%n, %c) = (%c0, %c0) to (%c1, %c32) step (%c1, %c1) {
        scf.for %h = %c0 to %c4 step %c1 {
          scf.for %w = %c0 to %c4 step %c1 {
            %ci = affine.apply affine_map<(d0) -> (d0)>(%c)
            %x = memref.load %in[%n, %h, %w, %ci] : memref<1x4x4x32xf32>
            %a = memref.load %out[%n, %c] : memref<1x32xf32>
            %s = arith.addf %x, %a : f32
            memref.store %s, %out[%n, %c] : memref<1x32xf32>
          }
        }
        scf.reduce
      }
      gpu.return
    }
  }
}

// -----

// A reduction over the innermost dimension (row sums) reads along its
// loop: its rows stay outside it, and 8 rows are too few to map rows.
// CHECK-LABEL: gpu.func @row_sums
// CHECK: gpu.global_id x
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT: scf.for %[[L:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// CHECK-NEXT: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: memref.load %{{.*}}[%[[L]], %[[K]]]
// CHECK-NOT: scf.for
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @tcc_kernels {
    gpu.func @row_sums(%out: memref<8xf32>, %in: memref<8x64xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
        scf.for %k = %c0 to %c64 step %c1 {
          %x = memref.load %in[%i, %k] : memref<8x64xf32>
          %a = memref.load %out[%i] : memref<8xf32>
          %s = arith.addf %x, %a : f32
          memref.store %s, %out[%i] : memref<8xf32>
        }
        scf.reduce
      }
      gpu.return
    }
  }
}
