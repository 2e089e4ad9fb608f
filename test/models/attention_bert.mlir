// BERT's eager self-attention as exported to ONNX: MatMul(Q, Kᵀ), Div by
// sqrt(128), an additive padding mask [B,1,1,S] (an input), Softmax over
// axis 3, MatMul with V; raised to one tcc.attention with a mask, head
// dimension 128. B=2, H=2, S=21.
// TOLERANCE: 1e-5 1e-4
module {
  func.func @main(%arg0: tensor<2x2x21x128xf32> {tcc.name = "q"}, %arg1: tensor<2x2x21x128xf32> {tcc.name = "k"}, %arg2: tensor<2x2x21x128xf32> {tcc.name = "v"}, %arg3: tensor<2x1x1x21xf32> {tcc.name = "mask"}) -> (tensor<2x2x21x128xf32> {tcc.name = "y"}) attributes {tcc.io_names = ["q", "k", "v", "mask", "y"], tcc.num_outputs = 1 : i64} {
    %0 = tosa.transpose %arg1 {perms = array<i32: 0, 1, 3, 2>} : (tensor<2x2x21x128xf32>) -> tensor<2x2x128x21xf32>
    %1 = tosa.const_shape  {values = dense<[4, 21, 128]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %2 = tosa.reshape %arg0, %1 : (tensor<2x2x21x128xf32>, !tosa.shape<3>) -> tensor<4x21x128xf32>
    %3 = tosa.const_shape  {values = dense<[4, 128, 21]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %4 = tosa.reshape %0, %3 : (tensor<2x2x128x21xf32>, !tosa.shape<3>) -> tensor<4x128x21xf32>
    %5 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %6 = tosa.matmul %2, %4, %5, %5 : (tensor<4x21x128xf32>, tensor<4x128x21xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x21x21xf32>
    %7 = tosa.const_shape  {values = dense<[2, 2, 21, 21]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %8 = tosa.reshape %6, %7 : (tensor<4x21x21xf32>, !tosa.shape<4>) -> tensor<2x2x21x21xf32>
    %9 = "tosa.const"() <{values = dense<11.3137083> : tensor<f32>}> : () -> tensor<f32>
    %10 = "tosa.const"() <{values = dense<0.0883883461> : tensor<f32>}> : () -> tensor<f32>
    %11 = tosa.const_shape  {values = dense<1> : tensor<4xindex>} : () -> !tosa.shape<4>
    %12 = tosa.reshape %10, %11 : (tensor<f32>, !tosa.shape<4>) -> tensor<1x1x1x1xf32>
    %13 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %14 = tosa.mul %8, %12, %13 : (tensor<2x2x21x21xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x2x21x21xf32>
    %15 = tosa.add %14, %arg3 : (tensor<2x2x21x21xf32>, tensor<2x1x1x21xf32>) -> tensor<2x2x21x21xf32>
    %16 = tcc.softmax %15 axis = 3 : tensor<2x2x21x21xf32>
    %17 = tosa.const_shape  {values = dense<[4, 21, 21]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %18 = tosa.reshape %16, %17 : (tensor<2x2x21x21xf32>, !tosa.shape<3>) -> tensor<4x21x21xf32>
    %19 = tosa.const_shape  {values = dense<[4, 21, 128]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %20 = tosa.reshape %arg2, %19 : (tensor<2x2x21x128xf32>, !tosa.shape<3>) -> tensor<4x21x128xf32>
    %21 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %22 = tosa.matmul %18, %20, %21, %21 : (tensor<4x21x21xf32>, tensor<4x21x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x21x128xf32>
    %23 = tosa.const_shape  {values = dense<[2, 2, 21, 128]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %24 = tosa.reshape %22, %23 : (tensor<4x21x128xf32>, !tosa.shape<4>) -> tensor<2x2x21x128xf32>
    return %24 : tensor<2x2x21x128xf32>
  }
}

