// tcc-decompose-composites expands tcc composite ops into TOSA.
// RUN: tcc-opt %s --split-input-file --tcc-decompose-composites | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tcc-decompose-composites{ops=gelu}))' | FileCheck %s --check-prefix=ONLY-GELU
// RUN: not tcc-opt %s --tcc-decompose-composites=ops=relu 2>&1 | FileCheck %s --check-prefix=BAD-OP
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-decompose-composites{frobnicate=1})' 2>&1 | FileCheck %s --check-prefix=BAD-OPTION

// BAD-OP: tcc-decompose-composites: unknown composite op 'relu' (known: softmax, log_softmax, gelu, silu, layer_norm, attention)
// BAD-OPTION: tcc-decompose-composites: unknown option 'frobnicate'; known options: ops

// Softmax subtracts the maximum before exponentiating.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x10xf32>)
// CHECK: %[[MAX:.*]] = tosa.reduce_max %[[X]] {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
// CHECK: %[[SHIFTED:.*]] = tosa.sub %[[X]], %[[MAX]]
// CHECK: %[[EXP:.*]] = tosa.exp %[[SHIFTED]]
// CHECK: %[[SUM:.*]] = tosa.reduce_sum %[[EXP]] {axis = 1 : i32}
// CHECK: %[[INV:.*]] = tosa.reciprocal %[[SUM]]
// CHECK: %[[Y:.*]] = tosa.mul %[[EXP]], %[[INV]], %{{.*}} : (tensor<2x10xf32>, tensor<2x1xf32>, tensor<1xi8>) -> tensor<2x10xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: tcc.
// ONLY-GELU-LABEL: func.func @softmax
// ONLY-GELU: tcc.softmax
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = tcc.softmax %x axis = -1 : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK: %[[MAX:.*]] = tosa.reduce_max %[[X]] {axis = 0 : i32} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[SHIFTED:.*]] = tosa.sub %[[X]], %[[MAX]]
// CHECK: %[[EXP:.*]] = tosa.exp %[[SHIFTED]]
// CHECK: %[[SUM:.*]] = tosa.reduce_sum %[[EXP]] {axis = 0 : i32}
// CHECK: %[[LOG:.*]] = tosa.log %[[SUM]]
// CHECK: %[[Y:.*]] = tosa.sub %[[SHIFTED]], %[[LOG]]
// CHECK: return %[[Y]]
func.func @log_softmax(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = tcc.log_softmax %x axis = 0 : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_erf
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>)
// CHECK-DAG: %[[RSQRT2:.*]] = "tosa.const"() <{values = dense<0.707106769> : tensor<1x1xf32>}>
// CHECK: %[[SCALED:.*]] = tosa.mul %[[X]], %[[RSQRT2]]
// CHECK: %[[ERF:.*]] = tosa.erf %[[SCALED]]
// CHECK: %[[ONE:.*]] = "tosa.const"() <{values = dense<1.000000e+00> : tensor<1x1xf32>}>
// CHECK: %[[ONEPLUS:.*]] = tosa.add %[[ERF]], %[[ONE]]
// CHECK: %[[HALF:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1x1xf32>}>
// CHECK: %[[HALFX:.*]] = tosa.mul %[[X]], %[[HALF]]
// CHECK: %[[Y:.*]] = tosa.mul %[[HALFX]], %[[ONEPLUS]]
// CHECK: return %[[Y]]
// ONLY-GELU-LABEL: func.func @gelu_erf
// ONLY-GELU: tosa.erf
// ONLY-GELU-NOT: tcc.gelu
func.func @gelu_erf(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = tcc.gelu %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Every step of 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))),
// with sqrt(2/pi) = 0.7978845608... (float32 0.797884583) and the cube as
// x * x * x; the tosa.mul shift operands are the i8 zero.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[SQ:.*]] = tosa.mul %[[X]], %[[X]], %{{.*}} :
// CHECK: %[[CUBE:.*]] = tosa.mul %[[SQ]], %[[X]], %{{.*}} :
// CHECK: %[[C0447:.*]] = "tosa.const"() <{values = dense<4.471500e-02> : tensor<1xf32>}>
// CHECK: %[[CUBIC:.*]] = tosa.mul %[[CUBE]], %[[C0447]], %{{.*}} :
// CHECK: %[[INNER:.*]] = tosa.add %[[X]], %[[CUBIC]] :
// CHECK: %[[SQRT2PI:.*]] = "tosa.const"() <{values = dense<0.797884583> : tensor<1xf32>}>
// CHECK: %[[ARG:.*]] = tosa.mul %[[INNER]], %[[SQRT2PI]], %{{.*}} :
// CHECK: %[[TANH:.*]] = tosa.tanh %[[ARG]] :
// CHECK: %[[ONE:.*]] = "tosa.const"() <{values = dense<1.000000e+00> : tensor<1xf32>}>
// CHECK: %[[ONEPLUS:.*]] = tosa.add %[[TANH]], %[[ONE]] :
// CHECK: %[[HALF:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1xf32>}>
// CHECK: %[[HALFX:.*]] = tosa.mul %[[X]], %[[HALF]], %{{.*}} :
// CHECK: %[[Y:.*]] = tosa.mul %[[HALFX]], %[[ONEPLUS]], %{{.*}} :
// CHECK: return %[[Y]]
// CHECK-NOT: tosa.erf
func.func @gelu_tanh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tcc.gelu %x approximate = "tanh" : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.*]]: tensor<3x5xf32>)
// CHECK: %[[SIG:.*]] = tosa.sigmoid %[[X]]
// CHECK: %[[Y:.*]] = tosa.mul %[[X]], %[[SIG]]
// CHECK: return %[[Y]]
func.func @silu(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = tcc.silu %x : tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Layer norm over the last two dimensions: two reductions for the mean,
// two for the variance of the centred values; scale and bias reshaped to
// the input's rank.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[G:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x8xf32>)
// CHECK: %[[INVN:.*]] = "tosa.const"() <{values = dense<3.125000e-02> : tensor<1x1x1xf32>}>
// CHECK: %[[S1:.*]] = tosa.reduce_sum %[[X]] {axis = 1 : i32} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
// CHECK: %[[S2:.*]] = tosa.reduce_sum %[[S1]] {axis = 2 : i32} : (tensor<2x1x8xf32>) -> tensor<2x1x1xf32>
// CHECK: %[[MEAN:.*]] = tosa.mul %[[S2]], %[[INVN]]
// CHECK: %[[C:.*]] = tosa.sub %[[X]], %[[MEAN]]
// CHECK: %[[SQ:.*]] = tosa.mul %[[C]], %[[C]]
// CHECK: tosa.reduce_sum %[[SQ]] {axis = 1 : i32}
// CHECK: %[[V2:.*]] = tosa.reduce_sum %{{.*}} {axis = 2 : i32}
// CHECK: %[[VAR:.*]] = tosa.mul %[[V2]], %[[INVN]]
// CHECK: %[[EPS:.*]] = "tosa.const"() <{values = dense<1.000000e-03> : tensor<1x1x1xf32>}>
// CHECK: %[[VE:.*]] = tosa.add %[[VAR]], %[[EPS]]
// CHECK: %[[ISTD:.*]] = tosa.rsqrt %[[VE]]
// CHECK: %[[N:.*]] = tosa.mul %[[C]], %[[ISTD]]
// CHECK: %[[GR:.*]] = tosa.reshape %[[G]], %{{.*}} : (tensor<4x8xf32>, !tosa.shape<3>) -> tensor<1x4x8xf32>
// CHECK: %[[BR:.*]] = tosa.reshape %[[B]], %{{.*}} : (tensor<4x8xf32>, !tosa.shape<3>) -> tensor<1x4x8xf32>
// CHECK: %[[SC:.*]] = tosa.mul %[[N]], %[[GR]]
// CHECK: %[[Y:.*]] = tosa.add %[[SC]], %[[BR]] : (tensor<2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: return %[[Y]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = tcc.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-03 : tensor<2x4x8xf32>, tensor<4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// Attention: grouped key/value heads tiled to the query heads, Q·Kᵀ as a
// rank-3 matmul over batch x heads, the scale, the causal triangle as a
// select of -inf, the mask, the shifted softmax, ·V.
// CHECK-LABEL: func.func @attention
// CHECK: tosa.tile %{{.*}}, %{{.*}} : (tensor<1x2x1x3x8xf32>, !tosa.shape<5>) -> tensor<1x2x2x3x8xf32>
// CHECK: tosa.transpose %{{.*}} {perms = array<i32: 0, 2, 1>} : (tensor<4x3x8xf32>) -> tensor<4x8x3xf32>
// CHECK: tosa.matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x2x8xf32>, tensor<4x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x2x3xf32>
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1x1x1x1xf32>}>
// CHECK: tosa.mul %{{.*}}, %[[S]]
// CHECK: %[[T:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}true, false, false], [true, true, false]]]]> : tensor<1x1x2x3xi1>}>
// CHECK: %[[F:.*]] = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}>
// CHECK: tosa.select %[[T]], %{{.*}}, %[[F]]
// CHECK: tosa.add %{{.*}}, %{{.*}} : (tensor<1x4x2x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x4x2x3xf32>
// CHECK: tosa.reduce_max %{{.*}} {axis = 3 : i32}
// CHECK: tosa.exp
// CHECK: tosa.reduce_sum %{{.*}} {axis = 3 : i32}
// CHECK: tosa.reciprocal
// A row without any key (its maximum -inf) is 0.
// CHECK: %[[EMPTY:.*]] = tosa.equal %{{.*}}, %{{.*}} : (tensor<1x4x2x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x4x2x1xi1>
// CHECK: tosa.select %[[EMPTY]], %{{.*}}, %{{.*}} : (tensor<1x4x2x1xi1>, tensor<1x1x1x1xf32>, tensor<1x4x2x3xf32>) -> tensor<1x4x2x3xf32>
// CHECK: tosa.matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x2x3xf32>, tensor<4x3x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x2x8xf32>
// CHECK-NOT: tcc.attention
func.func @attention(%q: tensor<1x4x2x8xf32>, %k: tensor<1x2x3x8xf32>, %m: tensor<1x1x1x3xf32>) -> tensor<1x4x2x8xf32> {
  %0 = tcc.attention %q, %k, %k mask %m : tensor<1x1x1x3xf32> scale = 0.5 causal = true : tensor<1x4x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32> -> tensor<1x4x2x8xf32>
  return %0 : tensor<1x4x2x8xf32>
}
