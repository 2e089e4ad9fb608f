// NVIDIA's few-row GEMM form (at most 8 rows over K >= 256: a decode
// step's projections, a classifier at batch 1) on every test device: one
// row with a bias and relu epilogue (B read along N in aligned 8-column
// loads); four rows against a transposed weight (B read along K in runs
// of 4, a column block hanging past N = 100); three batched rows of 3
// over K = 300 (the lanes' leftover rows, a column block past N = 200);
// two rows over N = 36 (element loads); eight rows (the lanes' sums added
// in two passes); a 1x1 convolution of a pooled 1x1 map (A through the
// convolution's offsets).
// Sums of up to 1024 products of values in [-1, 1]: results up to about
// 50, order-dependent rounding (lanes summed in a fixed order) up to a
// few 1e-5.
// TOLERANCE: 3e-4 1e-5
// ACCUMULATION: 1024 100
// TARGET: nvidia
module {
func.func @one_row_bias_relu(%x: tensor<1x1x768xf32>, %w: tensor<1x768x2304xf32>, %b: tensor<1x1x2304xf32>) -> tensor<1x1x2304xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x1x768xf32>, tensor<1x768x2304xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2304xf32>
  %hb = tosa.add %h, %b : (tensor<1x1x2304xf32>, tensor<1x1x2304xf32>) -> tensor<1x1x2304xf32>
  %y = tosa.clamp %hb {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x1x2304xf32>) -> tensor<1x1x2304xf32>
  return %y : tensor<1x1x2304xf32>
}

func.func @four_rows_transposed_weight(%x: tensor<1x4x512xf32>, %w: tensor<1x100x512xf32>) -> tensor<1x4x100xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %wt = tosa.transpose %w {perms = array<i32: 0, 2, 1>} : (tensor<1x100x512xf32>) -> tensor<1x512x100xf32>
  %y = tosa.matmul %x, %wt, %zp, %zp : (tensor<1x4x512xf32>, tensor<1x512x100xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x100xf32>
  return %y : tensor<1x4x100xf32>
}

func.func @three_rows_batched(%x: tensor<2x3x300xf32>, %w: tensor<2x300x200xf32>) -> tensor<2x3x200xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<2x3x300xf32>, tensor<2x300x200xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x200xf32>
  return %y : tensor<2x3x200xf32>
}

func.func @two_rows_narrow(%x: tensor<1x2x256xf32>, %w: tensor<1x256x36xf32>) -> tensor<1x2x36xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2x256xf32>, tensor<1x256x36xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x36xf32>
  return %y : tensor<1x2x36xf32>
}

func.func @eight_rows(%x: tensor<1x8x1024xf32>, %w: tensor<1x1024x64xf32>) -> tensor<1x8x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x8x1024xf32>, tensor<1x1024x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

func.func @pooled_conv(%x: tensor<1x1x1x512xf32>, %w: tensor<64x1x1x512xf32>, %b: tensor<64xf32>) -> tensor<1x1x1x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x1x1x512xf32>, tensor<64x1x1x512xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1x64xf32>
  return %y : tensor<1x1x1x64xf32>
}
}
