// The OpenCL C back end's errors on hand-written gpu-phase IR name the op
// it cannot translate and its location, and nothing is printed.
// RUN: not tcc compile %s --compile-from=gpu --emit=opencl-c > %t.out 2> %t.err
// RUN: FileCheck %s < %t.err
// RUN: count 0 < %t.out

// CHECK: errors.mlir:[[@LINE+10]]:12: error: cannot translate 'vector.broadcast' to OpenCL C
module attributes {gpu.container_module} {
  func.func @f(%x: memref<4xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @tcc_kernels::@vec blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @vec(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %one = arith.constant 1.0 : f32
      %v = vector.broadcast %one : f32 to vector<4xf32>
      gpu.return
    }
  }
}
