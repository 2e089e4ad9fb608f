// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),tcc-reduction-identities,canonicalize)' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),tcc-reduction-identities,canonicalize)' | FileCheck %s --check-prefix=NOFLT
// RUN: tcc-opt %s --split-input-file --tcc-reduction-identities | FileCheck %s --check-prefix=KEEP

// What tosa-to-linalg makes of reduce_max/min, max_pool2d (padded) and
// argmax: every fill (and the pool's padding) that upstream sets to
// -+FLT_MAX starts from -+inf instead.
// CHECK-LABEL: func.func @tosa_reductions
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%[[NINF]] : f32)
// CHECK: linalg.reduce ins(%{{.*}} : tensor<2x8xf32>) outs(%[[MAXINIT]] : tensor<2xf32>)
// CHECK: arith.maximumf
// CHECK: %[[MININIT:.*]] = linalg.fill ins(%[[INF]] : f32)
// CHECK: linalg.reduce ins(%{{.*}} : tensor<2x8xf32>) outs(%[[MININIT]] : tensor<2xf32>)
// CHECK: arith.minimumf
// CHECK: tensor.pad
// CHECK: tensor.yield %[[NINF]] : f32
// CHECK: %[[POOLINIT:.*]] = linalg.fill ins(%[[NINF]] : f32)
// CHECK: linalg.pooling_nhwc_max {{.*}} outs(%[[POOLINIT]] : tensor<1x2x2x2xf32>)
// CHECK: linalg.fill ins(%{{.*}} : i32)
// CHECK: %[[ARGINIT:.*]] = linalg.fill ins(%[[NINF]] : f32)
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %[[ARGINIT]] : tensor<2xi32>, tensor<2xf32>)
// NOFLT-LABEL: func.func @tosa_reductions
// NOFLT-NOT: 3.40282347E+38
// NOFLT: return
func.func @tosa_reductions(%x: tensor<2x8xf32>, %p: tensor<1x4x4x2xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<1x2x2x2xf32>, tensor<2xi32>) {
  %max = tosa.reduce_max %x {axis = 1 : i32} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %min = tosa.reduce_min %x {axis = 1 : i32} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %pool = tosa.max_pool2d %p {kernel = array<i64: 3, 3>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32>
  %am = tosa.argmax %x {axis = 1 : i32} : (tensor<2x8xf32>) -> tensor<2xi32>
  return %max, %min, %pool, %am : tensor<2x1xf32>, tensor<2x1xf32>, tensor<1x2x2x2xf32>, tensor<2xi32>
}

// -----

// Left alone: a -FLT_MAX fill that a sum starts from (it is a value, not
// an identity), a fill that is also used elsewhere, and an elementwise
// generic's destination.
// KEEP-LABEL: func.func @not_identities
// KEEP-NOT: 0xFF800000
// KEEP: %[[SUMINIT:.*]] = linalg.fill ins(%[[LOWEST:.*]] : f32)
// KEEP: arith.addf
// KEEP: linalg.fill ins(%[[LOWEST]] : f32)
// KEEP: arith.maximumf
// KEEP: linalg.fill ins(%[[LOWEST]] : f32)
// KEEP-NOT: 0xFF800000
// KEEP: return
func.func @not_identities(%x: tensor<2x8xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %lowest = arith.constant -3.40282347E+38 : f32
  %e = tensor.empty() : tensor<2xf32>
  %fill = linalg.fill ins(%lowest : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %sum = linalg.reduce ins(%x : tensor<2x8xf32>) outs(%fill : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %fill2 = linalg.fill ins(%lowest : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %max = linalg.reduce ins(%x : tensor<2x8xf32>) outs(%fill2 : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %fill3 = linalg.fill ins(%lowest : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%max : tensor<2xf32>) outs(%fill3 : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %z : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %sum, %max, %fill2, %relu : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
