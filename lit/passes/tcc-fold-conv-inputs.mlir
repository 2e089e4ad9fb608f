// tcc-fold-conv-inputs folds a constant tensor.pad and a cheap elementwise
// producer of a convolution's or pooling's input into its loads: the op
// becomes a linalg.generic (tcc.conv) whose body reads the unpadded source
// at clamped coordinates and selects the pad value outside it (after the
// producer). Non-constant pad values, pads of other dims and producers
// with other users are left alone.
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs | FileCheck %s

// CHECK-LABEL: func.func @pad_and_producer
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x4xf32>, %[[S:.*]]: tensor<1x1x1x4xf32>, %[[W:.*]]: tensor<3x3x4x4xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[W]] : tensor<3x3x4x4xf32>) outs(%[[FILL]] : tensor<1x8x8x4xf32>) attrs = {tcc.conv = "conv_2d_nhwc_hwcf"}
// CHECK: ^bb0(%[[WV:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[Y:.*]] = arith.subi
// CHECK: %[[YLO:.*]] = arith.cmpi sge, %[[Y]]
// CHECK: %[[YHI:.*]] = arith.cmpi slt, %[[Y]]
// CHECK: %[[YMAX:.*]] = arith.maxsi %[[Y]]
// CHECK: %[[YC:.*]] = arith.minsi %[[YMAX]]
// CHECK: %[[XC:.*]] = arith.minsi
// CHECK: %[[IN:.*]] = tensor.extract %[[X]][%{{.*}}, %[[YC]], %[[XC]], %{{.*}}] : tensor<1x8x8x4xf32>
// CHECK: %[[SC:.*]] = tensor.extract %[[S]][
// CHECK: %[[MUL:.*]] = arith.mulf %[[IN]], %[[SC]] : f32
// CHECK: %[[RELU:.*]] = arith.maximumf %[[MUL]], %[[ZERO]] : f32
// CHECK: %[[A:.*]] = arith.select %{{.*}}, %[[RELU]], %[[ZERO]] : f32
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[WV]] : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK: linalg.yield %[[SUM]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bcast = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
func.func @pad_and_producer(%x: tensor<1x8x8x4xf32>, %s: tensor<1x1x1x4xf32>, %w: tensor<3x3x4x4xf32>) -> tensor<1x8x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x4xf32>
  %bn = linalg.generic {indexing_maps = [#map, #bcast, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32>) outs(%e : tensor<1x8x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8x4xf32>
  %p = tensor.pad %bn low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x4xf32> to tensor<1x10x10x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x10x10x4xf32>, tensor<3x3x4x4xf32>) outs(%f : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %c : tensor<1x8x8x4xf32>
}

// -----

// Max pooling: the pad value (lowest float) is selected, the combiner is
// a maximum, and the unpadded input is read with strides 2.
// CHECK-LABEL: func.func @max_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x9x9x4xf32>)
// CHECK: %[[LOW:.*]] = arith.constant -3.40282347E+38 : f32
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {{.*}}attrs = {tcc.conv = "pooling_nhwc_max"}
// CHECK: ^bb0(%{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK: %[[IN:.*]] = tensor.extract %[[X]]
// CHECK: %[[A:.*]] = arith.select %{{.*}}, %[[IN]], %[[LOW]] : f32
// CHECK: %[[M:.*]] = arith.maximumf %[[ACC]], %[[A]] : f32
// CHECK: linalg.yield %[[M]]
func.func @max_pool(%x: tensor<1x9x9x4xf32>) -> tensor<1x5x5x4xf32> {
  %low = arith.constant -3.40282347E+38 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %low : f32
  } : tensor<1x9x9x4xf32> to tensor<1x11x11x4xf32>
  %e = tensor.empty() : tensor<1x5x5x4xf32>
  %f = linalg.fill ins(%low : f32) outs(%e : tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %win : tensor<1x11x11x4xf32>, tensor<3x3xf32>) outs(%f : tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xf32>
  return %m : tensor<1x5x5x4xf32>
}

// -----

// Near miss: a pad whose value is not a constant stays, and so does the
// named convolution reading it.
// CHECK-LABEL: func.func @pad_value_not_constant
// CHECK: tensor.pad
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-NOT: tcc.conv
func.func @pad_value_not_constant(%x: tensor<1x8x8x4xf32>, %v: tensor<f32>, %w: tensor<3x3x4x4xf32>) -> tensor<1x8x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %pv = tensor.extract %v[] : tensor<f32>
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %pv : f32
  } : tensor<1x8x8x4xf32> to tensor<1x10x10x4xf32>
  %e = tensor.empty() : tensor<1x8x8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x10x10x4xf32>, tensor<3x3x4x4xf32>) outs(%f : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %c : tensor<1x8x8x4xf32>
}

// -----

// Near miss: the producer is also returned, so it stays a separate op (its
// own kernel); only the pad is folded, the loads read the producer's result.
// CHECK-LABEL: func.func @producer_used_twice
// CHECK: %[[BN:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-NOT: tensor.pad
// CHECK: %[[C:.*]] = linalg.generic {{.*}}attrs = {tcc.conv = "conv_2d_nhwc_hwcf"}
// CHECK: tensor.extract %[[BN]]
// CHECK-NOT: arith.maximumf
// CHECK: linalg.yield
// CHECK: return %[[C]], %[[BN]]
func.func @producer_used_twice(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x4xf32>
  %bn = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x8x8x4xf32>) outs(%e : tensor<1x8x8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8x4xf32>
  %p = tensor.pad %bn low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x4xf32> to tensor<1x10x10x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x10x10x4xf32>, tensor<3x3x4x4xf32>) outs(%f : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %c, %bn : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>
}

// -----

// Near miss: padding of the channel dim is not a window padding.
// CHECK-LABEL: func.func @channel_pad
// CHECK: tensor.pad
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @channel_pad(%x: tensor<1x8x8x3xf32>, %w: tensor<1x1x4x4xf32>) -> tensor<1x8x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 0, 0] high[0, 0, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x3xf32> to tensor<1x8x8x4xf32>
  %e = tensor.empty() : tensor<1x8x8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%f : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %c : tensor<1x8x8x4xf32>
}
