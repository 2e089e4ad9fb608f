// The OpenCL C back end on a hand-written gpu-phase module (`tcc compile
// --compile-from=gpu --emit=opencl-c`): an elementwise loop kernel. The
// work-group size becomes reqd_work_group_size; buffers only read are
// `const`; the grid-stride scf.for becomes a C for loop over get_global_id;
// loads and stores index the row-major buffer; arith and math ops become C
// expressions (math.exp through tcc_expf, select as ?:).
// RUN: tcc compile %s --compile-from=gpu --emit=opencl-c | FileCheck %s

// CHECK: typedef int tcc_index; /* every buffer < 2^30 elements */
// CHECK-LABEL: /* scale_exp: {{.*}}kernel, 128 work-items per group; from {{.*}}elementwise.mlir:{{[0-9]+}}:5 */
// CHECK-NEXT: __kernel __attribute__((reqd_work_group_size(128, 1, 1)))
// CHECK-NEXT: void scale_exp(__global const float* restrict a0,
// CHECK-NEXT:     __global float* restrict a1) {
// CHECK-NEXT:   const tcc_index [[BDIM:v[0-9]+]] = (tcc_index)get_local_size(0);
// CHECK-NEXT:   const tcc_index [[GDIM:v[0-9]+]] = (tcc_index)get_num_groups(0);
// CHECK-NEXT:   const tcc_index [[STRIDE:v[0-9]+]] = ([[BDIM]] * [[GDIM]]);
// CHECK-NEXT:   const tcc_index [[ID:v[0-9]+]] = (tcc_index)get_global_id(0);
// CHECK-NEXT:   for (tcc_index [[I:v[0-9]+]] = [[ID]]; [[I]] < 128; [[I]] += [[STRIDE]]) {
// CHECK-NEXT:     const tcc_index [[COL:v[0-9]+]] = (tcc_index)((tcc_uindex)[[I]] % (tcc_uindex)64);
// CHECK-NEXT:     const tcc_index [[ROW:v[0-9]+]] = (tcc_index)((tcc_uindex)[[I]] / (tcc_uindex)64);
// CHECK-NEXT:     const float [[X:v[0-9]+]] = a0[[[ROW]] * 64 + [[COL]]];
// CHECK-NEXT:     const float [[M:v[0-9]+]] = ([[X]] * 3e0f);
// CHECK-NEXT:     const float [[E:v[0-9]+]] = tcc_expf([[M]]);
// CHECK-NEXT:     const bool [[POS:v[0-9]+]] = ([[X]] > 0e0f);
// CHECK-NEXT:     const float [[S:v[0-9]+]] = ([[POS]] ? [[E]] : [[X]]);
// CHECK-NEXT:     a1[[[ROW]] * 64 + [[COL]]] = [[S]];
// CHECK-NEXT:   }
// CHECK-NEXT:   return;
// CHECK-NEXT: }
module attributes {gpu.container_module} {
  func.func @f(%x: memref<2x64xf32>, %y: memref<2x64xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @tcc_kernels::@scale_exp blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<2x64xf32>, %y : memref<2x64xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @scale_exp(%in: memref<2x64xf32>, %out: memref<2x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %three = arith.constant 3.0 : f32
      %zero = arith.constant 0.0 : f32
      %bdim = gpu.block_dim x
      %gdim = gpu.grid_dim x
      %stride = arith.muli %bdim, %gdim : index
      %id = gpu.global_id x
      scf.for %i = %id to %c128 step %stride {
        %col = arith.remui %i, %c64 : index
        %row = arith.divui %i, %c64 : index
        %v = memref.load %in[%row, %col] : memref<2x64xf32>
        %m = arith.mulf %v, %three : f32
        %e = math.exp %m : f32
        %pos = arith.cmpf ogt, %v, %zero : f32
        %s = arith.select %pos, %e, %v : f32
        memref.store %s, %out[%row, %col] : memref<2x64xf32>
      }
      gpu.return
    }
  }
}
