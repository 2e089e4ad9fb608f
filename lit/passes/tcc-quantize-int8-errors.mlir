// tcc-quantize-int8's bad inputs: no profile, a profile that is empty or
// not a profile, one from another model (a graph input of another size,
// or no tensor of this model), a bad calibration option.
// RUN: printf '{"format":"tcc-profile","version":1,"model":"m","samples":1,"tensors":[]}' > %t.empty.json
// RUN: not tcc-opt %s --tcc-quantize-int8="profile=%t.empty.json" 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: the profile is empty
// RUN: printf '{"a": 1}' > %t.other.json
// RUN: not tcc-opt %s --tcc-quantize-int8="profile=%t.other.json" 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: not a tcc profile
// RUN: not tcc-opt %s --tcc-quantize-int8 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: tcc-quantize-int8 needs profile=FILE
// RUN: printf '{"format":"tcc-profile","version":1,"model":"other.onnx","samples":2,"tensors":[{"name":"x","shape":[1,3,8,8],"min":-1,"max":1,"nonfinite":0,"histogram":[1]}]}' > %t.shape.json
// RUN: not tcc-opt %s --tcc-quantize-int8="profile=%t.shape.json" 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: the profile's input 'x' has the shape [1, 3, 8, 8], the model's tensor<1x4x4x2xf32>: is the profile (of model 'other.onnx') from another model?
// RUN: printf '{"format":"tcc-profile","version":1,"model":"other.onnx","samples":2,"tensors":[{"name":"input.1","shape":[1,4,4,2],"min":-1,"max":1,"nonfinite":0,"histogram":[1]}]}' > %t.names.json
// RUN: not tcc-opt %s --tcc-quantize-int8="profile=%t.names.json" 2>&1 | FileCheck %s --check-prefix=NAMES
// NAMES: 1 of the profile's 1 tensors are not tensors of this model (input.1): is the profile (of model 'other.onnx') from another model?
// RUN: not tcc-opt %s --tcc-quantize-int8="profile=%t.names.json calibration=entropy" 2>&1 | FileCheck %s --check-prefix=METHOD
// METHOD: calibration must be max or percentile, not 'entropy'
func.func @conv(%x: tensor<1x4x4x2xf32> loc("x")) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0, -0.5]]], [[[-1.0, 0.25]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32> loc("y")
  return %c : tensor<1x4x4x2xf32>
}
