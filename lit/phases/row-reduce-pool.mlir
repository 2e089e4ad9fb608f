// Reductions over several trailing dimensions (global pools) take the
// row-reduction template as one row of their product per output element:
// the writer walks the row with one index `r` and takes each reduced
// dimension from it. Strided rows (a pool over a channels-last image: one
// row a channel) take it only from 2048 elements (below, the loop nest's
// work-item per channel, coalesced across channels, is faster on GPUs);
// contiguous rows (a planar pool) from 128, on CPUs too.
// RUN: tcc compile %s --compile-to=tile --target=nvidia | FileCheck %s --check-prefix=TILE
// RUN: tcc compile %s --compile-to=tile --target=pocl-cpu | FileCheck %s --check-prefix=CPU
// RUN: tcc compile %s --emit=opencl-c --target=nvidia | FileCheck %s --check-prefix=CL

// TILE-LABEL: tcc.dispatch "reduce_add_0"
// TILE: iterator_types = ["parallel", "parallel", "reduction", "reduction"]{{.*}}tcc.strategy = #tcc.row_reduce<workgroup_size = 256>
// TILE-LABEL: tcc.dispatch "reduce_add_1"
// TILE: tcc.strategy = #tcc.loops<
// TILE-LABEL: tcc.dispatch "reduce_add_2"
// TILE: tcc.strategy = #tcc.row_reduce<workgroup_size = 256>

// CPU-LABEL: tcc.dispatch "reduce_add_0"
// CPU: tcc.strategy = #tcc.loops<
// CPU-LABEL: tcc.dispatch "reduce_add_1"
// CPU: tcc.strategy = #tcc.loops<
// CPU-LABEL: tcc.dispatch "reduce_add_2"
// CPU: tcc.strategy = #tcc.row_reduce<workgroup_size = 1>

// 64 x 64 pixels of 32 channels: rows and columns from r.
// CL-LABEL: void reduce_add_0(
// CL: const tcc_index d0 = (row / 32);
// CL: for (tcc_index r = lid; r < 4096; r += 256) {
// CL-NEXT: const tcc_index r3 = (r % 64);
// CL-NEXT: const tcc_index r2 = (r / 64);
// CL-NEXT: const float v0 = a1[d0 * 131072 + r2 * 2048 + r3 * 32 + d1];
// CL-LABEL: void reduce_add_1(
// CL-NOT: __local
// CL: for (tcc_index
// CL-LABEL: void reduce_add_2(
// CL: for (tcc_index r = lid; r < 256; r += 256) {
// CL-NEXT: const tcc_index r3 = (r % 16);
// CL-NEXT: const tcc_index r2 = (r / 16);

#in = affine_map<(b, c, h, w) -> (b, h, w, c)>
#out = affine_map<(b, c, h, w) -> (b, c)>
#nchw = affine_map<(b, c, h, w) -> (b, c, h, w)>
func.func @pools(%x: tensor<4x64x64x32xf32>, %y: tensor<4x16x16x32xf32>, %z: tensor<4x32x16x16xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %long = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<4x64x64x32xf32>) outs(%f : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %short = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%y : tensor<4x16x16x32xf32>) outs(%f : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %planar = linalg.generic {indexing_maps = [#nchw, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%z : tensor<4x32x16x16xf32>) outs(%f : tensor<4x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  return %long, %short, %planar : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}
