// tcc-dedupe-kernels: a kernel equal to an earlier one but for its name is
// erased, and its launches launch
// the earlier one with their own operands. Kernels that differ in their
// body, their strategy, their argument attributes or their signature stay.
// RUN: tcc-opt %s --split-input-file --tcc-dedupe-kernels | FileCheck %s

// CHECK-LABEL: func.func @blocks
// CHECK-SAME: (%[[X:.*]]: memref<64xf32>, %[[Y:.*]]: memref<64xf32>, %[[Z:.*]]: memref<64xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@relu_0 {{.*}} args(%[[X]] : memref<64xf32>, %[[Y]] : memref<64xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@relu_0 {{.*}} args(%[[Y]] : memref<64xf32>, %[[Z]] : memref<64xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@relu6_2 {{.*}} args(%[[Z]] : memref<64xf32>, %[[X]] : memref<64xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@relu_0 {{.*}} args(%[[X]] : memref<64xf32>, %[[Z]] : memref<64xf32>)
// CHECK: gpu.func @relu_0(
// CHECK-NOT: gpu.func @relu_1(
// CHECK: gpu.func @relu6_2(
// CHECK-NOT: gpu.func @relu_3(
module attributes {gpu.container_module} {
  func.func @blocks(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @tcc_kernels::@relu_0 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>, %y : memref<64xf32>)
    gpu.launch_func @tcc_kernels::@relu_1 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%y : memref<64xf32>, %z : memref<64xf32>)
    gpu.launch_func @tcc_kernels::@relu6_2 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%z : memref<64xf32>, %x : memref<64xf32>)
    gpu.launch_func @tcc_kernels::@relu_3 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>, %z : memref<64xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @relu_0(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %arg1[%i] : memref<64xf32>
      gpu.return
    }
    gpu.func @relu_1(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %arg1[%i] : memref<64xf32>
      gpu.return
    }
    gpu.func @relu6_2(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      %zero = arith.constant 0.0 : f32
      %six = arith.constant 6.0 : f32
      %r = arith.maximumf %v, %zero : f32
      %s = arith.minimumf %r, %six : f32
      memref.store %s, %arg1[%i] : memref<64xf32>
      gpu.return
    }
    gpu.func @relu_3(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %arg1[%i] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// Same bodies, but a different work-group size, a half-storage argument
// or another signature: three kernels stay three.
// CHECK-LABEL: func.func @different
// CHECK: gpu.launch_func @tcc_kernels::@copy_0
// CHECK: gpu.launch_func @tcc_kernels::@copy_1
// CHECK: gpu.launch_func @tcc_kernels::@copy_2
// CHECK: gpu.launch_func @tcc_kernels::@copy_3
// CHECK: gpu.func @copy_0(
// CHECK: gpu.func @copy_1(
// CHECK: gpu.func @copy_2(
// CHECK: gpu.func @copy_3(
module attributes {gpu.container_module} {
  func.func @different(%x: memref<64xf32>, %y: memref<64xf32>, %w: memref<32xf32>) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @tcc_kernels::@copy_0 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>, %y : memref<64xf32>)
    gpu.launch_func @tcc_kernels::@copy_1 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<64xf32>, %y : memref<64xf32>)
    gpu.launch_func @tcc_kernels::@copy_2 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>, %y : memref<64xf32>)
    gpu.launch_func @tcc_kernels::@copy_3 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<64xf32>, %w : memref<32xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @copy_0(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      memref.store %v, %arg1[%i] : memref<64xf32>
      gpu.return
    }
    gpu.func @copy_1(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      memref.store %v, %arg1[%i] : memref<64xf32>
      gpu.return
    }
    gpu.func @copy_2(%arg0: memref<64xf32>, %arg1: memref<64xf32> {tcc.storage = f16}) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      memref.store %v, %arg1[%i] : memref<64xf32>
      gpu.return
    }
    gpu.func @copy_3(%arg0: memref<64xf32>, %arg1: memref<32xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<64xf32>
      memref.store %v, %arg1[%i] : memref<32xf32>
      gpu.return
    }
  }
}
