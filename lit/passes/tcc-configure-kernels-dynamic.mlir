// tcc-configure-kernels chooses the strategy of a kernel on a symbolic
// dimension (issue 33) as for the largest declared maximum (here batch
// 1..64): the GEMM template's tiles for M = 64, loop nests' work-groups for
// 64 rows, the row templates for the static row. The kernels keep their
// bounds guards along the dynamic extent (the gpu phase's business).
// RUN: tcc-opt %s --split-input-file --tcc-configure-kernels=target=generic | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-configure-kernels{target=pocl-cpu-avx2})' | FileCheck %s --check-prefix=AVX2

// An elementwise kernel over ?x4: the same strategy as over 64x4.
// CHECK-LABEL: func.func @relu
// CHECK: tcc.strategy = #tcc.loops<workgroup_size = 128>
// AVX2-LABEL: func.func @relu
// AVX2: tcc.strategy = #tcc.loops<workgroup_size = 256, max_workgroups = 64>
#map = affine_map<(d0, d1) -> (d0, d1)>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @relu(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %n = tensor.dim %x, %c0 : tensor<?x4xf32>
    %e = tensor.empty(%n) : tensor<?x4xf32>
    %y = tcc.dispatch "relu_0" -> tensor<?x4xf32> {
      %g = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) attrs = {tcc.kind = "elementwise"} {
      ^bb0(%in: f32, %out: f32):
        %r = arith.maximumf %in, %zero : f32
        linalg.yield %r : f32
      } -> tensor<?x4xf32> loc("relu")
      tcc.yield %g : tensor<?x4xf32>
    }
    return %y : tensor<?x4xf32>
  }
}

// -----

// A product with a dynamic M: the GEMM template for M = 64 (the largest
// of the declared maxima: both dimensions are taken at 64 here).
// CHECK-LABEL: func.func @fc
// CHECK-NOT: tcc.strategy = #tcc.loops
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 32>
// AVX2-LABEL: func.func @fc
// AVX2: tcc.strategy = #tcc.gemm<tile_m = 6, tile_n = 16, tile_k = 4, work_m = 6, work_n = 16, split_k = 1, batch = 1, m = 64, n = 64, k = 32>
module attributes {tcc.dims = #tcc.dims<names = ["batch", "rows"], min = [1, 1], max = [64, 16]>} {
  func.func @fc(%a: tensor<1x?x32xf32>, %b: tensor<1x32x64xf32>) -> tensor<1x?x64xf32> {
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %n = tensor.dim %a, %c1 : tensor<1x?x32xf32>
    %e = tensor.empty(%n) : tensor<1x?x64xf32>
    %y = tcc.dispatch "fc_0" -> tensor<1x?x64xf32> {
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      %p = linalg.batch_matmul {tcc.kind = "matmul"} ins(%a, %b : tensor<1x?x32xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      tcc.yield %p : tensor<1x?x64xf32>
    }
    return %y : tensor<1x?x64xf32>
  }
}

// -----

// A softmax over the static last axis of ?x10: one work-group per row,
// sized for the row of 10.
// CHECK-LABEL: func.func @softmax
// CHECK: tcc.strategy = #tcc.softmax<workgroup_size = 64>
// AVX2-LABEL: func.func @softmax
// AVX2: tcc.strategy = #tcc.softmax<workgroup_size = 1>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @softmax(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x10xf32>
    %e = tensor.empty(%n) : tensor<?x10xf32>
    %y = tcc.dispatch "softmax_0" -> tensor<?x10xf32> {
      %s = linalg.softmax {tcc.kind = "softmax"} dimension(1) ins(%x : tensor<?x10xf32>) outs(%e : tensor<?x10xf32>) -> tensor<?x10xf32>
      tcc.yield %s : tensor<?x10xf32>
    }
    return %y : tensor<?x10xf32>
  }
}

// -----

// Rows folded from the batch and 128 tokens (`?x128x32` collapsed into
// `1x?x32`, as a matmul's input is): M's bound is 64 x 128 = 8192, read
// through the collapse and the sizes of the empty tensor, not 64 (which
// took split-K tiles for a product of thousands of rows).
// CHECK-LABEL: func.func @tokens
// CHECK: tcc.strategy = #tcc.gemm<{{.*}}split_k = 1, batch = 1, m = 8192, n = 64, k = 32>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @tokens(%x: tensor<?x128x32xf32>, %b: tensor<1x32x64xf32>) -> tensor<1x?x64xf32> {
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %a = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x128x32xf32> into tensor<?x32xf32>
    %rows = tensor.dim %a, %c0 : tensor<?x32xf32>
    %a3 = tensor.expand_shape %a [[0, 1], [2]] output_shape [1, %rows, 32] : tensor<?x32xf32> into tensor<1x?x32xf32>
    %n = tensor.dim %a3, %c1 : tensor<1x?x32xf32>
    %e = tensor.empty(%n) : tensor<1x?x64xf32>
    %y = tcc.dispatch "tokens_0" -> tensor<1x?x64xf32> {
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      %p = linalg.batch_matmul {tcc.kind = "matmul"} ins(%a3, %b : tensor<1x?x32xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      tcc.yield %p : tensor<1x?x64xf32>
    }
    return %y : tensor<1x?x64xf32>
  }
}

// -----

// Attention's scores: a batch of `heads x batch` products over static
// 128x128 matrices (heads 12, `?x12x128x64` collapsed): the batch's
// bound is 12 x 64.
// CHECK-LABEL: func.func @scores
// CHECK: tcc.strategy = #tcc.gemm<{{.*}}batch = 768, m = 128, n = 128, k = 64>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @scores(%q: tensor<?x12x128x64xf32>, %k: tensor<?x12x64x128xf32>) -> tensor<?x128x128xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x12x128x64xf32> into tensor<?x128x64xf32>
    %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<?x12x64x128xf32> into tensor<?x64x128xf32>
    %n = tensor.dim %q3, %c0 : tensor<?x128x64xf32>
    %e = tensor.empty(%n) : tensor<?x128x128xf32>
    %y = tcc.dispatch "scores_0" -> tensor<?x128x128xf32> {
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128x128xf32>) -> tensor<?x128x128xf32>
      %p = linalg.batch_matmul {tcc.kind = "matmul"} ins(%q3, %k3 : tensor<?x128x64xf32>, tensor<?x64x128xf32>) outs(%f : tensor<?x128x128xf32>) -> tensor<?x128x128xf32>
      tcc.yield %p : tensor<?x128x128xf32>
    }
    return %y : tensor<?x128x128xf32>
  }
}

// -----

// One part of a split (GPT-2's fused Q/K/V projection, cut in three by
// `tensor.extract_slice`): the slice's rows are the source's, `batch x
// 128`, bounded at 64 x 128 through the slice's size operand.
// CHECK-LABEL: func.func @split_part
// CHECK: tcc.strategy = #tcc.gemm<{{.*}}batch = 1, m = 8192, n = 64, k = 32>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @split_part(%qkv: tensor<?x128x96xf32>, %w: tensor<1x32x64xf32>) -> tensor<1x?x64xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %n = tensor.dim %qkv, %c0 : tensor<?x128x96xf32>
    %q = tensor.extract_slice %qkv[0, 0, 32] [%n, 128, 32] [1, 1, 1] : tensor<?x128x96xf32> to tensor<?x128x32xf32>
    %rows = tensor.collapse_shape %q [[0, 1], [2]] : tensor<?x128x32xf32> into tensor<?x32xf32>
    %r = tensor.dim %rows, %c0 : tensor<?x32xf32>
    %a = tensor.expand_shape %rows [[0, 1], [2]] output_shape [1, %r, 32] : tensor<?x32xf32> into tensor<1x?x32xf32>
    %m = tensor.dim %a, %c1 : tensor<1x?x32xf32>
    %e = tensor.empty(%m) : tensor<1x?x64xf32>
    %y = tcc.dispatch "split_part_0" -> tensor<1x?x64xf32> {
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      %p = linalg.batch_matmul {tcc.kind = "matmul"} ins(%a, %w : tensor<1x?x32xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
      tcc.yield %p : tensor<1x?x64xf32>
    }
    return %y : tensor<1x?x64xf32>
  }
}
