// Fully connected layers at batch 1 (matrix-vector products), the
// classifier of VGG and AlexNet: on the nvidia target, split-K GEMMs with
// 4-row tiles.
// @flatten_fc: a flatten (NHWC 6x6x64 -> 2304) before the layer, which
// elementwise fusion folds into the contraction (a C x H x W reduction);
// tcc-collapse-contractions makes it a batch_matmul again (K = 2304, N =
// 512: 2 tiles of 4x256, 16 slices of 144), with bias and relu.
// @classifier: M = 1, K = 1024, N = 1000 (4 tiles, 8 slices of 128).
// Sums of 2304 and 1024 products of values in [-1, 1]: outputs up to
// about 60 (standard deviations 16 and 11).
// TOLERANCE: 1.7e-3 1e-5
// ACCUMULATION: 2304 150
// TARGET: nvidia
func.func @flatten_fc(%x: tensor<1x6x6x64xf32>, %w: tensor<1x2304x512xf32>, %b: tensor<1x1x512xf32>) -> tensor<1x1x512xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shape = tosa.const_shape {values = dense<[1, 1, 2304]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %flat = tosa.reshape %x, %shape : (tensor<1x6x6x64xf32>, !tosa.shape<3>) -> tensor<1x1x2304xf32>
  %h = tosa.matmul %flat, %w, %zp, %zp : (tensor<1x1x2304xf32>, tensor<1x2304x512xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x512xf32>
  %hb = tosa.add %h, %b : (tensor<1x1x512xf32>, tensor<1x1x512xf32>) -> tensor<1x1x512xf32>
  %y = tosa.clamp %hb {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x1x512xf32>) -> tensor<1x1x512xf32>
  return %y : tensor<1x1x512xf32>
}

func.func @classifier(%x: tensor<1x1x1024xf32>, %w: tensor<1x1024x1000xf32>) -> tensor<1x1x1000xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x1x1024xf32>, tensor<1x1024x1000xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1000xf32>
  return %y : tensor<1x1x1000xf32>
}
