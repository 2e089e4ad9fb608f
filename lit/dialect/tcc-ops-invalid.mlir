// Invalid tcc ops are rejected by their verifiers with a located error.
// RUN: tcc-opt %s --split-input-file --verify-diagnostics

func.func @softmax_axis_out_of_range(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  // expected-error @+1 {{'tcc.softmax' op axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)}}
  %0 = tcc.softmax %x axis = 2 : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %0 = tcc.softmax %x axis = 0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_integer(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = "tcc.softmax"(%x) {axis = 0 : i64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @softmax_type_mismatch(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{all of {input, output} have same type}}
  %0 = "tcc.softmax"(%x) {axis = 0 : i64} : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @log_softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis -3 is out of range}}
  %0 = tcc.log_softmax %x axis = -3 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{scale and bias must have the shape of the normalized dimensions [8x16], got 'tensor<16xf32>'}}
  %0 = tcc.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @layer_norm_bias_type(%x: tensor<2x16xf32>, %g: tensor<16xf32>, %b: tensor<8xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{all of {scale, bias} have same type}}
  %0 = "tcc.layer_norm"(%x, %g, %b) {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x16xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_epsilon(%x: tensor<2x16xf32>, %g: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{epsilon must be positive, got 0}}
  %0 = tcc.layer_norm %x, %g, %g axis = -1 epsilon = 0.0 : tensor<2x16xf32>, tensor<16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_element_type(%x: tensor<2x16xf32>, %g: tensor<16xf16>) -> tensor<2x16xf32> {
  // expected-error @+1 {{scale element type 'f16' does not match input element type 'f32'}}
  %0 = tcc.layer_norm %x, %g, %g axis = -1 epsilon = 1.0e-05 : tensor<2x16xf32>, tensor<16xf16>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = tcc.gelu %x approximate = "fast" : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @silu_unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = "tcc.silu"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @missing_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{requires attribute 'axis'}}
  %0 = "tcc.softmax"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @layer_norm_rows_scale_shape(%x: tensor<8x64xf32>, %g: tensor<8xf32>, %i: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{scale and bias must have the shape of a row [64]}}
  %0 = tcc.layer_norm_rows ins(%x, %g, %g : tensor<8x64xf32>, tensor<8xf32>, tensor<8xf32>) outs(%i : tensor<8x64xf32>) epsilon = 1.0e-05 -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

func.func @layer_norm_rows_mixed(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %o: memref<8x64xf32>) {
  // expected-error @+1 {{expects all tensors or all memrefs}}
  tcc.layer_norm_rows ins(%x, %g, %g : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%o : memref<8x64xf32>) epsilon = 1.0e-05
  return
}

// -----

func.func @layer_norm_rows_no_result(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %i: tensor<8x64xf32>) {
  // expected-error @+1 {{returns init's tensor type on tensors and nothing on memrefs}}
  tcc.layer_norm_rows ins(%x, %g, %g : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%i : tensor<8x64xf32>) epsilon = 1.0e-05
  return
}

// -----

func.func @layer_norm_rows_f16(%x: tensor<8x64xf16>, %g: tensor<64xf16>, %i: tensor<8x64xf16>) -> tensor<8x64xf16> {
  // expected-error @+1 {{expects f32 operands}}
  %0 = tcc.layer_norm_rows ins(%x, %g, %g : tensor<8x64xf16>, tensor<64xf16>, tensor<64xf16>) outs(%i : tensor<8x64xf16>) epsilon = 1.0e-05 -> tensor<8x64xf16>
  return %0 : tensor<8x64xf16>
}

// -----

func.func @layer_norm_rows_epsilon(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %i: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{epsilon must be positive, got 0}}
  %0 = tcc.layer_norm_rows ins(%x, %g, %g : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%i : tensor<8x64xf32>) epsilon = 0.0 -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

func.func @attention_rank(%q: tensor<2x6x64xf32>, %k: tensor<2x8x64xf32>) -> tensor<2x6x64xf32> {
  // expected-error @+1 {{expects a rank-4 query ([batch, heads, sequence, head dim])}}
  %0 = tcc.attention %q, %k, %k scale = 0.125 : tensor<2x6x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32> -> tensor<2x6x64xf32>
  return %0 : tensor<2x6x64xf32>
}

// -----

func.func @attention_heads(%q: tensor<1x4x6x64xf32>, %k: tensor<1x3x8x64xf32>) -> tensor<1x4x6x64xf32> {
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3)}}
  %0 = tcc.attention %q, %k, %k scale = 0.125 : tensor<1x4x6x64xf32>, tensor<1x3x8x64xf32>, tensor<1x3x8x64xf32> -> tensor<1x4x6x64xf32>
  return %0 : tensor<1x4x6x64xf32>
}

// -----

func.func @attention_head_dim(%q: tensor<1x4x6x64xf32>, %k: tensor<1x4x8x32xf32>) -> tensor<1x4x6x64xf32> {
  // expected-error @+1 {{must have the query's head dimension}}
  %0 = tcc.attention %q, %k, %k scale = 0.125 : tensor<1x4x6x64xf32>, tensor<1x4x8x32xf32>, tensor<1x4x8x32xf32> -> tensor<1x4x6x64xf32>
  return %0 : tensor<1x4x6x64xf32>
}

// -----

func.func @attention_mask(%q: tensor<1x4x6x64xf32>, %k: tensor<1x4x8x64xf32>, %m: tensor<1x1x6x6xf32>) -> tensor<1x4x6x64xf32> {
  // expected-error @+1 {{mask [1, 1, 6, 6] does not broadcast to the scores [1, 4, 6, 8]}}
  %0 = tcc.attention %q, %k, %k mask %m : tensor<1x1x6x6xf32> scale = 0.125 : tensor<1x4x6x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32> -> tensor<1x4x6x64xf32>
  return %0 : tensor<1x4x6x64xf32>
}

// -----

func.func @attention_scale(%q: tensor<1x4x6x64xf32>) -> tensor<1x4x6x64xf32> {
  // expected-error @+1 {{scale must be finite}}
  %0 = tcc.attention %q, %q, %q scale = 0x7F800000 : tensor<1x4x6x64xf32>, tensor<1x4x6x64xf32>, tensor<1x4x6x64xf32> -> tensor<1x4x6x64xf32>
  return %0 : tensor<1x4x6x64xf32>
}

// -----

func.func @attention_output(%q: tensor<1x4x6x64xf32>) -> tensor<1x4x6x32xf32> {
  // expected-error @+1 {{output [1, 4, 6, 32] must have the query's shape [1, 4, 6, 64]}}
  %0 = tcc.attention %q, %q, %q scale = 1.0 : tensor<1x4x6x64xf32>, tensor<1x4x6x64xf32>, tensor<1x4x6x64xf32> -> tensor<1x4x6x32xf32>
  return %0 : tensor<1x4x6x32xf32>
}

// -----

func.func @flash_attention_f64(%q: tensor<1x4x6x64xf64>) -> tensor<1x4x6x64xf64> {
  // expected-error @+1 {{expects f32, f16 or bf16 operands}}
  %0 = tcc.flash_attention ins(%q, %q, %q : tensor<1x4x6x64xf64>, tensor<1x4x6x64xf64>, tensor<1x4x6x64xf64>) outs(%q : tensor<1x4x6x64xf64>) scale = 1.0 -> tensor<1x4x6x64xf64>
  return %0 : tensor<1x4x6x64xf64>
}

// -----

// A dynamic leading batch is valid (lit/dialect/tcc-ops.mlir); a dynamic row is not.
func.func @layer_norm_rows_dynamic_row(%x: tensor<8x?xf32>, %g: tensor<64xf32>, %i: tensor<8x?xf32>) -> tensor<8x?xf32> {
  // expected-error @+1 {{expects an input of rank >= 1 with a static last dimension}}
  %0 = tcc.layer_norm_rows ins(%x, %g, %g : tensor<8x?xf32>, tensor<64xf32>, tensor<64xf32>) outs(%i : tensor<8x?xf32>) epsilon = 1.0e-05 -> tensor<8x?xf32>
  return %0 : tensor<8x?xf32>
}
