// An int8 convolution (tcc-quantize-int8's i8 x i8 -> i32 with zero
// points 0) folds its zero pad into its loads like an f32 convolution:
// tcc-fold-conv-inputs makes it a tcc.conv that reads the
// unpadded i8 input at clamped coordinates, selects the i8 zero outside it
// (symmetric quantization: zero point 0, so the f32 pad 0.0 is the int8 0)
// and accumulates the sign-extended products in i32, so the padded copy
// (a fill and a copy kernel) is gone. Its input's quantize step stays its
// producer's epilogue: only the pad folds.
// RUN: tcc-opt %s --split-input-file --tcc-fold-conv-inputs | FileCheck %s

// CHECK-LABEL: func.func @int8_pad
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x4xi8>, %[[W:.*]]: tensor<3x3x4x4xi8>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%[[W]] : tensor<3x3x4x4xi8>) outs(%[[FILL]] : tensor<1x8x8x4xi32>)
// CHECK: ^bb0(%[[WV:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK: %[[IN:.*]] = tensor.extract %[[X]][{{.*}}] : tensor<1x8x8x4xi8>
// CHECK: %[[A:.*]] = arith.select %{{.*}}, %[[IN]], %[[ZERO]] : i8
// CHECK: %[[AW:.*]] = arith.extsi %[[A]] : i8 to i32
// CHECK: %[[WW:.*]] = arith.extsi %[[WV]] : i8 to i32
// CHECK: %[[P:.*]] = arith.muli %[[AW]], %[[WW]] : i32
// CHECK: %[[SUM:.*]] = arith.addi %[[ACC]], %[[P]] : i32
// CHECK: linalg.yield %[[SUM]] : i32
// CHECK: return
func.func @int8_pad(%x: tensor<1x8x8x4xi8>, %w: tensor<3x3x4x4xi8>) -> tensor<1x8x8x4xi32> {
  %zero = arith.constant 0 : i8
  %acc0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : i8
  } : tensor<1x8x8x4xi8> to tensor<1x10x10x4xi8>
  %e = tensor.empty() : tensor<1x8x8x4xi32>
  %f = linalg.fill ins(%acc0 : i32) outs(%e : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x10x10x4xi8>, tensor<3x3x4x4xi8>) outs(%f : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  return %c : tensor<1x8x8x4xi32>
}

// -----

// Without a pad there is nothing to fold: the int8 convolution stays the
// named op (an f32 producer would fold; the int8 input's quantize step is
// not recomputed per load).
// CHECK-LABEL: func.func @int8_no_pad
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-NOT: tcc.conv
func.func @int8_no_pad(%x: tensor<1x8x8x4xf32>, %w: tensor<1x1x4x4xi8>) -> tensor<1x8x8x4xi32> {
  %acc0 = arith.constant 0 : i32
  %e8 = tensor.empty() : tensor<1x8x8x4xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x8x8x4xf32>) outs(%e8 : tensor<1x8x8x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %i = arith.fptosi %a : f32 to i8
    linalg.yield %i : i8
  } -> tensor<1x8x8x4xi8>
  %e = tensor.empty() : tensor<1x8x8x4xi32>
  %f = linalg.fill ins(%acc0 : i32) outs(%e : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%q, %w : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%f : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  return %c : tensor<1x8x8x4xi32>
}

// -----

// A pad value other than the tensor's element type's constant (here a
// non-constant) is left alone, as for f32.
// CHECK-LABEL: func.func @int8_dynamic_pad_value
// CHECK: tensor.pad
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @int8_dynamic_pad_value(%x: tensor<1x8x8x4xi8>, %w: tensor<3x3x4x4xi8>, %v: i8) -> tensor<1x8x8x4xi32> {
  %acc0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %v : i8
  } : tensor<1x8x8x4xi8> to tensor<1x10x10x4xi8>
  %e = tensor.empty() : tensor<1x8x8x4xi32>
  %f = linalg.fill ins(%acc0 : i32) outs(%e : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x10x10x4xi8>, tensor<3x3x4x4xi8>) outs(%f : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  return %c : tensor<1x8x8x4xi32>
}
