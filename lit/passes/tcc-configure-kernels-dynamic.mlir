// tcc-configure-kernels does not choose strategies for a symbolic
// dimension yet (issue 33: the next step chooses them at the declared
// maximum): the first op computing on one is refused, with its pass, its
// ONNX node and the declared dimensions, before any strategy is written.
// RUN: not tcc-opt %s --tcc-configure-kernels=target=generic 2>&1 | FileCheck %s
// CHECK: error: {{.*}}'linalg.generic' (node 'relu') computes on the dynamically shaped type 'tensor<?x4xf32>' (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet by tcc-configure-kernels (the tile phase); compile one shape with --input-shape
// CHECK-NOT: tcc.strategy
#map = affine_map<(d0, d1) -> (d0, d1)>
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %n = tensor.dim %x, %c0 : tensor<?x4xf32>
    %e = tensor.empty(%n) : tensor<?x4xf32>
    %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) attrs = {tcc.kernel = "relu_0", tcc.kind = "elementwise"} {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<?x4xf32> loc("relu")
    return %y : tensor<?x4xf32>
  }
}
