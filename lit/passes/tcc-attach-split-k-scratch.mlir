// tcc-attach-split-k-scratch: every split-K GEMM kernel gets a workspace
// (allocated before each launch) and the shared, zero-initialised and
// writable counters global (sized for the kernel with the most tiles) as
// two more arguments; other kernels are left alone.
// RUN: tcc-opt %s --split-input-file --tcc-attach-split-k-scratch | FileCheck %s

// CHECK: memref.global "private" @tcc_split_k_counters : memref<6xi32> = dense<0>
// CHECK-LABEL: func.func @dense
// CHECK: %[[WS1:.*]] = memref.alloc() : memref<98304xf32>
// CHECK: %[[CNT1:.*]] = memref.get_global @tcc_split_k_counters : memref<6xi32>
// CHECK: gpu.launch_func @tcc_kernels::@split16 {{.*}} args(%{{.*}} : memref<1x64x96xf32>, %{{.*}} : memref<1x64x4096xf32>, %{{.*}} : memref<1x4096x96xf32>, %[[WS1]] : memref<98304xf32>, %[[CNT1]] : memref<6xi32>)
// CHECK: %[[WS2:.*]] = memref.alloc() : memref<4096xf32>
// CHECK: %[[CNT2:.*]] = memref.get_global @tcc_split_k_counters : memref<6xi32>
// CHECK: gpu.launch_func @tcc_kernels::@split2 {{.*}} args(%{{.*}} : memref<1x32x64xf32>, %{{.*}} : memref<1x32x1024xf32>, %{{.*}} : memref<1x1024x64xf32>, %[[WS2]] : memref<4096xf32>, %[[CNT2]] : memref<6xi32>)
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @tcc_kernels::@plain {{.*}} args(%{{.*}} : memref<1x64x8xf32>, %{{.*}} : memref<1x64x96xf32>, %{{.*}} : memref<1x96x8xf32>)
// CHECK: gpu.func @split16(%{{.*}}: memref<1x64x96xf32>, %{{.*}}: memref<1x64x4096xf32>, %{{.*}}: memref<1x4096x96xf32>, %{{.*}}: memref<98304xf32>, %{{.*}}: memref<6xi32>) kernel
// CHECK: gpu.func @split2(%{{.*}}: memref<1x32x64xf32>, %{{.*}}: memref<1x32x1024xf32>, %{{.*}}: memref<1x1024x64xf32>, %{{.*}}: memref<4096xf32>, %{{.*}}: memref<6xi32>) kernel
// CHECK: gpu.func @plain(%{{.*}}: memref<1x64x8xf32>, %{{.*}}: memref<1x64x96xf32>, %{{.*}}: memref<1x96x8xf32>) kernel
module attributes {gpu.container_module} {
  func.func @dense(%x: memref<1x64x4096xf32>, %w: memref<1x4096x96xf32>, %h: memref<1x64x96xf32>, %a: memref<1x32x1024xf32>, %b: memref<1x1024x64xf32>, %c: memref<1x32x64xf32>, %v: memref<1x96x8xf32>, %y: memref<1x64x8xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @tcc_kernels::@split16 blocks in (%c3, %c2, %c16) threads in (%c16, %c16, %c1) args(%h : memref<1x64x96xf32>, %x : memref<1x64x4096xf32>, %w : memref<1x4096x96xf32>)
    gpu.launch_func @tcc_kernels::@split2 blocks in (%c2, %c1, %c2) threads in (%c16, %c16, %c1) args(%c : memref<1x32x64xf32>, %a : memref<1x32x1024xf32>, %b : memref<1x1024x64xf32>)
    gpu.launch_func @tcc_kernels::@plain blocks in (%c1, %c1, %c1) threads in (%c16, %c16, %c1) args(%y : memref<1x64x8xf32>, %h : memref<1x64x96xf32>, %v : memref<1x96x8xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @split16(%arg0: memref<1x64x96xf32>, %arg1: memref<1x64x4096xf32>, %arg2: memref<1x4096x96xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 16, batch = 1, m = 64, n = 96, k = 4096>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x64x4096xf32>, memref<1x4096x96xf32>) outs(%arg0 : memref<1x64x96xf32>)
      gpu.return
    }
    gpu.func @split2(%arg0: memref<1x32x64xf32>, %arg1: memref<1x32x1024xf32>, %arg2: memref<1x1024x64xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 2, batch = 1, m = 32, n = 64, k = 1024>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x32x1024xf32>, memref<1x1024x64xf32>) outs(%arg0 : memref<1x32x64xf32>)
      gpu.return
    }
    gpu.func @plain(%arg0: memref<1x64x8xf32>, %arg1: memref<1x64x96xf32>, %arg2: memref<1x96x8xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 16, tile_n = 16, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 8, k = 96>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x64x96xf32>, memref<1x96x8xf32>) outs(%arg0 : memref<1x64x8xf32>)
      gpu.return
    }
  }
}

// -----

// Without split-K kernels nothing changes (no global).
// CHECK-NOT: tcc_split_k_counters
// CHECK-LABEL: func.func @f(
// CHECK: gpu.launch_func @tcc_kernels::@plain {{.*}} args(%{{.*}} : memref<4x4xf32>)
module attributes {gpu.container_module} {
  func.func @f(%y: memref<4x4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @tcc_kernels::@plain blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<4x4xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @plain(%arg0: memref<4x4xf32>) kernel {
      gpu.return
    }
  }
}
