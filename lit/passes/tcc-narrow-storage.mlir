// tcc-narrow-storage: constant weights and intermediate buffers that
// kernels only read, or only write, are marked `tcc.storage = f16` (on the
// memref.global or memref.alloc, and as an argument attribute on every
// kernel argument they reach); model inputs and outputs, buffers a loop
// kernel both loads and stores, buffers the host copies, split-K
// workspaces stay f32; a kernel whose launches pass an argument both f32
// and narrowed buffers is specialized per storage.
// With `type=bf16` (`tcc compile --precision=bf16`) the same buffers are
// marked `tcc.storage = bf16`; another type is refused.
// RUN: tcc-opt %s --split-input-file --tcc-narrow-storage | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-narrow-storage{type=bf16})' | FileCheck %s --check-prefix=BF16 --implicit-check-not="tcc.storage = f16"
// RUN: not tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-narrow-storage{type=f8})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: type must be f16 or bf16, not 'f8'

// The weight and the intermediate between the two kernels are narrowed;
// the model's input %x and output %y are not.
// CHECK: memref.global "private" constant @weight : memref<4xf32> = dense<{{.*}}> {tcc.storage = f16}
// CHECK-LABEL: func.func @chain(
// CHECK: %[[TMP:.*]] = memref.alloc() {tcc.storage = f16} : memref<4xf32>
// CHECK: gpu.func @scale(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {tcc.storage = f16}, %{{.*}}: memref<4xf32> {tcc.storage = f16}) kernel
// CHECK: gpu.func @square(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {tcc.storage = f16}) kernel
// BF16: memref.global "private" constant @weight : memref<4xf32> = dense<{{.*}}> {tcc.storage = bf16}
// BF16-LABEL: func.func @chain(
// BF16: %[[TMP:.*]] = memref.alloc() {tcc.storage = bf16} : memref<4xf32>
// BF16: gpu.func @scale(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {tcc.storage = bf16}, %{{.*}}: memref<4xf32> {tcc.storage = bf16}) kernel
// BF16: gpu.func @square(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {tcc.storage = bf16}) kernel
module attributes {gpu.container_module} {
  memref.global "private" constant @weight : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @chain(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %w = memref.get_global @weight : memref<4xf32>
    %tmp = memref.alloc() : memref<4xf32>
    gpu.launch_func @tcc_kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>, %w : memref<4xf32>, %tmp : memref<4xf32>)
    gpu.launch_func @tcc_kernels::@square blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%y : memref<4xf32>, %tmp : memref<4xf32>)
    memref.dealloc %tmp : memref<4xf32>
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @scale(%x: memref<4xf32>, %w: memref<4xf32>, %out: memref<4xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 4>} {
      %i = gpu.thread_id x
      %a = memref.load %x[%i] : memref<4xf32>
      %b = memref.load %w[%i] : memref<4xf32>
      %p = arith.mulf %a, %b : f32
      memref.store %p, %out[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @square(%out: memref<4xf32>, %in: memref<4xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 4>} {
      %i = gpu.thread_id x
      %a = memref.load %in[%i] : memref<4xf32>
      %p = arith.mulf %a, %a : f32
      memref.store %p, %out[%i] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// With a symbolic M the GEMM's extent is a host index appended after the
// scratch: the workspace and counters are still the last two buffers, and
// stay f32 while the weight is narrowed. (%a, allocated at a run-time
// size, stays f32 too: the pass narrows statically sized allocations only.)
// CHECK-LABEL: func.func @split_rows(
// CHECK: gpu.func @split_rows2(%{{.*}}: memref<1x?x64xf32>, %{{.*}}: memref<?x1024xf32>, %{{.*}}: memref<1x1024x64xf32> {tcc.storage = f16}, %{{.*}}: memref<4096xf32>, %{{.*}}: memref<6xi32>, %{{.*}}: index) kernel
module attributes {gpu.container_module} {
  memref.global "private" @tcc_split_k_counters : memref<6xi32> = dense<0>
  memref.global "private" constant @b : memref<1x1024x64xf32> = dense<0.5>
  func.func @split_rows(%c: memref<1x?x64xf32>, %m: index) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %a = memref.alloc(%m) : memref<?x1024xf32>
    gpu.launch_func @tcc_kernels::@fill_rows blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?x1024xf32>)
    %b = memref.get_global @b : memref<1x1024x64xf32>
    %ws = memref.alloc() : memref<4096xf32>
    %counters = memref.get_global @tcc_split_k_counters : memref<6xi32>
    gpu.launch_func @tcc_kernels::@split_rows2 blocks in (%c2, %c1, %c2) threads in (%c16, %c16, %c1) args(%c : memref<1x?x64xf32>, %a : memref<?x1024xf32>, %b : memref<1x1024x64xf32>, %ws : memref<4096xf32>, %counters : memref<6xi32>, %m : index)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @fill_rows(%out: memref<?x1024xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 1>} {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%c0, %c0] : memref<?x1024xf32>
      gpu.return
    }
    gpu.func @split_rows2(%arg0: memref<1x?x64xf32>, %arg1: memref<?x1024xf32>, %arg2: memref<1x1024x64xf32>, %ws: memref<4096xf32>, %counters: memref<6xi32>, %m: index) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 2, batch = 1, m = 32, n = 64, k = 1024>} {
      %a3 = memref.expand_shape %arg1 [[0, 1], [2]] output_shape [1, %m, 1024] : memref<?x1024xf32> into memref<1x?x1024xf32>
      linalg.batch_matmul ins(%a3, %arg2 : memref<1x?x1024xf32>, memref<1x1024x64xf32>) outs(%arg0 : memref<1x?x64xf32>)
      gpu.return
    }
  }
}

// -----

// A loop kernel that accumulates through its output (load and store, here
// through a view) keeps that buffer f32: every partial sum would be
// rounded to half. The weight it reads is still narrowed.
// CHECK-LABEL: func.func @accumulate(
// CHECK: memref.alloc() : memref<2x2xf32>
// CHECK: gpu.func @sum(%{{.*}}: memref<2x2xf32>, %{{.*}}: memref<4xf32> {tcc.storage = f16}) kernel
module attributes {gpu.container_module} {
  memref.global "private" constant @terms : memref<4xf32> = dense<1.0>
  func.func @accumulate(%y: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t = memref.get_global @terms : memref<4xf32>
    %acc = memref.alloc() : memref<2x2xf32>
    gpu.launch_func @tcc_kernels::@sum blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%acc : memref<2x2xf32>, %t : memref<4xf32>)
    gpu.launch_func @tcc_kernels::@copy_out blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<4xf32>, %acc : memref<2x2xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @sum(%acc: memref<2x2xf32>, %t: memref<4xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %flat = memref.collapse_shape %acc [[0, 1]] : memref<2x2xf32> into memref<4xf32>
      scf.for %i = %c0 to %c4 step %c1 {
        %old = memref.load %flat[%c0] : memref<4xf32>
        %v = memref.load %t[%i] : memref<4xf32>
        %new = arith.addf %old, %v : f32
        memref.store %new, %flat[%c0] : memref<4xf32>
      }
      gpu.return
    }
    gpu.func @copy_out(%y: memref<4xf32>, %acc: memref<2x2xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %acc[%c0, %c0] : memref<2x2xf32>
      memref.store %v, %y[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// The host copies %a into the output (bytes: both sides need one
// storage), so %a stays f32. A kernel launched with an f32 buffer (%a; %x,
// an input) in one place and a narrowed one (%b) in another at the same
// argument is specialized: the first storage (in launch order) keeps the
// kernel, the other gets a copy NAME_s1 whose argument is marked, and the
// launch passing it is pointed at the copy; %b stays narrowed.
// CHECK-LABEL: func.func @mixed(
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[B:.*]] = memref.alloc() {tcc.storage = f16} : memref<4xf32>
// CHECK: gpu.launch_func @tcc_kernels::@produce {{.*}} args(%[[A]] : memref<4xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@produce_s1 {{.*}} args(%[[B]] : memref<4xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@consume {{.*}} args(%{{.*}} : memref<4xf32>, %[[B]] : memref<4xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@consume_s1 {{.*}} args(%{{.*}} : memref<4xf32>, %arg0 : memref<4xf32>)
// CHECK: gpu.func @produce(%{{.*}}: memref<4xf32>) kernel
// CHECK: gpu.func @produce_s1(%{{.*}}: memref<4xf32> {tcc.storage = f16}) kernel
// CHECK: gpu.func @consume(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {tcc.storage = f16}) kernel
// CHECK: gpu.func @consume_s1(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>) kernel
// CHECK-NOT: tcc.storage
// CHECK: // -----
module attributes {gpu.container_module} {
  func.func @mixed(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %a = memref.alloc() : memref<4xf32>
    %b = memref.alloc() : memref<4xf32>
    gpu.launch_func @tcc_kernels::@produce blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    memref.copy %a, %y : memref<4xf32> to memref<4xf32>
    gpu.launch_func @tcc_kernels::@produce blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<4xf32>)
    gpu.launch_func @tcc_kernels::@consume blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%z : memref<4xf32>, %b : memref<4xf32>)
    gpu.launch_func @tcc_kernels::@consume blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%z : memref<4xf32>, %x : memref<4xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @produce(%out: memref<4xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 1>} {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @consume(%out: memref<4xf32>, %in: memref<4xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %in[%c0] : memref<4xf32>
      memref.store %v, %out[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// A split-K GEMM's operands are narrowed, its partial-tile workspace and
// counters (the two arguments tcc-attach-split-k-scratch appended) are not.
// CHECK-LABEL: func.func @split(
// CHECK: %[[A:.*]] = memref.alloc() {tcc.storage = f16} : memref<1x32x1024xf32>
// CHECK: %[[WS:.*]] = memref.alloc() : memref<4096xf32>
// CHECK: gpu.func @split2(%{{.*}}: memref<1x32x64xf32>, %{{.*}}: memref<1x32x1024xf32> {tcc.storage = f16}, %{{.*}}: memref<1x1024x64xf32> {tcc.storage = f16}, %{{.*}}: memref<4096xf32>, %{{.*}}: memref<6xi32>) kernel
module attributes {gpu.container_module} {
  memref.global "private" @tcc_split_k_counters : memref<6xi32> = dense<0>
  memref.global "private" constant @b : memref<1x1024x64xf32> = dense<0.5>
  func.func @split(%c: memref<1x32x64xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %a = memref.alloc() : memref<1x32x1024xf32>
    gpu.launch_func @tcc_kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<1x32x1024xf32>)
    %b = memref.get_global @b : memref<1x1024x64xf32>
    %ws = memref.alloc() : memref<4096xf32>
    %counters = memref.get_global @tcc_split_k_counters : memref<6xi32>
    gpu.launch_func @tcc_kernels::@split2 blocks in (%c2, %c1, %c2) threads in (%c16, %c16, %c1) args(%c : memref<1x32x64xf32>, %a : memref<1x32x1024xf32>, %b : memref<1x1024x64xf32>, %ws : memref<4096xf32>, %counters : memref<6xi32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @fill(%out: memref<1x32x1024xf32>) kernel attributes {tcc.strategy = #tcc.loops<workgroup_size = 1>} {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%c0, %c0, %c0] : memref<1x32x1024xf32>
      gpu.return
    }
    gpu.func @split2(%arg0: memref<1x32x64xf32>, %arg1: memref<1x32x1024xf32>, %arg2: memref<1x1024x64xf32>, %ws: memref<4096xf32>, %counters: memref<6xi32>) kernel attributes {tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 2, batch = 1, m = 32, n = 64, k = 1024>} {
      linalg.batch_matmul ins(%arg1, %arg2 : memref<1x32x1024xf32>, memref<1x1024x64xf32>) outs(%arg0 : memref<1x32x64xf32>)
      gpu.return
    }
  }
}
