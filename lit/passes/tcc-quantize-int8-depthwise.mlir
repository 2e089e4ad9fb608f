// tcc-quantize-int8 quantizes depthwise convolutions too: HWCM weights
// per output channel (c * M + m, the weight's index modulo C * M), the
// activation per tensor, an i8 x i8 -> i32 tosa.depthwise_conv2d, and the
// same epilogue as a convolution's (int32 -> f32, scale per channel, bias).
// RUN: tcc-opt %s --tcc-quantize-int8="profile=%S/Inputs/tcc-quantize-int8.profile.json" | FileCheck %s

// Channel 0's largest magnitude is 2.54 (scale 0.02), channel 1's 1.0
// (scale 1/127): the weights round to 127, -127, -64 (-1.27 / 0.02) and
// 64 (0.5 * 127), channel by channel along the last two dimensions.
// x ranges over [-127, 63.5]: scale 1.
// CHECK-LABEL: func.func @depthwise
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x2xf32>
// CHECK: %[[XS:.*]] = tosa.mul %[[X]]
// CHECK: %[[XQ:.*]] = tosa.cast %[[XS]] : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8>
// CHECK: %[[WQ:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}127], [-127]], {{\[\[}}-64], [64]]]]> : tensor<1x2x2x1xi8>}>
// CHECK: %[[ACC:.*]] = tosa.depthwise_conv2d %[[XQ]], %[[WQ]], {{.*}} {acc_type = i32, {{.*}}pad = array<i64: 0, 0, 0, 1>{{.*}}} : (tensor<1x4x4x2xi8>, tensor<1x2x2x1xi8>, tensor<2xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x2xi32>
// CHECK: %[[F:.*]] = tosa.cast %[[ACC]] : (tensor<1x4x4x2xi32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}2.000000e-02, 0.00787{{[0-9]+}}]]]]> : tensor<1x1x1x2xf32>}>
// CHECK: %[[M:.*]] = tosa.mul %[[F]], %[[S]]
// CHECK: %[[Y:.*]] = tosa.add %[[M]]
// CHECK-NOT: acc_type = f32
// CHECK: return %[[Y]]
func.func @depthwise(%x: tensor<1x4x4x2xf32> loc("x")) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[2.54], [-1.0]], [[-1.27], [0.5]]]]> : tensor<1x2x2x1xf32>}> : () -> tensor<1x2x2x1xf32>
  %b = "tosa.const"() <{values = dense<[0.5, -1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<1x2x2x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32> loc("y")
  return %c : tensor<1x4x4x2xf32>
}
