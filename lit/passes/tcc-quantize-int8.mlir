// tcc-quantize-int8 rewrites convolutions and matmuls with constant f32
// weights into int8 x int8 -> int32 products: weights per output channel,
// activations per tensor with the scale from the calibration profile
// (tensors named by their locations), the f32 result back from the int32
// sum in the epilogue.
// RUN: tcc-opt %s --split-input-file --tcc-quantize-int8="profile=%S/Inputs/tcc-quantize-int8.profile.json" | FileCheck %s
// The module records what became int8 and why the rest did not:
// RUN: tcc-opt %s --split-input-file --tcc-quantize-int8="profile=%S/Inputs/tcc-quantize-int8.profile.json" | FileCheck %s --check-prefix=MODULE

// Per-channel weights: channel 0's largest magnitude is 2.54 (scale
// 0.02), channel 1's 1.0 (scale 1/127). The input x ranges over [-127,
// 63.5]: scale 1, so x is multiplied by 1/1 before the saturating cast.
// The epilogue scales channel c by s_x * s_w[c] and adds the f32 bias.
// CHECK-LABEL: func.func @per_channel
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x2xf32>
// CHECK: %[[INV:.*]] = "tosa.const"() <{values = dense<1.000000e+00> : tensor<1x1x1x1xf32>}>
// CHECK: %[[XS:.*]] = tosa.mul %[[X]], %[[INV]]
// CHECK: %[[XQ:.*]] = tosa.cast %[[XS]] : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8>
// CHECK: %[[WQ:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}127, -25]]], {{\[\[\[}}-127, 25]]]]> : tensor<2x1x1x2xi8>}>
// CHECK: %[[ACC:.*]] = tosa.conv2d %[[XQ]], %[[WQ]], {{.*}} {acc_type = i32, {{.*}}} : (tensor<1x4x4x2xi8>, tensor<2x1x1x2xi8>, tensor<2xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x2xi32>
// CHECK: %[[F:.*]] = tosa.cast %[[ACC]] : (tensor<1x4x4x2xi32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}2.000000e-02, 0.00787{{[0-9]+}}]]]]> : tensor<1x1x1x2xf32>}>
// CHECK: %[[M:.*]] = tosa.mul %[[F]], %[[S]]
// CHECK: %[[B:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}5.000000e-01, -1.000000e+00]]]]> : tensor<1x1x1x2xf32>}>
// CHECK: %[[Y:.*]] = tosa.add %[[M]], %[[B]]
// CHECK-NOT: tosa.conv2d
// CHECK: return %[[Y]]
// MODULE: module attributes {tcc.quantization = "int8", tcc.quantize_f32 = [], tcc.quantized_ops = 1 : i64}
func.func @per_channel(%x: tensor<1x4x4x2xf32> loc("x")) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[2.54, -0.5]]], [[[-1.0, 0.2]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<[0.5, -1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32> loc("y")
  return %c : tensor<1x4x4x2xf32>
}

// -----

// An input whose profiled range is zero cannot be scaled: the convolution
// stays f32, and the module says why.
// CHECK-LABEL: func.func @zero_range
// CHECK-NOT: tosa.cast
// CHECK: tosa.conv2d {{.*}} {acc_type = f32
// MODULE: module attributes {tcc.quantization = "int8", tcc.quantize_f32 = ["tosa.conv2d 'y' stays f32: its input 'z' has a zero range (0 to 0) in the profile"], tcc.quantized_ops = 0 : i64}
func.func @zero_range(%z: tensor<1x4x4x2xf32> loc("z")) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0, -0.5]]], [[[-1.0, 0.25]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %z, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32> loc("y")
  return %c : tensor<1x4x4x2xf32>
}

// -----

// Requantization between two convolutions: the first one's epilogue
// (int32 -> f32, scale, no bias) and ReLU end in the second one's quantize
// (r1 ranges over [0, 254]: scale 2, multiplied by 0.5), all elementwise,
// so the linalg phase fuses them into the first convolution's kernel.
// CHECK-LABEL: func.func @requantize
// CHECK: %[[A1:.*]] = tosa.conv2d {{.*}} -> tensor<1x4x4x2xi32>
// CHECK: %[[F1:.*]] = tosa.cast %[[A1]] : (tensor<1x4x4x2xi32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[Y1:.*]] = tosa.mul %[[F1]]
// CHECK-NOT: tosa.add
// CHECK: %[[R:.*]] = tosa.clamp %[[Y1]]
// CHECK: %[[INV:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1x1x1x1xf32>}>
// CHECK: %[[RS:.*]] = tosa.mul %[[R]], %[[INV]]
// CHECK: %[[RQ:.*]] = tosa.cast %[[RS]] : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8>
// CHECK: %[[A2:.*]] = tosa.conv2d %[[RQ]], {{.*}} -> tensor<1x4x4x2xi32>
// CHECK: tosa.cast %[[A2]]
// MODULE: tcc.quantized_ops = 2 : i64
func.func @requantize(%x: tensor<1x4x4x2xf32> loc("x")) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0, -0.5]]], [[[-1.0, 0.25]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c1 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32> loc("c1")
  %r1 = tosa.clamp %c1 {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> loc("r1")
  %c2 = tosa.conv2d %r1, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32> loc("y")
  return %c2 : tensor<1x4x4x2xf32>
}

// -----

// A matmul's weights are per output column (B's last dimension); the
// input m is found behind the reshape in front of the matmul.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[WQ:.*]] = "tosa.const"() <{values = dense<{{\[\[\[}}127, 0, -127], [-64, 127, 0]]]> : tensor<1x2x3xi8>}>
// CHECK: %[[ACC:.*]] = tosa.matmul {{.*}}, %[[WQ]], {{.*}} : (tensor<1x2x2xi8>, tensor<1x2x3xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x3xi32>
// CHECK: tosa.cast %[[ACC]] : (tensor<1x2x3xi32>) -> tensor<1x2x3xf32>
// MODULE: tcc.quantized_ops = 1 : i64
func.func @matmul(%m: tensor<2x2xf32> loc("m")) -> tensor<1x2x3xf32> {
  %shape = tosa.const_shape {values = dense<[1, 2, 2]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %a = tosa.reshape %m, %shape : (tensor<2x2xf32>, !tosa.shape<3>) -> tensor<1x2x2xf32> loc("y")
  %w = "tosa.const"() <{values = dense<[[[2.0, 0.0, -1.0], [-1.0, 3.0, 0.0]]]> : tensor<1x2x3xf32>}> : () -> tensor<1x2x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x2xf32>, tensor<1x2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32> loc("y")
  return %y : tensor<1x2x3xf32>
}
