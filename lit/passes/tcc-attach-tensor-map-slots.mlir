// tcc-attach-tensor-map-slots: on an nvidia target at precision tf32 (the
// module's #tcc.target), every GEMM kernel whose
// tile (128x128, 256 work-items, unsplit) and shape (M, N multiples of 128,
// K of 32) allow the TF32 wgmma body gets a scratch buffer of one 128-byte
// tensor-map slot per work-group (allocated before each launch) as one more
// argument, and is marked tcc.tensor_map_slots; at precision fp16 or bf16
// launched by the CUDA driver (api cuda), GEMMs on a tile of the half
// wgmma body get two slots per work-group; other kernels, other targets,
// fp32 and half precision through OpenCL are left alone.
// RUN: tcc-opt %s --split-input-file --tcc-attach-tensor-map-slots | FileCheck %s

// Two batches of 2 x 3 work-groups: 12 slots of 128 bytes.
// CHECK-LABEL: func.func @dense
// CHECK: %[[SLOTS:.*]] = memref.alloc() : memref<1536xi8>
// CHECK: gpu.launch_func @tcc_kernels::@big {{.*}} args(%{{.*}} : memref<2x256x384xf32>, %{{.*}} : memref<2x256x64xf32>, %{{.*}} : memref<2x64x384xf32>, %[[SLOTS]] : memref<1536xi8>)
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @tcc_kernels::@small {{.*}} args(%{{.*}} : memref<1x64x64xf32>, %{{.*}} : memref<1x64x64xf32>, %{{.*}} : memref<1x64x64xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@short_k {{.*}} args(%{{.*}} : memref<1x128x128xf32>, %{{.*}} : memref<1x128x48xf32>, %{{.*}} : memref<1x48x128xf32>)
// CHECK: gpu.func @big(%{{.*}}: memref<2x256x384xf32>, %{{.*}}: memref<2x256x64xf32>, %{{.*}}: memref<2x64x384xf32>, %{{.*}}: memref<1536xi8>) kernel attributes {{{.*}}tcc.tensor_map_slots}
// CHECK: gpu.func @small(%{{.*}}: memref<1x64x64xf32>, %{{.*}}: memref<1x64x64xf32>, %{{.*}}: memref<1x64x64xf32>) kernel attributes {tcc.strategy
// CHECK-NOT: tcc.tensor_map_slots
// CHECK: gpu.func @short_k(
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "tf32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>} {
  func.func @dense(%a: memref<2x256x64xf32>, %b: memref<2x64x384xf32>, %c: memref<2x256x384xf32>, %x: memref<1x64x64xf32>, %y: memref<1x64x64xf32>, %p: memref<1x128x48xf32>, %q: memref<1x48x128xf32>, %r: memref<1x128x128xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @tcc_kernels::@big blocks in (%c3, %c2, %c2) threads in (%c16, %c16, %c1) args(%c : memref<2x256x384xf32>, %a : memref<2x256x64xf32>, %b : memref<2x64x384xf32>)
    gpu.launch_func @tcc_kernels::@small blocks in (%c1, %c1, %c1) threads in (%c16, %c16, %c1) args(%y : memref<1x64x64xf32>, %x : memref<1x64x64xf32>, %x : memref<1x64x64xf32>)
    gpu.launch_func @tcc_kernels::@short_k blocks in (%c1, %c1, %c1) threads in (%c16, %c16, %c1) args(%r : memref<1x128x128xf32>, %p : memref<1x128x48xf32>, %q : memref<1x48x128xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @big(%arg0: memref<2x256x384xf32>, %arg1: memref<2x256x64xf32>, %arg2: memref<2x64x384xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 2, m = 256, n = 384, k = 64>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<2x256x64xf32>, memref<2x64x384xf32>) outs(%arg0 : memref<2x256x384xf32>)
      gpu.return
    }
    gpu.func @small(%arg0: memref<1x64x64xf32>, %arg1: memref<1x64x64xf32>, %arg2: memref<1x64x64xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 64, tile_n = 64, tile_k = 16, work_m = 4, work_n = 4, split_k = 1, batch = 1, m = 64, n = 64, k = 64>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x64x64xf32>, memref<1x64x64xf32>) outs(%arg0 : memref<1x64x64xf32>)
      gpu.return
    }
    gpu.func @short_k(%arg0: memref<1x128x128xf32>, %arg1: memref<1x128x48xf32>, %arg2: memref<1x48x128xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 128, n = 128, k = 48>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x128x48xf32>, memref<1x48x128xf32>) outs(%arg0 : memref<1x128x128xf32>)
      gpu.return
    }
  }
}

// -----

// Another target: nothing changes.
// CHECK-LABEL: func.func @generic
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @tcc_kernels::@big {{.*}} args(%{{.*}} : memref<1x128x128xf32>, %{{.*}} : memref<1x128x64xf32>, %{{.*}} : memref<1x64x128xf32>)
// CHECK-NOT: tcc.tensor_map_slots
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "opencl-generic", family = "generic", arch = "", api = "opencl", precision = "tf32", vector_width = 4, max_local_bytes = 32768, max_workgroup_size = 256>} {
  func.func @generic(%a: memref<1x128x64xf32>, %b: memref<1x64x128xf32>, %c: memref<1x128x128xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @tcc_kernels::@big blocks in (%c1, %c1, %c1) threads in (%c16, %c16, %c1) args(%c : memref<1x128x128xf32>, %a : memref<1x128x64xf32>, %b : memref<1x64x128xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @big(%arg0: memref<1x128x128xf32>, %arg1: memref<1x128x64xf32>, %arg2: memref<1x64x128xf32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 128, tile_k = 16, work_m = 8, work_n = 8, split_k = 1, batch = 1, m = 128, n = 128, k = 64>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x128x64xf32>, memref<1x64x128xf32>) outs(%arg0 : memref<1x128x128xf32>)
      gpu.return
    }
  }
}

// -----

// FP16 launched by the CUDA driver (api cuda): a GEMM on a tile of the
// half wgmma body (128x192 here: 2 batches of 2 x 2 work-groups) gets two
// 128-byte slots per work-group, A's map and B's: 2048 bytes.
// CHECK-LABEL: func.func @half
// CHECK: %[[HALF_SLOTS:.*]] = memref.alloc() : memref<2048xi8>
// CHECK: gpu.launch_func @tcc_kernels::@big {{.*}} args(%{{.*}} : memref<2x256x384xf16>, %{{.*}} : memref<2x256x64xf16>, %{{.*}} : memref<2x64x384xf16>, %[[HALF_SLOTS]] : memref<2048xi8>)
// CHECK: gpu.func @big({{.*}}memref<2048xi8>) kernel attributes {{{.*}}tcc.tensor_map_slots}
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "cuda", precision = "fp16", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>} {
  func.func @half(%a: memref<2x256x64xf16>, %b: memref<2x64x384xf16>, %c: memref<2x256x384xf16>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @tcc_kernels::@big blocks in (%c2, %c2, %c2) threads in (%c16, %c16, %c1) args(%c : memref<2x256x384xf16>, %a : memref<2x256x64xf16>, %b : memref<2x64x384xf16>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @big(%arg0: memref<2x256x384xf16>, %arg1: memref<2x256x64xf16>, %arg2: memref<2x64x384xf16>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 192, tile_k = 16, work_m = 8, work_n = 12, split_k = 1, batch = 2, m = 256, n = 384, k = 64>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<2x256x64xf16>, memref<2x64x384xf16>) outs(%arg0 : memref<2x256x384xf16>)
      gpu.return
    }
  }
}

// -----

// FP16 through OpenCL (48 KiB of local memory, no half wgmma body):
// nothing changes.
// CHECK-LABEL: func.func @half_opencl
// CHECK-NOT: memref.alloc
// CHECK-NOT: tcc.tensor_map_slots
module attributes {gpu.container_module, tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp16", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>} {
  func.func @half_opencl(%a: memref<2x256x64xf16>, %b: memref<2x64x384xf16>, %c: memref<2x256x384xf16>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @tcc_kernels::@big blocks in (%c2, %c2, %c2) threads in (%c16, %c16, %c1) args(%c : memref<2x256x384xf16>, %a : memref<2x256x64xf16>, %b : memref<2x64x384xf16>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @big(%arg0: memref<2x256x384xf16>, %arg1: memref<2x256x64xf16>, %arg2: memref<2x64x384xf16>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 128, tile_n = 192, tile_k = 16, work_m = 8, work_n = 12, split_k = 1, batch = 2, m = 256, n = 384, k = 64>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<2x256x64xf16>, memref<2x64x384xf16>) outs(%arg0 : memref<2x256x384xf16>)
      gpu.return
    }
  }
}
