// The OpenCL C back end (`tcc compile --compile-from=gpu --emit=opencl-c`)
// never materializes a memref: a view is its kernel argument plus a static
// offset and strides, folded into each access. A kernel argument with a
// strided layout (offset 8) starts there; a subview adds its offset
// (row 1, column 4 of a 4x16 buffer: 20) and keeps the parent's strides; a
// transpose swaps strides; collapse_shape and expand_shape re-index a
// contiguous buffer.
// RUN: tcc compile %s --compile-from=gpu --emit=opencl-c | FileCheck %s

// CHECK-LABEL: void views(__global const float* restrict a0,
// CHECK-NEXT:     __global const float* restrict a1,
// CHECK-NEXT:     __global float* restrict a2) {
// CHECK:   const tcc_index [[I:v[0-9]+]] = (tcc_index)get_global_id(0);
// CHECK:   const float [[S:v[0-9]+]] = a0[20 + [[I]] * 16 + [[I]]];
// CHECK:   const float [[T:v[0-9]+]] = a0[[[I]] + [[I]] * 16];
// CHECK:   const float [[C:v[0-9]+]] = a0[[[I]]];
// CHECK:   const float [[E:v[0-9]+]] = a0[[[I]] * 8 + [[I]]];
// CHECK:   const float [[O:v[0-9]+]] = a1[8 + [[I]]];
// CHECK:   a2[[[I]]] = {{v[0-9]+}};
module attributes {gpu.container_module} {
  func.func @f(%x: memref<4x16xf32>, %w: memref<16xf32, strided<[1], offset: 8>>, %y: memref<4xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @tcc_kernels::@views blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4x16xf32>, %w : memref<16xf32, strided<[1], offset: 8>>, %y : memref<4xf32>)
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @views(%in: memref<4x16xf32>, %shifted: memref<16xf32, strided<[1], offset: 8>>, %out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.global_id x
      %sub = memref.subview %in[1, 4] [2, 8] [1, 1] : memref<4x16xf32> to memref<2x8xf32, strided<[16, 1], offset: 20>>
      %s = memref.load %sub[%i, %i] : memref<2x8xf32, strided<[16, 1], offset: 20>>
      %t = memref.transpose %in (d0, d1) -> (d1, d0) : memref<4x16xf32> to memref<16x4xf32, strided<[1, 16]>>
      %tv = memref.load %t[%i, %i] : memref<16x4xf32, strided<[1, 16]>>
      %flat = memref.collapse_shape %in [[0, 1]] : memref<4x16xf32> into memref<64xf32>
      %c = memref.load %flat[%i] : memref<64xf32>
      %grid = memref.expand_shape %flat [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
      %e = memref.load %grid[%i, %i] : memref<8x8xf32>
      %o = memref.load %shifted[%i] : memref<16xf32, strided<[1], offset: 8>>
      %a = arith.addf %s, %tv : f32
      %b = arith.addf %a, %c : f32
      %d = arith.addf %b, %e : f32
      %r = arith.addf %d, %o : f32
      memref.store %r, %out[%i] : memref<4xf32>
      gpu.return
    }
  }
}
