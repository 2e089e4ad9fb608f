// tcc-fold-pad-slices folds a constant pad read through shifted slices
// (a stencil along one axis, as ONNX's LRN is imported) into the
// elementwise generic that reads the slices: each slice becomes a read of
// the unpadded source at index + offset - low, clamped into bounds where it
// can leave them and replaced by the pad value there; a cheap elementwise
// producer of the source (the squares) is recomputed per read. Pads with
// another user are left alone.
// RUN: tcc-opt %s --split-input-file --tcc-fold-pad-slices | FileCheck %s

// CHECK-LABEL: func.func @channel_window
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x2x6xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<1x2x2x6xf32>) outs(
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// The slice at offset 0 of a pad with low 1: channel c - 1, checked and clamped.
// CHECK: %[[C0:.*]] = linalg.index 3 : index
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[SH0:.*]] = arith.subi %[[C0]], %[[ONE]] : index
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[SH0]]
// CHECK: %[[LT:.*]] = arith.cmpi slt, %[[SH0]]
// CHECK: %[[OK0:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK: %[[LO0:.*]] = arith.maxsi %[[SH0]]
// CHECK: %[[CL0:.*]] = arith.minsi %[[LO0]]
// CHECK: %[[E0:.*]] = tensor.extract %[[X]][%{{.*}}, %{{.*}}, %{{.*}}, %[[CL0]]] : tensor<1x2x2x6xf32>
// CHECK: %[[SQ0:.*]] = arith.mulf %[[E0]], %[[E0]] : f32
// CHECK: %[[R0:.*]] = arith.select %[[OK0]], %[[SQ0]], %[[ZERO]] : f32
// The slice at offset 1: channel c, always inside, no check.
// CHECK: %[[E1:.*]] = tensor.extract %[[X]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x2x2x6xf32>
// CHECK-NEXT: %[[SQ1:.*]] = arith.mulf %[[E1]], %[[E1]] : f32
// The slice at offset 2: channel c + 1, checked against the top.
// CHECK: arith.addi %{{.*}}, %[[ONE2:.*]] : index
// CHECK: %[[E2:.*]] = tensor.extract %[[X]]
// CHECK: %[[SQ2:.*]] = arith.mulf %[[E2]], %[[E2]] : f32
// CHECK: %[[R2:.*]] = arith.select %{{.*}}, %[[SQ2]], %[[ZERO]] : f32
// The old body on the reads and the kept input.
// CHECK: %[[S1:.*]] = arith.addf %[[R0]], %[[SQ1]] : f32
// CHECK: %[[S2:.*]] = arith.addf %[[S1]], %[[R2]] : f32
// CHECK: %[[Y:.*]] = arith.mulf %[[IN]], %[[S2]] : f32
// CHECK: linalg.yield %[[Y]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @channel_window(%x: tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x6xf32>
  %sq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x2x6xf32>) outs(%e : tensor<1x2x2x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<1x2x2x6xf32>
  %p = tensor.pad %sq low[0, 0, 0, 1] high[0, 0, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x2x6xf32> to tensor<1x2x2x8xf32>
  %s0 = tensor.extract_slice %p[0, 0, 0, 0] [1, 2, 2, 6] [1, 1, 1, 1] : tensor<1x2x2x8xf32> to tensor<1x2x2x6xf32>
  %s1 = tensor.extract_slice %p[0, 0, 0, 1] [1, 2, 2, 6] [1, 1, 1, 1] : tensor<1x2x2x8xf32> to tensor<1x2x2x6xf32>
  %s2 = tensor.extract_slice %p[0, 0, 0, 2] [1, 2, 2, 6] [1, 1, 1, 1] : tensor<1x2x2x8xf32> to tensor<1x2x2x6xf32>
  %y = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s0, %s1, %s2 : tensor<1x2x2x6xf32>, tensor<1x2x2x6xf32>, tensor<1x2x2x6xf32>, tensor<1x2x2x6xf32>) outs(%e : tensor<1x2x2x6xf32>) {
  ^bb0(%in: f32, %a: f32, %b: f32, %c: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    %1 = arith.addf %0, %c : f32
    %2 = arith.mulf %in, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<1x2x2x6xf32>
  return %y : tensor<1x2x2x6xf32>
}

// -----

// Near miss: the padded tensor is also a result, so it is built anyway
// and the slices stay.
// CHECK-LABEL: func.func @pad_returned
// CHECK: %[[P:.*]] = tensor.pad
// CHECK: tensor.extract_slice %[[P]]
// CHECK: tensor.extract_slice %[[P]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK: return %{{.*}}, %[[P]]
#id = affine_map<(d0) -> (d0)>
func.func @pad_returned(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %p = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  %s0 = tensor.extract_slice %p[0] [4] [1] : tensor<6xf32> to tensor<4xf32>
  %s2 = tensor.extract_slice %p[2] [4] [1] : tensor<6xf32> to tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%s0, %s2 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.subf %b, %a : f32
    linalg.yield %0 : f32
  } -> tensor<4xf32>
  return %y, %p : tensor<4xf32>, tensor<6xf32>
}

// -----

// Near miss: a strided slice is not a shifted read.
// CHECK-LABEL: func.func @strided_slice
// CHECK: tensor.pad
// CHECK: tensor.extract_slice %{{.*}}[0] [3] [2]
#id = affine_map<(d0) -> (d0)>
func.func @strided_slice(%x: tensor<4xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %p = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  %s = tensor.extract_slice %p[0] [3] [2] : tensor<6xf32> to tensor<3xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%s : tensor<3xf32>) outs(%e : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  } -> tensor<3xf32>
  return %y : tensor<3xf32>
}
