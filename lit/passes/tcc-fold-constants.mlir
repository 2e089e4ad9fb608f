// tcc-fold-constants evaluates TOSA ops on constants at compile time,
// dense_resource blobs (what the ONNX importer emits) included.
// RUN: tcc-opt %s --split-input-file --tcc-fold-constants --canonicalize | FileCheck %s

// A weight transpose, a reshape and BatchNorm-style arithmetic on
// constants: no op is left but the constant the function returns.
// CHECK-LABEL: func.func @arithmetic
// CHECK: %[[C:.*]] = "tosa.const"() <{values = dense<{{\[\[}}1.500000e+00, 2.500000e+00], [3.500000e+00, 4.500000e+00], [5.500000e+00, 6.500000e+00]]> : tensor<3x2xf32>}>
// CHECK-NEXT: return %[[C]]
func.func @arithmetic() -> tensor<3x2xf32> {
  %w = "tosa.const"() <{values = dense<[[2.0, 6.0, 10.0], [4.0, 8.0, 12.0]]> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %bias = "tosa.const"() <{values = dense<[[0.5, 0.5]]> : tensor<1x2xf32>}> : () -> tensor<1x2xf32>
  %t = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %m = tosa.mul %t, %half, %shift : (tensor<3x2xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<3x2xf32>
  %a = tosa.add %m, %bias : (tensor<3x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  return %a : tensor<3x2xf32>
}

// -----

// rsqrt, reciprocal, clamp, slice and concat.
// CHECK-LABEL: func.func @functions
// CHECK: %[[C:.*]] = "tosa.const"() <{values = dense<[5.000000e-01, 2.500000e-01, 2.500000e-01, 4.000000e+00]> : tensor<4xf32>}>
// CHECK-NEXT: return %[[C]]
func.func @functions() -> tensor<4xf32> {
  %x = "tosa.const"() <{values = dense<[4.0, 16.0, 0.25]> : tensor<3xf32>}> : () -> tensor<3xf32>
  %r = tosa.rsqrt %x : (tensor<3xf32>) -> tensor<3xf32>
  %start = tosa.const_shape {values = dense<0> : tensor<1xindex>} : () -> !tosa.shape<1>
  %size = tosa.const_shape {values = dense<2> : tensor<1xindex>} : () -> !tosa.shape<1>
  %head = tosa.slice %r, %start, %size : (tensor<3xf32>, !tosa.shape<1>, !tosa.shape<1>) -> tensor<2xf32>
  %y = "tosa.const"() <{values = dense<[4.0, 0.125]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %inv = tosa.reciprocal %y : (tensor<2xf32>) -> tensor<2xf32>
  %clamped = tosa.clamp %inv {min_val = 0.0 : f32, max_val = 4.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  %cat = tosa.concat %head, %clamped {axis = 0 : i32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %cat : tensor<4xf32>
}

// -----

// An op reading a non-constant stays; so does a boolean result (booleans
// are not materialized).
// CHECK-LABEL: func.func @not_constant
// CHECK: tosa.add %{{.*}}, %{{.*}}
// CHECK: tosa.greater
func.func @not_constant(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xi1>) {
  %c = "tosa.const"() <{values = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %a = tosa.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %d = "tosa.const"() <{values = dense<[3.0, 1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %g = tosa.greater %c, %d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %a, %g : tensor<2xf32>, tensor<2xi1>
}

// -----

// A transpose of a dense_resource weight blob (upstream's folders cannot
// read blobs) folds into a dense constant.
// CHECK-LABEL: func.func @resource
// CHECK: %[[C:.*]] = "tosa.const"() <{values = dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>}>
// CHECK-NEXT: return %[[C]]
func.func @resource() -> tensor<3x2xf32> {
  %w = "tosa.const"() <{values = dense_resource<weights> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %t = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}

// -----

// A reshape of a dense_resource weight (the importer's MatMul weight made
// the batch matmul's 3-D operand) is the same blob seen with the new
// shape: a dense_resource on the same key, not a copy of its bytes.
// CHECK-LABEL: func.func @resource_reshape
// CHECK: %[[C:.*]] = "tosa.const"() <{values = dense_resource<matrix> : tensor<1x2x3xf32>}>
// CHECK-NEXT: return %[[C]]
// CHECK: matrix: "0x04000000
func.func @resource_reshape() -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense_resource<matrix> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %shape = tosa.const_shape {values = dense<[1, 2, 3]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %w, %shape : (tensor<2x3xf32>, !tosa.shape<3>) -> tensor<1x2x3xf32>
  return %r : tensor<1x2x3xf32>
}

{-#
  dialect_resources: {
    builtin: {
      matrix: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}
