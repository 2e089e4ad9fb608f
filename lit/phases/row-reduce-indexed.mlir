// A long reduction whose body reads its iteration indices (an ONNX CumSum:
// position m counts for output i when m <= i) is not a row reduction: the
// row template has no indices, so it runs as a loop nest, one work-item per
// output, and compiles for every target.
// RUN: tcc compile %s --compile-to=tile --target=nvidia | FileCheck %s --check-prefix=TILE
// RUN: tcc compile %s --compile-to=tile --target=pocl-cpu | FileCheck %s --check-prefix=TILE
// RUN: tcc compile %s --compile-to=tile --target=generic | FileCheck %s --check-prefix=TILE
// RUN: tcc compile %s --emit=opencl-c --target=pocl-cpu | FileCheck %s --check-prefix=CL

// TILE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}}tcc.strategy = #tcc.loops<
// TILE-NOT: #tcc.row_reduce

// CL: __kernel
// CL-NOT: __local
// CL: for (

func.func @prefix_sum(%x: tensor<4x1024xf32>) -> tensor<4x1024xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1024xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x1024xf32>) -> tensor<4x1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<4x1024xf32>) outs(%f : tensor<4x1024xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %i = linalg.index 1 : index
    %m = linalg.index 2 : index
    %c = arith.cmpi ule, %m, %i : index
    %s = arith.select %c, %v, %z : f32
    %a = arith.addf %acc, %s : f32
    linalg.yield %a : f32
  } -> tensor<4x1024xf32>
  return %r : tensor<4x1024xf32>
}
