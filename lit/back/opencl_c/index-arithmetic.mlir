// The OpenCL C back end (`tcc compile --compile-from=gpu --emit=opencl-c`)
// on index arithmetic, as a gather with a clamped, computed index: an i64
// buffer is `long`; index values are `tcc_index` (int here: every buffer
// is small); unsigned comparisons cast to `tcc_uindex`; signed division,
// remainder, min and max stay C's; scf.if is an if without else; a select
// is ?:, and the computed index addresses the gathered buffer.
// RUN: tcc compile %s --compile-from=gpu --emit=opencl-c | FileCheck %s

// CHECK: typedef int tcc_index;
// CHECK-LABEL: void gather_clamp(__global const float* restrict a0,
// CHECK-NEXT:     __global const long* restrict a1,
// CHECK-NEXT:     __global float* restrict a2) {
// CHECK-NEXT:   const tcc_index [[ID:v[0-9]+]] = (tcc_index)get_global_id(0);
// CHECK-NEXT:   const bool [[IN:v[0-9]+]] = (((tcc_uindex)[[ID]]) < ((tcc_uindex)100));
// CHECK-NEXT:   if ([[IN]]) {
// CHECK-NEXT:     const long [[RAW:v[0-9]+]] = a1[[[ID]]];
// CHECK-NEXT:     const tcc_index [[J:v[0-9]+]] = (tcc_index)([[RAW]]);
// CHECK-NEXT:     const tcc_index [[A:v[0-9]+]] = ([[J]] + 3);
// CHECK-NEXT:     const tcc_index [[B:v[0-9]+]] = ([[A]] * 3);
// CHECK-NEXT:     const tcc_index [[C:v[0-9]+]] = ([[B]] - [[ID]]);
// CHECK-NEXT:     const tcc_index [[D:v[0-9]+]] = ([[C]] / 3);
// CHECK-NEXT:     const tcc_index [[E:v[0-9]+]] = ([[D]] % 100);
// CHECK-NEXT:     const tcc_index [[LO:v[0-9]+]] = max([[E]], 0);
// CHECK-NEXT:     const tcc_index [[HI:v[0-9]+]] = min([[LO]], 99);
// CHECK-NEXT:     const bool [[NEG:v[0-9]+]] = ([[J]] < 0);
// CHECK-NEXT:     const tcc_index [[K:v[0-9]+]] = ([[NEG]] ? 0 : [[HI]]);
// CHECK-NEXT:     const float [[V:v[0-9]+]] = a0[[[K]]];
// CHECK-NEXT:     a2[[[ID]]] = [[V]];
// CHECK-NEXT:   }
// CHECK-NEXT:   return;
module attributes {gpu.container_module} {
  func.func @f(%x: memref<100xf32>, %n: memref<100xi64>, %y: memref<100xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @tcc_kernels::@gather_clamp blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<100xf32>, %n : memref<100xi64>, %y : memref<100xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @gather_clamp(%in: memref<100xf32>, %indices: memref<100xi64>, %out: memref<100xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %c99 = arith.constant 99 : index
      %c100 = arith.constant 100 : index
      %zero = arith.constant 0.0 : f32
      %id = gpu.global_id x
      %inside = arith.cmpi ult, %id, %c100 : index
      scf.if %inside {
        %raw = memref.load %indices[%id] : memref<100xi64>
        %j = arith.index_cast %raw : i64 to index
        %shifted = arith.addi %j, %c3 : index
        %scaled = arith.muli %shifted, %c3 : index
        %back = arith.subi %scaled, %id : index
        %q = arith.divsi %back, %c3 : index
        %r = arith.remsi %q, %c100 : index
        %lo = arith.maxsi %r, %c0 : index
        %hi = arith.minsi %lo, %c99 : index
        %neg = arith.cmpi slt, %j, %c0 : index
        %k = arith.select %neg, %c0, %hi : index
        %v = memref.load %in[%k] : memref<100xf32>
        memref.store %v, %out[%id] : memref<100xf32>
      }
      gpu.return
    }
  }
}
