// A dense layer large enough for the tiled GEMM template, with a bias + relu epilogue.
func.func @dense(%x: tensor<64x48xf32>, %w: tensor<48x40xf32>, %b: tensor<40xf32>) -> tensor<64x40xf32> {
  %e = tensor.empty() : tensor<64x40xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x40xf32>) -> tensor<64x40xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<64x48xf32>, tensor<48x40xf32>) outs(%f : tensor<64x40xf32>) -> tensor<64x40xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %b : tensor<64x40xf32>, tensor<40xf32>) outs(%e : tensor<64x40xf32>) {
  ^bb0(%acc: f32, %bias: f32, %out: f32):
    %s = arith.addf %acc, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x40xf32>
  return %y : tensor<64x40xf32>
}
