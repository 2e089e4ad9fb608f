// The OpenCL C back end (`tcc compile --compile-from=gpu --emit=opencl-c`)
// on a row-sum loop kernel: each work-item owns output rows; the inner
// scf.for carries the running sum (iter_args) as a C variable, assigned
// the yielded value at the end of each iteration and read after the loop, and the result is stored once per row.
// RUN: tcc compile %s --compile-from=gpu --emit=opencl-c | FileCheck %s

// CHECK-LABEL: void row_sum(__global const float* restrict a0,
// CHECK-NEXT:     __global float* restrict a1) {
// CHECK:   for (tcc_index [[ROW:v[0-9]+]] = {{v[0-9]+}}; [[ROW]] < 8; [[ROW]] += {{v[0-9]+}}) {
// CHECK-NEXT:     float [[ACC:v[0-9]+]] = 0e0f;
// CHECK-NEXT:     for (tcc_index [[K:v[0-9]+]] = 0; [[K]] < 32; [[K]] += 1) {
// CHECK-NEXT:       const float [[X:v[0-9]+]] = a0[[[ROW]] * 32 + [[K]]];
// CHECK-NEXT:       const float [[SUM:v[0-9]+]] = ([[ACC]] + [[X]]);
// CHECK-NEXT:       const float [[YIELD:v[0-9]+]] = [[SUM]];
// CHECK-NEXT:       [[ACC]] = [[YIELD]];
// CHECK-NEXT:     }
// CHECK-NEXT:     a1[[[ROW]]] = [[ACC]];
// CHECK-NEXT:   }
module attributes {gpu.container_module} {
  func.func @f(%x: memref<8x32xf32>, %y: memref<8xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @tcc_kernels::@row_sum blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<8x32xf32>, %y : memref<8xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @row_sum(%in: memref<8x32xf32>, %out: memref<8xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %bdim = gpu.block_dim x
      %gdim = gpu.grid_dim x
      %stride = arith.muli %bdim, %gdim : index
      %id = gpu.global_id x
      scf.for %row = %id to %c8 step %stride {
        %sum = scf.for %k = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %in[%row, %k] : memref<8x32xf32>
          %next = arith.addf %acc, %v : f32
          scf.yield %next : f32
        }
        memref.store %sum, %out[%row] : memref<8xf32>
      }
      gpu.return
    }
  }
}
