// tcc-raise-attention replaces softmax(scale * Q·Kᵀ + mask)·V chains by
// tcc.attention, in the forms exporters emit, and leaves near misses alone.
// RUN: tcc-opt %s --split-input-file --tcc-raise-attention --canonicalize | FileCheck %s

// GPT-2's eager attention as imported from ONNX: 4-D heads reshaped into
// the rank-3 matmuls, K transposed, the Div by sqrt(d) as a multiply, the
// causal torch.where with finfo.min, the padding mask, softmax, ·V.
// CHECK-LABEL: func.func @gpt2_where
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x8xf32>, %[[K:.*]]: tensor<1x2x4x8xf32>, %[[V:.*]]: tensor<1x2x4x8xf32>, %[[M:.*]]: tensor<1x1x1x4xf32>)
// CHECK-NEXT: %[[A:.*]] = tcc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : tensor<1x1x1x4xf32> scale = 0.353553385 causal = true : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
// CHECK-NEXT: return %[[A]]
func.func @gpt2_where(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %min = "tosa.const"() <{values = dense<-3.40282347E+38> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %scale = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %tri = "tosa.const"() <{values = dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>}> : () -> tensor<1x1x4x4xi1>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 2, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[1, 2, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q3 = tosa.reshape %q, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %k3 = tosa.reshape %k, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt = tosa.transpose %k3 {perms = array<i32: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q3, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<1x2x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x4x4xf32>
  %causal = tosa.select %tri, %scaled, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %masked = tosa.add %causal, %m : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<1x2x4x4xf32>
  %p_3 = tosa.reshape %p, %p3 : (tensor<1x2x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v3 = tosa.reshape %v, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %p_3, %v3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<1x2x4x8xf32>
  return %o_4 : tensor<1x2x4x8xf32>
}

// -----

// Rank-3 heads (N = 2 becomes [1, 2]), the scale on the product, a
// rank-3 padding mask reshaped to rank 4.
// CHECK-LABEL: func.func @bert_rank3
// CHECK: %[[M4:.*]] = tosa.reshape %{{.*}}, %{{.*}} : (tensor<1x1x4xf32>, !tosa.shape<4>) -> tensor<1x1x1x4xf32>
// CHECK: %[[A:.*]] = tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M4]] : tensor<1x1x1x4xf32> scale = 1.250000e-01 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
// CHECK-NOT: tosa.matmul
// CHECK-NOT: tcc.softmax
func.func @bert_rank3(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %m: tensor<1x1x4xf32>) -> tensor<2x4x8xf32> {
  %scale = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %scaled = tosa.mul %s, %scale, %shift : (tensor<2x4x4xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x4xf32>
  %masked = tosa.add %scaled, %m : (tensor<2x4x4xf32>, tensor<1x1x4xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %masked axis = -1 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// torch's scaled_dot_product_attention export: Q and Kᵀ each scaled by
// sqrt(scale), the causal mask as a constant additive triangle (0 / -inf).
// CHECK-LABEL: func.func @sdpa
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 0.124999993 causal = true : tensor<1x2x3x8xf32>
// CHECK-NOT: tosa.matmul
func.func @sdpa(%q: tensor<2x3x8xf32>, %kt: tensor<2x8x3xf32>, %v: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %root = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %tri = "tosa.const"() <{values = dense<[[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]]> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %qs = tosa.mul %q, %root, %shift : (tensor<2x3x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x3x8xf32>
  %ks = tosa.mul %kt, %root, %shift : (tensor<2x8x3xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x8x3xf32>
  %s = tosa.matmul %qs, %ks, %zp, %zp : (tensor<2x3x8xf32>, tensor<2x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x3xf32>
  %masked = tosa.add %s, %tri : (tensor<2x3x3xf32>, tensor<1x3x3xf32>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %masked axis = 2 : tensor<2x3x3xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x8xf32>
  return %o : tensor<2x3x8xf32>
}

// -----

// masked_fill(upper triangle, -inf) selects the fill on the true side.
// A scale applied after a padding mask scales the mask too.
// CHECK-LABEL: func.func @masked_fill_then_scale
// CHECK: %[[MS:.*]] = tosa.mul %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x1x1x3xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x1x1x3xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[MS]] : tensor<1x1x1x3xf32> scale = 5.000000e-01 causal = true
func.func @masked_fill_then_scale(%q: tensor<2x3x8xf32>, %kt: tensor<2x8x3xf32>, %v: tensor<2x3x8xf32>, %m: tensor<1x1x3xf32>) -> tensor<2x3x8xf32> {
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %fill = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %upper = "tosa.const"() <{values = dense<[[[false, true, true], [false, false, true], [false, false, false]]]> : tensor<1x3x3xi1>}> : () -> tensor<1x3x3xi1>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x8xf32>, tensor<2x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x3xf32>
  %filled = tosa.select %upper, %fill, %s : (tensor<1x3x3xi1>, tensor<1x1x1xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %masked = tosa.add %filled, %m : (tensor<2x3x3xf32>, tensor<1x1x3xf32>) -> tensor<2x3x3xf32>
  %scaled = tosa.mul %masked, %half, %shift : (tensor<2x3x3xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %scaled axis = 2 : tensor<2x3x3xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x8xf32>
  return %o : tensor<2x3x8xf32>
}

// -----

// Near misses: each keeps its matmuls and softmax.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @softmax_over_queries(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s axis = 1 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// A multiplicative mask is not additive.
// CHECK-LABEL: func.func @mask_multiplied
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @mask_multiplied(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %m: tensor<1x1x4xf32>) -> tensor<2x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %masked = tosa.mul %s, %m, %shift : (tensor<2x4x4xf32>, tensor<1x1x4xf32>, tensor<1xi8>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %masked axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// A scale that differs per key is not a scalar.
// CHECK-LABEL: func.func @vector_scale
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @vector_scale(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %scale = "tosa.const"() <{values = dense<[[[0.5, 0.25, 0.125, 1.0]]]> : tensor<1x1x4xf32>}> : () -> tensor<1x1x4xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %scaled = tosa.mul %s, %scale, %shift : (tensor<2x4x4xf32>, tensor<1x1x4xf32>, tensor<1xi8>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %scaled axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// V multiplied on the wrong side: V·P.
// CHECK-LABEL: func.func @value_on_the_left
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @value_on_the_left(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %v, %p, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

// The scores have a second consumer (returned): computing them in the
// kernel too would do the work twice.
// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @scores_escape(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o, %s : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// A constant selection that is not the causal triangle (a band).
// CHECK-LABEL: func.func @band_select
// CHECK-NOT: tcc.attention
// CHECK: tosa.select
func.func @band_select(%q: tensor<2x3x8xf32>, %kt: tensor<2x8x3xf32>, %v: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %fill = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %band = "tosa.const"() <{values = dense<[[[true, true, false], [false, true, true], [false, false, true]]]> : tensor<1x3x3xi1>}> : () -> tensor<1x3x3xi1>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x8xf32>, tensor<2x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x3xf32>
  %sel = tosa.select %band, %s, %fill : (tensor<1x3x3xi1>, tensor<2x3x3xf32>, tensor<1x1x1xf32>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %sel axis = 2 : tensor<2x3x3xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x8xf32>
  return %o : tensor<2x3x8xf32>
}

// -----

// transformers' sdpa attention as torch 2.11 exports it (BERT): a boolean
// padding mask as where(mask, 0, -inf) added to the scores, and the NaN
// guard where(isnan(P), 0, P) after the softmax (IsNaN as the importer
// writes it: a generic of `cmpf uno`). Rows left without keys are 0 in
// tcc.attention too, so the guard goes with the chain.
// CHECK-LABEL: func.func @sdpa_nan_guard
// CHECK: %[[M:.*]] = tosa.select
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M]] : tensor<1x1x4x4xf32> scale = 0.353553385 : tensor<1x2x4x8xf32>
// CHECK-NOT: tcc.softmax
// CHECK-NOT: linalg.generic
func.func @sdpa_nan_guard(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %keep: tensor<1x1x4x4xi1>) -> tensor<2x4x8xf32> {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %scale = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s4 = tosa.const_shape {values = dense<[1, 2, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<1x2x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x4x4xf32>
  %bias = tosa.select %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xf32>
  %masked = tosa.add %scaled, %bias : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<1x2x4x4xf32>
  %e = tensor.empty() : tensor<1x2x4x4xi1>
  %nan = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf uno, %in, %in : f32
    linalg.yield %c : i1
  } -> tensor<1x2x4x4xi1>
  %guarded = tosa.select %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<1x1x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %g3 = tosa.reshape %guarded, %p3 : (tensor<1x2x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %o = tosa.matmul %g3, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// The NaN guard in TOSA's words (not(equal(P, P))), head dimension 128,
// the causal mask as Trilu/Where leave it after constant folding (an
// additive 0 / -inf triangle).
// CHECK-LABEL: func.func @nan_guard_tosa_head_dim_128
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 0.0883883461 causal = true : tensor<1x2x3x128xf32>
// CHECK-NOT: tcc.softmax
// CHECK-NOT: tosa.logical_not
func.func @nan_guard_tosa_head_dim_128(%q: tensor<2x3x128xf32>, %kt: tensor<2x128x3xf32>, %v: tensor<2x3x128xf32>) -> tensor<2x3x128xf32> {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %scale = "tosa.const"() <{values = dense<0.0883883461> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %tri = "tosa.const"() <{values = dense<[[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]]> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x128xf32>, tensor<2x128x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x3xf32>
  %scaled = tosa.mul %s, %scale, %shift : (tensor<2x3x3xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x3x3xf32>
  %masked = tosa.add %scaled, %tri : (tensor<2x3x3xf32>, tensor<1x3x3xf32>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %masked axis = 2 : tensor<2x3x3xf32>
  %same = tosa.equal %p, %p : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xi1>
  %nan = tosa.logical_not %same : (tensor<2x3x3xi1>) -> tensor<2x3x3xi1>
  %guarded = tosa.select %nan, %zero, %p : (tensor<2x3x3xi1>, tensor<1x1x1xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o = tosa.matmul %guarded, %v, %zp, %zp : (tensor<2x3x3xf32>, tensor<2x3x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x128xf32>
  return %o : tensor<2x3x128xf32>
}

// -----

// ONNX Attention (opset 23) with a runtime mask, as the importer writes
// it: the bias added to the scores, and zeros selected on the rows where
// the bias is -inf at every key (a count of the allowed keys).
// CHECK-LABEL: func.func @onnx_attention_empty_rows
// CHECK-SAME: %[[M:[^:]*]]: tensor<1x1x4x4xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M]] : tensor<1x1x4x4xf32> scale = 0.353553385 : tensor<1x2x4x8xf32>
// CHECK-NOT: tcc.softmax
func.func @onnx_attention_empty_rows(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %bias: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %scale = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 2, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[1, 2, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q3 = tosa.reshape %q, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %k3 = tosa.reshape %k, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt = tosa.transpose %k3 {perms = array<i32: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q3, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<1x2x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x4x4xf32>
  %masked = tosa.add %scaled, %bias : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<1x2x4x4xf32>
  %is_masked = tosa.equal %bias, %ninf : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xi1>
  %allowed = tosa.select %is_masked, %zero, %one : (tensor<1x1x4x4xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xf32>
  %count = tosa.reduce_sum %allowed {axis = 3 : i32} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x1xf32>
  %none = tosa.equal %count, %zero : (tensor<1x1x4x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x4x1xi1>
  %guarded = tosa.select %none, %zero, %p : (tensor<1x1x4x1xi1>, tensor<1x1x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p_3 = tosa.reshape %guarded, %p3 : (tensor<1x2x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v3 = tosa.reshape %v, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %p_3, %v3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<1x2x4x8xf32>
  return %o_4 : tensor<1x2x4x8xf32>
}

// -----

// Near miss: an empty-row guard counted from another tensor than the
// mask added to the scores zeroes rows tcc.attention would not.
// CHECK-LABEL: func.func @empty_rows_of_another_mask
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @empty_rows_of_another_mask(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %bias: tensor<1x4x4xf32>, %other: tensor<1x4x4xf32>) -> tensor<2x4x8xf32> {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %masked = tosa.add %s, %bias : (tensor<2x4x4xf32>, tensor<1x4x4xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %masked axis = 2 : tensor<2x4x4xf32>
  %is_masked = tosa.equal %other, %ninf : (tensor<1x4x4xf32>, tensor<1x1x1xf32>) -> tensor<1x4x4xi1>
  %allowed = tosa.select %is_masked, %zero, %one : (tensor<1x4x4xi1>, tensor<1x1x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x4xf32>
  %count = tosa.reduce_sum %allowed {axis = 2 : i32} : (tensor<1x4x4xf32>) -> tensor<1x4x1xf32>
  %none = tosa.equal %count, %zero : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xi1>
  %guarded = tosa.select %none, %zero, %p : (tensor<1x4x1xi1>, tensor<1x1x1xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = tosa.matmul %guarded, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Near miss: a NaN test whose result is also returned, and a guard that
// fills with 1 rather than 0, keep their chains.
// CHECK-LABEL: func.func @nan_guard_misses
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
// CHECK: tcc.softmax
func.func @nan_guard_misses(%q: tensor<2x3x8xf32>, %kt: tensor<2x8x3xf32>, %v: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x3xi1>, tensor<2x3x8xf32>) {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x8xf32>, tensor<2x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %s axis = 2 : tensor<2x3x3xf32>
  %same = tosa.equal %p, %p : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xi1>
  %nan = tosa.logical_not %same : (tensor<2x3x3xi1>) -> tensor<2x3x3xi1>
  %guarded = tosa.select %nan, %zero, %p : (tensor<2x3x3xi1>, tensor<1x1x1xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o = tosa.matmul %guarded, %v, %zp, %zp : (tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x8xf32>
  %s2 = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x8xf32>, tensor<2x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x3xf32>
  %p2 = tcc.softmax %s2 axis = 2 : tensor<2x3x3xf32>
  %same2 = tosa.equal %p2, %p2 : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xi1>
  %nan2 = tosa.logical_not %same2 : (tensor<2x3x3xi1>) -> tensor<2x3x3xi1>
  %filled = tosa.select %nan2, %one, %p2 : (tensor<2x3x3xi1>, tensor<1x1x1xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o2 = tosa.matmul %filled, %v, %zp, %zp : (tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x8xf32>
  return %o, %nan, %o2 : tensor<2x3x8xf32>, tensor<2x3x3xi1>, tensor<2x3x8xf32>
}

// -----

// Half chains. An f16 model as the ONNX importer writes it (GPT-2's
// eager attention exported after `.half()`): every op computes in f32
// between casts up from and down to f16, its result rounded to f16 between
// ops; the causal where moves f16 values and fills with f16's lowest
// value, finfo(float16).min; the padding mask arrives in f16. One f16
// tcc.attention on the f16 inputs replaces it all, the output cast too.
// CHECK-LABEL: func.func @f16_as_imported
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x8xf16>, %[[K:.*]]: tensor<1x2x4x8xf16>, %[[V:.*]]: tensor<1x2x4x8xf16>, %[[M:.*]]: tensor<1x1x1x4xf16>)
// CHECK-NOT: tosa.cast
// CHECK: %[[KT:.*]] = tosa.transpose %[[K]] {{.*}} -> tensor<1x2x8x4xf16>
// CHECK-NOT: tosa.cast
// CHECK: %[[A:.*]] = tcc.attention %[[Q]], %{{.*}}, %[[V]] mask %[[M]] : tensor<1x1x1x4xf16> scale = 0.353515625 causal = true : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x4x8xf16>
// CHECK-NEXT: return %[[A]] : tensor<1x2x4x8xf16>
func.func @f16_as_imported(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>, %m: tensor<1x1x1x4xf16>) -> tensor<1x2x4x8xf16> {
  %scale = "tosa.const"() <{values = dense<0.353515625> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %fill = "tosa.const"() <{values = dense<-6.550400e+04> : tensor<1x1x1x1xf16>}> : () -> tensor<1x1x1x1xf16>
  %tri = "tosa.const"() <{values = dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>}> : () -> tensor<1x1x4x4xi1>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %k3 = tosa.const_shape {values = dense<[2, 8, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 2, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[1, 2, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %kt = tosa.transpose %k {perms = array<i32: 0, 1, 3, 2>} : (tensor<1x2x4x8xf16>) -> tensor<1x2x8x4xf16>
  %q32 = tosa.cast %q : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %kt32 = tosa.cast %kt : (tensor<1x2x8x4xf16>) -> tensor<1x2x8x4xf32>
  %q_3 = tosa.reshape %q32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt_3 = tosa.reshape %kt32, %k3 : (tensor<1x2x8x4xf32>, !tosa.shape<3>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q_3, %kt_3, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<1x2x4x4xf32>
  %s16 = tosa.cast %s_4 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %s32 = tosa.cast %s16 : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %scaled = tosa.mul %s32, %scale, %shift : (tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x4x4xf32>
  %scaled16 = tosa.cast %scaled : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %causal = tosa.select %tri, %scaled16, %fill : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf16>, tensor<1x1x1x1xf16>) -> tensor<1x2x4x4xf16>
  %causal32 = tosa.cast %causal : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %m32 = tosa.cast %m : (tensor<1x1x1x4xf16>) -> tensor<1x1x1x4xf32>
  %masked = tosa.add %causal32, %m32 : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %masked16 = tosa.cast %masked : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %masked32 = tosa.cast %masked16 : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = tcc.softmax %masked32 axis = 3 : tensor<1x2x4x4xf32>
  %p16 = tosa.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %p32 = tosa.cast %p16 : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %v32 = tosa.cast %v : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %p_3 = tosa.reshape %p32, %p3 : (tensor<1x2x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v_3 = tosa.reshape %v32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %p_3, %v_3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<1x2x4x8xf32>
  %o16 = tosa.cast %o_4 : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf16>
  return %o16 : tensor<1x2x4x8xf16>
}

// -----

// f16 throughout in TOSA: the products in f16, the scale an f16 constant,
// the softmax in f16, a rank-3 f16 padding mask.
// CHECK-LABEL: func.func @f16_native
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8xf16>, %[[KT:.*]]: tensor<2x8x4xf16>, %[[V:.*]]: tensor<2x4x8xf16>, %[[M:.*]]: tensor<1x1x4xf16>)
// CHECK: %[[M4:.*]] = tosa.reshape %[[M]], %{{.*}} : (tensor<1x1x4xf16>, !tosa.shape<4>) -> tensor<1x1x1x4xf16>
// CHECK: %[[A:.*]] = tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M4]] : tensor<1x1x1x4xf16> scale = 1.250000e-01 : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x4x8xf16>
// CHECK: %[[O:.*]] = tosa.reshape %[[A]], %{{.*}} : (tensor<1x2x4x8xf16>, !tosa.shape<3>) -> tensor<2x4x8xf16>
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: tosa.matmul
// CHECK-NOT: tcc.softmax
func.func @f16_native(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xf16>, %m: tensor<1x1x4xf16>) -> tensor<2x4x8xf16> {
  %scale = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf16>}> : () -> tensor<1x1x1xf16>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf16>, tensor<2x8x4xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x4x4xf16>
  %scaled = tosa.mul %s, %scale, %shift : (tensor<2x4x4xf16>, tensor<1x1x1xf16>, tensor<1xi8>) -> tensor<2x4x4xf16>
  %masked = tosa.add %scaled, %m : (tensor<2x4x4xf16>, tensor<1x1x4xf16>) -> tensor<2x4x4xf16>
  %p = tcc.softmax %masked axis = 2 : tensor<2x4x4xf16>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf16>, tensor<2x4x8xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x4x8xf16>
  return %o : tensor<2x4x8xf16>
}

// -----

// bf16 with the softmax upcast (transformers' eager attention:
// softmax(scores, dtype=float32).to(query.dtype)), the scale on the bf16
// product, the causal mask an additive bf16 triangle (0 / -inf).
// CHECK-LABEL: func.func @bf16_softmax_in_f32
// CHECK: %[[A:.*]] = tcc.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 0.353515625 causal = true : tensor<1x2x3x8xbf16>, tensor<1x2x3x8xbf16>, tensor<1x2x3x8xbf16> -> tensor<1x2x3x8xbf16>
// CHECK-NOT: tosa.cast
// CHECK-NOT: tcc.softmax
func.func @bf16_softmax_in_f32(%q: tensor<2x3x8xbf16>, %kt: tensor<2x8x3xbf16>, %v: tensor<2x3x8xbf16>) -> tensor<2x3x8xbf16> {
  %scale = "tosa.const"() <{values = dense<0.353515625> : tensor<1x1x1xbf16>}> : () -> tensor<1x1x1xbf16>
  %tri = "tosa.const"() <{values = dense<[[[0.0, 0xFF80, 0xFF80], [0.0, 0.0, 0xFF80], [0.0, 0.0, 0.0]]]> : tensor<1x3x3xbf16>}> : () -> tensor<1x3x3xbf16>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x8xbf16>, tensor<2x8x3xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<2x3x3xbf16>
  %scaled = tosa.mul %s, %scale, %shift : (tensor<2x3x3xbf16>, tensor<1x1x1xbf16>, tensor<1xi8>) -> tensor<2x3x3xbf16>
  %masked = tosa.add %scaled, %tri : (tensor<2x3x3xbf16>, tensor<1x3x3xbf16>) -> tensor<2x3x3xbf16>
  %up = tosa.cast %masked : (tensor<2x3x3xbf16>) -> tensor<2x3x3xf32>
  %p32 = tcc.softmax %up axis = 2 : tensor<2x3x3xf32>
  %p = tosa.cast %p32 : (tensor<2x3x3xf32>) -> tensor<2x3x3xbf16>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x3x3xbf16>, tensor<2x3x8xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<2x3x8xbf16>
  return %o : tensor<2x3x8xbf16>
}

// -----

// Half near misses: each keeps its matmuls and softmax.
// f16 scores with an f32 V: the output is stored in f16, but V is an f32
// tensor, not one cast up from f16.
// CHECK-LABEL: func.func @f16_scores_f32_value
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @f16_scores_f32_value(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf16> {
  %zp16 = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp16, %zp16 : (tensor<2x4x8xf16>, tensor<2x8x4xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x4x4xf16>
  %up = tosa.cast %s : (tensor<2x4x4xf16>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %up axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o16 = tosa.cast %o : (tensor<2x4x8xf32>) -> tensor<2x4x8xf16>
  return %o16 : tensor<2x4x8xf16>
}

// -----

// f16 scores whose f32 softmax is cast to bf16 (a different half type
// than the inputs') for a bf16 product.
// CHECK-LABEL: func.func @softmax_cast_to_other_half
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @softmax_cast_to_other_half(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
  %zp16 = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %s = tosa.matmul %q, %kt, %zp16, %zp16 : (tensor<2x4x8xf16>, tensor<2x8x4xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x4x4xf16>
  %up = tosa.cast %s : (tensor<2x4x4xf16>) -> tensor<2x4x4xf32>
  %p32 = tcc.softmax %up axis = 2 : tensor<2x4x4xf32>
  %p = tosa.cast %p32 : (tensor<2x4x4xf32>) -> tensor<2x4x4xbf16>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xbf16>, tensor<2x4x8xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<2x4x8xbf16>
  return %o : tensor<2x4x8xbf16>
}

// -----

// The upcast scores are also returned: the cast has a second use.
// CHECK-LABEL: func.func @upcast_used_elsewhere
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @upcast_used_elsewhere(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4x4xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf16>, tensor<2x8x4xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x4x4xf16>
  %up = tosa.cast %s : (tensor<2x4x4xf16>) -> tensor<2x4x4xf32>
  %p32 = tcc.softmax %up axis = 2 : tensor<2x4x4xf32>
  %p = tosa.cast %p32 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf16>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf16>, tensor<2x4x8xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x4x8xf16>
  return %o, %up : tensor<2x4x8xf16>, tensor<2x4x4xf32>
}

// -----

// An f32 chain that rounds its scores to f16 and back is not a half
// chain (its inputs and output are f32): the rounding stays.
// CHECK-LABEL: func.func @f32_scores_rounded_to_f16
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @f32_scores_rounded_to_f16(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s16 = tosa.cast %s : (tensor<2x4x4xf32>) -> tensor<2x4x4xf16>
  %s32 = tosa.cast %s16 : (tensor<2x4x4xf16>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s32 axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// f16's lowest value masks a key out only in an f16 chain: in bf16 (and
// f32) -65504 is an ordinary score, so this where is no causal mask.
// CHECK-LABEL: func.func @bf16_fill_is_not_masked_out
// CHECK-NOT: tcc.attention
// CHECK: tosa.select
func.func @bf16_fill_is_not_masked_out(%q: tensor<2x3x8xbf16>, %kt: tensor<2x8x3xbf16>, %v: tensor<2x3x8xbf16>) -> tensor<2x3x8xbf16> {
  %fill = "tosa.const"() <{values = dense<-6.550400e+04> : tensor<1x1x1xbf16>}> : () -> tensor<1x1x1xbf16>
  %tri = "tosa.const"() <{values = dense<[[[true, false, false], [true, true, false], [true, true, true]]]> : tensor<1x3x3xi1>}> : () -> tensor<1x3x3xi1>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x3x8xbf16>, tensor<2x8x3xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<2x3x3xbf16>
  %sel = tosa.select %tri, %s, %fill : (tensor<1x3x3xi1>, tensor<2x3x3xbf16>, tensor<1x1x1xbf16>) -> tensor<2x3x3xbf16>
  %p = tcc.softmax %sel axis = 2 : tensor<2x3x3xbf16>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x3x3xbf16>, tensor<2x3x8xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<2x3x8xbf16>
  return %o : tensor<2x3x8xbf16>
}

// -----

// A scale on V scales the output, not the scores: the attention reads the
// scaled V.
// CHECK-LABEL: func.func @value_scaled
// CHECK-SAME: %[[V:[^:]*]]: tensor<2x4x8xf32>)
// CHECK: %[[V2:.*]] = tosa.mul %[[V]], %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x8xf32>
// CHECK: %[[V4:.*]] = tosa.reshape %[[V2]], %{{.*}} : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<1x2x4x8xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %[[V4]] scale = 1.000000e+00 : tensor<1x2x4x8xf32>
func.func @value_scaled(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s axis = 2 : tensor<2x4x4xf32>
  %v2 = tosa.mul %v, %two, %shift : (tensor<2x4x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %p, %v2, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// A half model's constant mask, widened to f32 when it was imported (or
// folded), is narrowed back to f16 for the raised op when f16 holds each
// value exactly. With one f16 would round (0.1) the chain is not raised in
// f16: it is raised as the f32 chain it computes, on the casts up, its
// output cast down after it.
// CHECK-LABEL: func.func @f16_constant_masks
// CHECK-DAG: %[[INEXACT:.*]] = "tosa.const"() <{values = dense<{{.*}}1.000000e-01{{.*}}> : tensor<1x1x1x4xf32>}>
// CHECK-DAG: %[[M:.*]] = "tosa.const"() <{values = dense<{{.*}}[0.000000e+00, -1.000000e+00, 5.000000e-01, -6.550400e+04]{{.*}}> : tensor<1x1x1x4xf16>}>
// CHECK: %[[A:.*]] = tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M]] : tensor<1x1x1x4xf16> scale = 1.000000e+00 : tensor<1x2x4x8xf16>
// CHECK: %[[O:.*]] = tosa.reshape %[[A]]
// CHECK: %[[A2:.*]] = tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[INEXACT]] : tensor<1x1x1x4xf32> scale = 1.000000e+00 : tensor<1x2x4x8xf32>
// CHECK: %[[O2:.*]] = tosa.reshape %[[A2]]
// CHECK: %[[O2H:.*]] = tosa.cast %[[O2]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xf16>
// CHECK: return %[[O]], %[[O2H]]
func.func @f16_constant_masks(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4x8xf16>) {
  %exact = "tosa.const"() <{values = dense<[[[0.0, -1.0, 0.5, -65504.0]]]> : tensor<1x1x4xf32>}> : () -> tensor<1x1x4xf32>
  %inexact = "tosa.const"() <{values = dense<[[[0.0, 0.1, 0.0, 0.0]]]> : tensor<1x1x4xf32>}> : () -> tensor<1x1x4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %q32 = tosa.cast %q : (tensor<2x4x8xf16>) -> tensor<2x4x8xf32>
  %kt32 = tosa.cast %kt : (tensor<2x8x4xf16>) -> tensor<2x8x4xf32>
  %v32 = tosa.cast %v : (tensor<2x4x8xf16>) -> tensor<2x4x8xf32>
  %s = tosa.matmul %q32, %kt32, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %masked = tosa.add %s, %exact : (tensor<2x4x4xf32>, tensor<1x1x4xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %masked axis = 2 : tensor<2x4x4xf32>
  %o = tosa.matmul %p, %v32, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o16 = tosa.cast %o : (tensor<2x4x8xf32>) -> tensor<2x4x8xf16>
  %s2 = tosa.matmul %q32, %kt32, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %masked2 = tosa.add %s2, %inexact : (tensor<2x4x4xf32>, tensor<1x1x4xf32>) -> tensor<2x4x4xf32>
  %p2 = tcc.softmax %masked2 axis = 2 : tensor<2x4x4xf32>
  %o2 = tosa.matmul %p2, %v32, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o2_16 = tosa.cast %o2 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf16>
  return %o16, %o2_16 : tensor<2x4x8xf16>, tensor<2x4x8xf16>
}


// -----

// transformers' sdpa attention exported in f16: the NaN guard's IsNaN is
// computed in f32 on the f16 probabilities cast up (the importer widens
// every computing op), its where in f16. The guard goes with the chain.
// CHECK-LABEL: func.func @f16_sdpa_nan_guard
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x8xf16>, %[[K:.*]]: tensor<1x2x4x8xf16>, %[[V:.*]]: tensor<1x2x4x8xf16>, %[[M:.*]]: tensor<1x1x4x4xf16>)
// CHECK: tcc.attention %[[Q]], %{{.*}}, %[[V]] mask %[[M]] : tensor<1x1x4x4xf16> scale = 0.353515625 : tensor<1x2x4x8xf16>
// CHECK-NOT: tcc.softmax
// CHECK-NOT: linalg.generic
func.func @f16_sdpa_nan_guard(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>, %m: tensor<1x1x4x4xf16>) -> (tensor<1x2x4x8xf16>) {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf16>}> : () -> tensor<1x1x1x1xf16>
  %scale = "tosa.const"() <{values = dense<0.353515625> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 2, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[1, 2, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q32 = tosa.cast %q : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %k32 = tosa.cast %k : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %q_3 = tosa.reshape %q32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %k_3 = tosa.reshape %k32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt = tosa.transpose %k_3 {perms = array<i32: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q_3, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<1x2x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x4x4xf32>
  %m32 = tosa.cast %m : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf32>
  %masked = tosa.add %scaled, %m32 : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<1x2x4x4xf32>
  %p16 = tosa.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %wide = tosa.cast %p16 : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %e = tensor.empty() : tensor<1x2x4x4xi1>
  %nan = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wide : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf uno, %in, %in : f32
    linalg.yield %c : i1
  } -> tensor<1x2x4x4xi1>
  %guarded = tosa.select %nan, %zero, %p16 : (tensor<1x2x4x4xi1>, tensor<1x1x1x1xf16>, tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  %g32 = tosa.cast %guarded : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %v32 = tosa.cast %v : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %g3 = tosa.reshape %g32, %p3 : (tensor<1x2x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v3 = tosa.reshape %v32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %g3, %v3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<1x2x4x8xf32>
  %o16 = tosa.cast %o_4 : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf16>
  return %o16 : tensor<1x2x4x8xf16>
}

// -----

// The same guard whose cast up for the NaN test is also returned keeps
// its chain.
// CHECK-LABEL: func.func @f16_nan_test_input_escapes
// CHECK-NOT: tcc.attention
// CHECK: tcc.softmax
func.func @f16_nan_test_input_escapes(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>, %m: tensor<1x1x4x4xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x4x4xf32>) {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf16>}> : () -> tensor<1x1x1x1xf16>
  %scale = "tosa.const"() <{values = dense<0.353515625> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 2, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[1, 2, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q32 = tosa.cast %q : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %k32 = tosa.cast %k : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %q_3 = tosa.reshape %q32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %k_3 = tosa.reshape %k32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt = tosa.transpose %k_3 {perms = array<i32: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q_3, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<1x2x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<1x2x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x4x4xf32>
  %m32 = tosa.cast %m : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf32>
  %masked = tosa.add %scaled, %m32 : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<1x2x4x4xf32>
  %p16 = tosa.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %wide = tosa.cast %p16 : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %e = tensor.empty() : tensor<1x2x4x4xi1>
  %nan = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wide : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf uno, %in, %in : f32
    linalg.yield %c : i1
  } -> tensor<1x2x4x4xi1>
  %guarded = tosa.select %nan, %zero, %p16 : (tensor<1x2x4x4xi1>, tensor<1x1x1x1xf16>, tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  %g32 = tosa.cast %guarded : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %v32 = tosa.cast %v : (tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf32>
  %g3 = tosa.reshape %g32, %p3 : (tensor<1x2x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v3 = tosa.reshape %v32, %s3 : (tensor<1x2x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %g3, %v3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<1x2x4x8xf32>
  %o16 = tosa.cast %o_4 : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf16>
  return %o16, %wide : tensor<1x2x4x8xf16>, tensor<1x2x4x4xf32>
}

// -----

// transformers' encoder mask (BERT's sdpa path): and(all-true [1,1,Sq,1],
// padding [B,1,1,Skv]) selected into 0 / -inf reaches the add at the full
// [B,1,Sq,Skv]. It varies along the keys only, so the attention takes it
// computed once per key: [B,1,1,Skv].
// CHECK-LABEL: func.func @encoder_padding_mask_narrowed
// CHECK-SAME: %[[PAD:[a-z0-9]+]]: tensor<2x1x1x4xi1>
// CHECK: %[[NARROW:.*]] = tosa.select %[[PAD]], %{{.*}}, %{{.*}} : (tensor<2x1x1x4xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<2x1x1x4xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[NARROW]] : tensor<2x1x1x4xf32> scale = 0.353553385
// CHECK-NOT: tosa.logical_and
// CHECK-NOT: tensor<2x1x4x4xf32>
func.func @encoder_padding_mask_narrowed(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<2x1x4x8xf32>, %pad: tensor<2x1x1x4xi1>) -> tensor<2x1x4x8xf32> {
  %true = "tosa.const"() <{values = dense<true> : tensor<1x1x4x1xi1>}> : () -> tensor<1x1x4x1xi1>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<2x1x4x4xf32>}> : () -> tensor<2x1x4x4xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %scale = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %keep = tosa.logical_and %true, %pad : (tensor<1x1x4x1xi1>, tensor<2x1x1x4xi1>) -> tensor<2x1x4x4xi1>
  %mask = tosa.select %keep, %zero, %ninf : (tensor<2x1x4x4xi1>, tensor<2x1x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<2x1x4x4xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[2, 1, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[2, 1, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q3 = tosa.reshape %q, %s3 : (tensor<2x1x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %k3 = tosa.reshape %k, %s3 : (tensor<2x1x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt = tosa.transpose %k3 {perms = array<i32: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q3, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<2x1x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<2x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x1x4x4xf32>
  %masked = tosa.add %scaled, %mask : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<2x1x4x4xf32>
  %p_3 = tosa.reshape %p, %p3 : (tensor<2x1x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v3 = tosa.reshape %v, %s3 : (tensor<2x1x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %p_3, %v3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<2x1x4x8xf32>
  return %o_4 : tensor<2x1x4x8xf32>
}

// -----

// Near miss for the narrowing: the condition varies along the queries too
// (a per-query mask computed from an input), so the mask keeps its
// [B,1,Sq,Skv] shape.
// CHECK-LABEL: func.func @per_query_mask_kept
// CHECK: %[[MASK:.*]] = tosa.select %{{.*}} -> tensor<2x1x4x4xf32>
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[MASK]] : tensor<2x1x4x4xf32>
func.func @per_query_mask_kept(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<2x1x4x8xf32>, %pad: tensor<2x1x1x4xi1>, %rows: tensor<1x1x4x1xi1>) -> tensor<2x1x4x8xf32> {
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %scale = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %keep = tosa.logical_and %rows, %pad : (tensor<1x1x4x1xi1>, tensor<2x1x1x4xi1>) -> tensor<2x1x4x4xi1>
  %mask = tosa.select %keep, %zero, %ninf : (tensor<2x1x4x4xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<2x1x4x4xf32>
  %s3 = tosa.const_shape {values = dense<[2, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[2, 1, 4, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %p3 = tosa.const_shape {values = dense<[2, 4, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4 = tosa.const_shape {values = dense<[2, 1, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q3 = tosa.reshape %q, %s3 : (tensor<2x1x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %k3 = tosa.reshape %k, %s3 : (tensor<2x1x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %kt = tosa.transpose %k3 {perms = array<i32: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tosa.matmul %q3, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %s_4 = tosa.reshape %s, %s4 : (tensor<2x4x4xf32>, !tosa.shape<4>) -> tensor<2x1x4x4xf32>
  %scaled = tosa.mul %s_4, %scale, %shift : (tensor<2x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x1x4x4xf32>
  %masked = tosa.add %scaled, %mask : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %p = tcc.softmax %masked axis = 3 : tensor<2x1x4x4xf32>
  %p_3 = tosa.reshape %p, %p3 : (tensor<2x1x4x4xf32>, !tosa.shape<3>) -> tensor<2x4x4xf32>
  %v3 = tosa.reshape %v, %s3 : (tensor<2x1x4x8xf32>, !tosa.shape<3>) -> tensor<2x4x8xf32>
  %o = tosa.matmul %p_3, %v3, %zp, %zp : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %o_4 = tosa.reshape %o, %o4 : (tensor<2x4x8xf32>, !tosa.shape<4>) -> tensor<2x1x4x8xf32>
  return %o_4 : tensor<2x1x4x8xf32>
}
