// ViT's attention (no mask): MatMul(Q, Kᵀ) multiplied by 1/sqrt(64),
// Softmax, MatMul with V; raised to one tcc.attention. B=1, H=3, S=65 (one
// row past a block of 64).
// TOLERANCE: 1e-5 1e-4
module {
  func.func @main(%arg0: tensor<1x3x65x64xf32> {tcc.name = "q"}, %arg1: tensor<1x3x65x64xf32> {tcc.name = "k"}, %arg2: tensor<1x3x65x64xf32> {tcc.name = "v"}) -> (tensor<1x3x65x64xf32> {tcc.name = "y"}) attributes {tcc.io_names = ["q", "k", "v", "y"], tcc.num_outputs = 1 : i64} {
    %0 = tosa.transpose %arg1 {perms = array<i32: 0, 1, 3, 2>} : (tensor<1x3x65x64xf32>) -> tensor<1x3x64x65xf32>
    %1 = tosa.const_shape  {values = dense<[3, 65, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %2 = tosa.reshape %arg0, %1 : (tensor<1x3x65x64xf32>, !tosa.shape<3>) -> tensor<3x65x64xf32>
    %3 = tosa.const_shape  {values = dense<[3, 64, 65]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %4 = tosa.reshape %0, %3 : (tensor<1x3x64x65xf32>, !tosa.shape<3>) -> tensor<3x64x65xf32>
    %5 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %6 = tosa.matmul %2, %4, %5, %5 : (tensor<3x65x64xf32>, tensor<3x64x65xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3x65x65xf32>
    %7 = tosa.const_shape  {values = dense<[1, 3, 65, 65]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %8 = tosa.reshape %6, %7 : (tensor<3x65x65xf32>, !tosa.shape<4>) -> tensor<1x3x65x65xf32>
    %9 = "tosa.const"() <{values = dense<1.250000e-01> : tensor<f32>}> : () -> tensor<f32>
    %10 = tosa.const_shape  {values = dense<1> : tensor<4xindex>} : () -> !tosa.shape<4>
    %11 = tosa.reshape %9, %10 : (tensor<f32>, !tosa.shape<4>) -> tensor<1x1x1x1xf32>
    %12 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %13 = tosa.mul %8, %11, %12 : (tensor<1x3x65x65xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x3x65x65xf32>
    %14 = tcc.softmax %13 axis = 3 : tensor<1x3x65x65xf32>
    %15 = tosa.const_shape  {values = dense<[3, 65, 65]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %16 = tosa.reshape %14, %15 : (tensor<1x3x65x65xf32>, !tosa.shape<3>) -> tensor<3x65x65xf32>
    %17 = tosa.const_shape  {values = dense<[3, 65, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %18 = tosa.reshape %arg2, %17 : (tensor<1x3x65x64xf32>, !tosa.shape<3>) -> tensor<3x65x64xf32>
    %19 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %20 = tosa.matmul %16, %18, %19, %19 : (tensor<3x65x65xf32>, tensor<3x65x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3x65x64xf32>
    %21 = tosa.const_shape  {values = dense<[1, 3, 65, 64]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %22 = tosa.reshape %20, %21 : (tensor<3x65x64xf32>, !tosa.shape<4>) -> tensor<1x3x65x64xf32>
    return %22 : tensor<1x3x65x64xf32>
  }
}

