// tcc-fold-conv-inputs folds a constant tensor.pad and a cheap elementwise
// producer or a transpose of a convolution's or pooling's input into its loads: the op
// becomes a tcc.conv (with its kind, strides and dilations as its #tcc.conv window) whose body reads the unpadded source
// at clamped coordinates and selects the pad value outside it (after the
// producer). Non-constant pad values, pads of other dims and producers
// with other users are left alone.
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs="pools=none" | FileCheck %s --check-prefix=NOPOOLS
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs="pools=strided" | FileCheck %s --check-prefix=STRIDED
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs="conv-producers=false" | FileCheck %s --check-prefix=NOPROD
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs="conv-producers=false conv-pad-channels=4" | FileCheck %s --check-prefix=PADCOPY
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs="conv-unfold-channels=8" | FileCheck %s --check-prefix=UNFOLD

// CHECK-LABEL: func.func @pad_and_producer
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x4xf32>, %[[S:.*]]: tensor<1x1x1x4xf32>, %[[W:.*]]: tensor<3x3x4x4xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [{{[0-9]+}}, {{[0-9]+}}], dilations = [1, 1]> ins(%[[W]] : tensor<3x3x4x4xf32>) outs(%[[FILL]] : tensor<1x8x8x4xf32>) indexing_maps = [{{.*}}] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] {
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
// With conv-producers=false (pocl-cpu) the producer stays a kernel of
// its own; the pad still folds, the loads reading the producer's result.
// NOPROD-LABEL: func.func @pad_and_producer
// NOPROD: %[[BN:.*]] = linalg.generic
// NOPROD: arith.mulf
// NOPROD: arith.maximumf
// NOPROD-NOT: tensor.pad
// NOPROD: tcc.conv<conv_2d_nhwc_hwcf
// NOPROD-NOT: arith.maximumf
// NOPROD: tensor.extract %[[BN]][
// NOPROD-NOT: arith.maximumf
// NOPROD: linalg.yield
// NOPROD: return
// With conv-pad-channels=4 (pocl-cpu: 8) a convolution over 4 or more
// channels keeps its pad too: nothing folds, the named op stays.
// PADCOPY-LABEL: func.func @pad_and_producer
// PADCOPY: linalg.generic
// PADCOPY: tensor.pad
// PADCOPY: linalg.conv_2d_nhwc_hwcf
// PADCOPY-NOT: tcc.conv
// PADCOPY: return
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
// CHECK: tcc.conv<pooling_nhwc_max, strides = [2, 2], dilations = [1, 1]>
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
// CHECK: %[[C:.*]] = tcc.conv<conv_2d_nhwc_hwcf, strides = [{{[0-9]+}}, {{[0-9]+}}], dilations = [1, 1]>
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

// -----

// A transpose of an NCHW input (its only use) is folded too: the loads
// read the NCHW tensor at the permuted coordinates (N, C from the filter's
// channel, then the window's row and column).
// CHECK-LABEL: func.func @nchw_input
// An image's 3 channels are below conv-pad-channels: its transpose folds.
// PADCOPY-LABEL: func.func @nchw_input
// PADCOPY-NOT: linalg.transpose
// PADCOPY: tcc.conv<conv_2d_nhwc_hwcf
// NOPROD-LABEL: func.func @nchw_input
// NOPROD-NOT: linalg.transpose
// NOPROD: tcc.conv<conv_2d_nhwc_hwcf
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x6x5xf32>, %[[W:.*]]: tensor<3x3x3x2xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [{{[0-9]+}}, {{[0-9]+}}], dilations = [1, 1]> ins(%[[W]] : tensor<3x3x3x2xf32>)
// CHECK: %[[N:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 6 : index
// CHECK: %[[ROW:.*]] = arith.addi
// CHECK: %[[COL:.*]] = arith.addi
// CHECK: tensor.extract %[[X]][%[[N]], %[[C]], %[[ROW]], %[[COL]]] : tensor<1x3x6x5xf32>
func.func @nchw_input(%x: tensor<1x3x6x5xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %init = tensor.empty() : tensor<1x6x5x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x6x5xf32>) outs(%init : tensor<1x6x5x3xf32>) permutation = [0, 2, 3, 1]
  %zero = arith.constant 0.0 : f32
  %out = tensor.empty() : tensor<1x4x3x2xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%out : tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%t, %w : tensor<1x6x5x3xf32>, tensor<3x3x3x2xf32>) outs(%fill : tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %c : tensor<1x4x3x2xf32>
}

// -----

// A symbolic leading batch (issue 33): the NCHW transpose and the pad fold
// as for a static one; the loads read the `?` batch at the output's own
// coordinate and the bounds checks are on the static rows and columns.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x6x5xf32>, %[[W:.*]]: tensor<3x3x3x2xf32>)
// CHECK-NOT: linalg.transpose
// CHECK-NOT: tensor.pad
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, {{.*}}> ins(%[[W]] : tensor<3x3x3x2xf32>) outs(%{{.*}} : tensor<?x6x5x2xf32>)
// CHECK: %[[N:.*]] = linalg.index 0 : index
// CHECK: tensor.extract %[[X]][%[[N]], {{.*}}] : tensor<?x3x6x5xf32>
func.func @dynamic_batch(%x: tensor<?x3x6x5xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<?x6x5x2xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3x6x5xf32>
  %init = tensor.empty(%n) : tensor<?x6x5x3xf32>
  %t = linalg.transpose ins(%x : tensor<?x3x6x5xf32>) outs(%init : tensor<?x6x5x3xf32>) permutation = [0, 2, 3, 1]
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %t low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<?x6x5x3xf32> to tensor<?x8x7x3xf32>
  %out = tensor.empty(%n) : tensor<?x6x5x2xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%out : tensor<?x6x5x2xf32>) -> tensor<?x6x5x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<?x8x7x3xf32>, tensor<3x3x3x2xf32>) outs(%fill : tensor<?x6x5x2xf32>) -> tensor<?x6x5x2xf32>
  return %c : tensor<?x6x5x2xf32>
}

// -----

// A transpose with another user is left alone (it is computed anyway).
// CHECK-LABEL: func.func @transpose_used_twice
// CHECK: %[[T:.*]] = linalg.transpose
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[T]], %{{.*}} : tensor<1x6x5x3xf32>, tensor<3x3x3x2xf32>)
// CHECK: return %{{.*}}, %[[T]]
func.func @transpose_used_twice(%x: tensor<1x3x6x5xf32>, %w: tensor<3x3x3x2xf32>) -> (tensor<1x4x3x2xf32>, tensor<1x6x5x3xf32>) {
  %init = tensor.empty() : tensor<1x6x5x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x6x5xf32>) outs(%init : tensor<1x6x5x3xf32>) permutation = [0, 2, 3, 1]
  %zero = arith.constant 0.0 : f32
  %out = tensor.empty() : tensor<1x4x3x2xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%out : tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%t, %w : tensor<1x6x5x3xf32>, tensor<3x3x3x2xf32>) outs(%fill : tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %c, %t : tensor<1x4x3x2xf32>, tensor<1x6x5x3xf32>
}

// -----

// A padded 3x3 max pool whose only user is a 1x1 convolution: the pool's
// padding is folded first, then its window is unrolled into the
// convolution's loads (nine clamped reads, each selecting the lowest float
// in the padding, chained through maximumf from the fill value), so one
// generic remains and the pooled tensor is never built.
// With pools=none, the pool keeps its
// own generic (its padding folded) and the convolution reads its result.
// NOPOOLS-LABEL: func.func @pool_projection
// NOPOOLS: %[[POOL:.*]] = tcc.conv<pooling_nhwc_max, strides = [{{[0-9]+}}, {{[0-9]+}}], dilations = [1, 1]>
// NOPOOLS: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[POOL]], %{{.*}} : tensor<1x5x5x4xf32>, tensor<1x1x4x3xf32>)
// CHECK-LABEL: func.func @pool_projection
// CHECK-SAME: (%[[X:.*]]: tensor<1x5x5x4xf32>, %[[W:.*]]: tensor<1x1x4x3xf32>)
// CHECK-DAG: %[[LOW:.*]] = arith.constant -3.40282347E+38 : f32
// CHECK-NOT: linalg.pooling_nhwc_max
// CHECK-NOT: tcc.conv<pooling_nhwc_max
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [{{[0-9]+}}, {{[0-9]+}}], dilations = [1, 1]> ins(%[[W]] : tensor<1x1x4x3xf32>)
// CHECK: ^bb0(%[[WV:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[E0:.*]] = tensor.extract %[[X]]
// CHECK: %[[A0:.*]] = arith.select %{{.*}}, %[[E0]], %[[LOW]] : f32
// CHECK: %[[M0:.*]] = arith.maximumf %[[LOW]], %[[A0]] : f32
// CHECK-COUNT-8: arith.maximumf
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %[[WV]] : f32
// CHECK: arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @pool_projection(%x: tensor<1x5x5x4xf32>, %w: tensor<1x1x4x3xf32>) -> tensor<1x5x5x3xf32> {
  %low = arith.constant -3.40282347E+38 : f32
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %low : f32
  } : tensor<1x5x5x4xf32> to tensor<1x7x7x4xf32>
  %e = tensor.empty() : tensor<1x5x5x4xf32>
  %f = linalg.fill ins(%low : f32) outs(%e : tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %win : tensor<1x7x7x4xf32>, tensor<3x3xf32>) outs(%f : tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xf32>
  %out = tensor.empty() : tensor<1x5x5x3xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%out : tensor<1x5x5x3xf32>) -> tensor<1x5x5x3xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%m, %w : tensor<1x5x5x4xf32>, tensor<1x1x4x3xf32>) outs(%fill : tensor<1x5x5x3xf32>) -> tensor<1x5x5x3xf32>
  return %c : tensor<1x5x5x3xf32>
}

// -----

// An unpadded pool (a named op with nothing of its own to fold) is
// rewritten so that its 1x1 consumer can take it: 2x2 cells, unclamped.
// With pools=strided (the GPU targets) this stride-2 pool is folded too,
// while @pool_projection's stride-1 pool is not.
// STRIDED-LABEL: func.func @pool_projection
// STRIDED: tcc.conv<pooling_nhwc_max, strides = [1, 1], dilations = [1, 1]>
// STRIDED-LABEL: func.func @unpadded_pool
// STRIDED-NOT: pooling_nhwc_max
// STRIDED: tcc.conv<conv_2d_nhwc_hwcf
// STRIDED-COUNT-4: tensor.extract
// CHECK-LABEL: func.func @unpadded_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x6x2xf32>, %[[W:.*]]: tensor<1x1x2x2xf32>)
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [{{[0-9]+}}, {{[0-9]+}}], dilations = [1, 1]> ins(%[[W]] : tensor<1x1x2x2xf32>)
// CHECK-COUNT-4: tensor.extract %[[X]]
// CHECK-NOT: arith.select
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @unpadded_pool(%x: tensor<1x6x6x2xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x3x3x2xf32> {
  %low = arith.constant -3.40282347E+38 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x3x2xf32>
  %f = linalg.fill ins(%low : f32) outs(%e : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %m = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x6x6x2xf32>, tensor<2x2xf32>) outs(%f : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %out = tensor.empty() : tensor<1x3x3x2xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%out : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%m, %w : tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>) outs(%fill : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  return %c : tensor<1x3x3x2xf32>
}

// -----

// Near misses: a pool that is also a result, and a pool before a 3x3
// convolution (nine pooled reads per output would be recomputed nine
// times), each stay a pooling of their own.
// CHECK-LABEL: func.func @pool_near_misses
// CHECK: %[[M:.*]] = linalg.pooling_nhwc_max
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[M]], %{{.*}} : tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>)
// CHECK: %[[M2:.*]] = linalg.pooling_nhwc_max
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[M2]], %{{.*}} : tensor<1x3x3x2xf32>, tensor<3x3x2x2xf32>)
// CHECK: return %{{.*}}, %[[M]], %{{.*}}
func.func @pool_near_misses(%x: tensor<1x6x6x2xf32>, %w: tensor<1x1x2x2xf32>, %w3: tensor<3x3x2x2xf32>) -> (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>, tensor<1x1x1x2xf32>) {
  %low = arith.constant -3.40282347E+38 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x3x2xf32>
  %f = linalg.fill ins(%low : f32) outs(%e : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %m = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x6x6x2xf32>, tensor<2x2xf32>) outs(%f : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %out = tensor.empty() : tensor<1x3x3x2xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%out : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%m, %w : tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>) outs(%fill : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %f2 = linalg.fill ins(%low : f32) outs(%e : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %m2 = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x6x6x2xf32>, tensor<2x2xf32>) outs(%f2 : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %out3 = tensor.empty() : tensor<1x1x1x2xf32>
  %fill3 = linalg.fill ins(%zero : f32) outs(%out3 : tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
  %c3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%m2, %w3 : tensor<1x3x3x2xf32>, tensor<3x3x2x2xf32>) outs(%fill3 : tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
  return %c, %m, %c3 : tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>, tensor<1x1x1x2xf32>
}

// -----

// A channel shuffle's pad (ShuffleNet): elementwise fusion's reshape
// propagation leaves the pad on the channel-split tensor and merges the
// channels after it. The pad still folds: the loads read the same merge of
// the unpadded tensor (a collapse_shape of it, a view once bufferized).
// CHECK-LABEL: func.func @pad_below_channel_merge
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x6x2x4xf32>, %[[W:.*]]: tensor<3x3x8x1xf32>)
// CHECK-NOT: tensor.pad
// CHECK: %[[MERGED:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2], [3, 4]] : tensor<1x6x6x2x4xf32> into tensor<1x6x6x8xf32>
// CHECK-NOT: tensor.pad
// CHECK: tcc.conv<depthwise_conv_2d_nhwc_hwcm
// CHECK: tensor.extract %[[MERGED]][
// CHECK: arith.select
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
func.func @pad_below_channel_merge(%x: tensor<1x6x6x2x4xf32>, %w: tensor<3x3x8x1xf32>) -> tensor<1x6x6x8x1xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0, 0] high[0, 1, 1, 0, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index, %m: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2x4xf32> to tensor<1x8x8x2x4xf32>
  %merged = tensor.collapse_shape %p [[0], [1], [2], [3, 4]] : tensor<1x8x8x2x4xf32> into tensor<1x8x8x8xf32>
  %e = tensor.empty() : tensor<1x6x6x8x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x8x1xf32>) -> tensor<1x6x6x8x1xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%merged, %w : tensor<1x8x8x8xf32>, tensor<3x3x8x1xf32>) outs(%f : tensor<1x6x6x8x1xf32>) -> tensor<1x6x6x8x1xf32>
  return %c : tensor<1x6x6x8x1xf32>
}

// -----

// A merge of padded channels is left alone (the pad is not only on H
// and W).
// CHECK-LABEL: func.func @channel_padding_below_merge
// CHECK: tensor.pad
// CHECK: tensor.collapse_shape
// CHECK: linalg.depthwise_conv_2d_nhwc_hwcm
func.func @channel_padding_below_merge(%x: tensor<1x6x6x2x3xf32>, %w: tensor<3x3x8x1xf32>) -> tensor<1x6x6x8x1xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0, 0] high[0, 1, 1, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index, %m: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2x3xf32> to tensor<1x8x8x2x4xf32>
  %merged = tensor.collapse_shape %p [[0], [1], [2], [3, 4]] : tensor<1x8x8x2x4xf32> into tensor<1x8x8x8xf32>
  %e = tensor.empty() : tensor<1x6x6x8x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x8x1xf32>) -> tensor<1x6x6x8x1xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%merged, %w : tensor<1x8x8x8xf32>, tensor<3x3x8x1xf32>) outs(%f : tensor<1x6x6x8x1xf32>) -> tensor<1x6x6x8x1xf32>
  return %c : tensor<1x6x6x8x1xf32>
}

// -----

// With conv-unfold-channels=8 (nvidia at fp16/bf16) a convolution of
// more than one tap over fewer than 8 channels whose windows do not
// overlap (3x3 patches at stride 3 of an RGB image: here its NCHW
// input's transpose and its pad) reads explicit columns: a copy
// whose loads fold the transpose and the pad as the convolution's would,
// K = 3x3x3 = 27 rounded up to 32 columns (past 27 zero, the column
// clamped to 26 for the load), then a 1x1 convolution over them with
// the filter's HWCF rows as a [1, 1, 32, F] constant. Without the option
// it folds as usual.
// UNFOLD-LABEL: func.func @rgb_stem
// UNFOLD-SAME: (%[[X:.*]]: tensor<2x3x8x8xf32>)
// UNFOLD: %[[EMPTY:.*]] = tensor.empty() : tensor<2x3x3x32xf32>
// UNFOLD: %[[COLS:.*]] = linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<2x3x3x32xf32>)
// UNFOLD: %[[K:.*]] = linalg.index 3 : index
// UNFOLD: %[[KC:.*]] = arith.minsi %[[K]], %{{.*}} : index
// UNFOLD: %[[C:.*]] = arith.remsi %[[KC]], %{{.*}} : index
// UNFOLD: %[[IN:.*]] = tensor.extract %[[X]][%{{.*}}, %[[C]], %{{.*}}, %{{.*}}] : tensor<2x3x8x8xf32>
// UNFOLD: %[[PADDED:.*]] = arith.select %{{.*}}, %[[IN]], %{{.*}} : f32
// UNFOLD: %[[INSIDE:.*]] = arith.cmpi slt, %[[K]], %{{.*}} : index
// UNFOLD: %[[A:.*]] = arith.select %[[INSIDE]], %[[PADDED]], %{{.*}} : f32
// UNFOLD: linalg.yield %[[A]] : f32
// UNFOLD: %[[W:.*]] = arith.constant dense<{{.*}}> : tensor<1x1x32x4xf32>
// UNFOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%[[W]] : tensor<1x1x32x4xf32>)
// UNFOLD: tensor.extract %[[COLS]][
// UNFOLD-NOT: tcc.conv
// UNFOLD: return
// CHECK-LABEL: func.func @rgb_stem
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [3, 3], dilations = [1, 1]> ins(%{{.*}} : tensor<3x3x3x4xf32>)
// CHECK-NOT: tensor<2x3x3x32xf32>
func.func @rgb_stem(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x3x4xf32> {
  %w = arith.constant dense<0.5> : tensor<3x3x3x4xf32>
  %zero = arith.constant 0.0 : f32
  %te = tensor.empty() : tensor<2x8x8x3xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x8x8xf32>) outs(%te : tensor<2x8x8x3xf32>) permutation = [0, 2, 3, 1]
  %p = tensor.pad %t low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x8x8x3xf32> to tensor<2x10x10x3xf32>
  %e = tensor.empty() : tensor<2x3x3x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x3x4xf32>) -> tensor<2x3x3x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>} ins(%p, %w : tensor<2x10x10x3xf32>, tensor<3x3x3x4xf32>) outs(%f : tensor<2x3x3x4xf32>) -> tensor<2x3x3x4xf32>
  return %c : tensor<2x3x3x4xf32>
}

// -----

// Patches (a ViT's embedding: 4x4, stride 4, nothing folded) unfold
// too; K = 48 is already a multiple of 8, so no column is selected away.
// UNFOLD-LABEL: func.func @patches
// UNFOLD: %[[COLS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x2x48xf32>)
// UNFOLD-NOT: arith.select
// UNFOLD: linalg.yield
// UNFOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : tensor<1x1x48x6xf32>)
// UNFOLD: return
func.func @patches(%x: tensor<1x8x8x3xf32>) -> tensor<1x2x2x6xf32> {
  %w = arith.constant dense<0.25> : tensor<4x4x3x6xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<4> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x3xf32>, tensor<4x4x3x6xf32>) outs(%f : tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  return %c : tensor<1x2x2x6xf32>
}

// -----

// Near misses, left as they were: 8 channels (as many as the option
// asks), a pointwise convolution over 3 channels (one tap: its input is
// already a matrix), a filter that is not a constant, and overlapping
// windows (a 3x3 stride-1 stem).
// UNFOLD-LABEL: func.func @near_misses
// UNFOLD-NOT: linalg.generic
// UNFOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : tensor<3x3x8x4xf32>)
// UNFOLD-NOT: linalg.generic
// UNFOLD: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x6x6x3xf32>, tensor<1x1x3x4xf32>)
// UNFOLD-NOT: linalg.generic
// UNFOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : tensor<3x3x3x4xf32>)
// UNFOLD-NOT: linalg.generic
// UNFOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : tensor<3x3x3x4xf32>)
// UNFOLD-NOT: linalg.generic
// UNFOLD: return
func.func @near_misses(%x8: tensor<1x6x6x8xf32>, %x3: tensor<1x6x6x3xf32>, %w3: tensor<3x3x3x4xf32>) -> (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) {
  %wc = arith.constant dense<0.5> : tensor<3x3x3x4xf32>
  %w8 = arith.constant dense<0.5> : tensor<3x3x8x4xf32>
  %w1 = arith.constant dense<0.5> : tensor<1x1x3x4xf32>
  %zero = arith.constant 0.0 : f32
  %p8 = tensor.pad %x8 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x8xf32> to tensor<1x8x8x8xf32>
  %p3 = tensor.pad %x3 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x3xf32> to tensor<1x8x8x3xf32>
  %e = tensor.empty() : tensor<1x6x6x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %a = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p8, %w8 : tensor<1x8x8x8xf32>, tensor<3x3x8x4xf32>) outs(%f : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %b = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x3, %w1 : tensor<1x6x6x3xf32>, tensor<1x1x3x4xf32>) outs(%f : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p3, %w3 : tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) outs(%f : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %d = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p3, %wc : tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) outs(%f : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  return %a, %b, %c, %d : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>
}

// -----

// A symbolic batch keeps the folded form (the columns are sized
// statically).
// UNFOLD-LABEL: func.func @symbolic_batch
// UNFOLD-NOT: linalg.generic
// UNFOLD: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%{{.*}} : tensor<3x3x3x4xf32>)
// UNFOLD: return
func.func @symbolic_batch(%x: tensor<?x6x6x3xf32>, %init: tensor<?x6x6x4xf32>) -> tensor<?x6x6x4xf32> {
  %w = arith.constant dense<0.5> : tensor<3x3x3x4xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<?x6x6x3xf32> to tensor<?x8x8x3xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<?x8x8x3xf32>, tensor<3x3x3x4xf32>) outs(%init : tensor<?x6x6x4xf32>) -> tensor<?x6x6x4xf32>
  return %c : tensor<?x6x6x4xf32>
}
