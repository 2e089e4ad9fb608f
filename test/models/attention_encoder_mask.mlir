// An encoder's self-attention with the padding mask as transformers'
// sdpa path exports it (BERT): and(all-true [1,1,S,1], padding [B,1,1,S])
// selected into 0 / -inf at the scores' full [B,1,S,S], added to the
// scaled scores, softmax, ·V. tcc-raise-attention raises it to one
// tcc.attention whose mask it computes at [B,1,1,S] (one row per batch,
// broadcast over the queries by the kernel). B=2, H=2, S=21, D=64.
// Inputs: q, k, v 2x2x21x64 f32, pad 2x1x1x21 i1 (0/1).
// TOLERANCE: 1e-5 1e-4
module {
  func.func @main(%q: tensor<2x2x21x64xf32> {tcc.name = "q"}, %k: tensor<2x2x21x64xf32> {tcc.name = "k"}, %v: tensor<2x2x21x64xf32> {tcc.name = "v"}, %pad: tensor<2x1x1x21xi1> {tcc.name = "pad"}) -> (tensor<2x2x21x64xf32> {tcc.name = "y"}) attributes {tcc.io_names = ["q", "k", "v", "pad", "y"], tcc.num_outputs = 1 : i64} {
    %true = "tosa.const"() <{values = dense<true> : tensor<1x1x21x1xi1>}> : () -> tensor<1x1x21x1xi1>
    %zero = "tosa.const"() <{values = dense<0.0> : tensor<2x1x21x21xf32>}> : () -> tensor<2x1x21x21xf32>
    %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
    %scale = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
    %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %keep = tosa.logical_and %true, %pad : (tensor<1x1x21x1xi1>, tensor<2x1x1x21xi1>) -> tensor<2x1x21x21xi1>
    %mask = tosa.select %keep, %zero, %ninf : (tensor<2x1x21x21xi1>, tensor<2x1x21x21xf32>, tensor<1x1x1x1xf32>) -> tensor<2x1x21x21xf32>
    %s3 = tosa.const_shape {values = dense<[4, 21, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %s4 = tosa.const_shape {values = dense<[2, 2, 21, 21]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %p3 = tosa.const_shape {values = dense<[4, 21, 21]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %o4 = tosa.const_shape {values = dense<[2, 2, 21, 64]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %q3 = tosa.reshape %q, %s3 : (tensor<2x2x21x64xf32>, !tosa.shape<3>) -> tensor<4x21x64xf32>
    %k3 = tosa.reshape %k, %s3 : (tensor<2x2x21x64xf32>, !tosa.shape<3>) -> tensor<4x21x64xf32>
    %kt = tosa.transpose %k3 {perms = array<i32: 0, 2, 1>} : (tensor<4x21x64xf32>) -> tensor<4x64x21xf32>
    %s = tosa.matmul %q3, %kt, %zp, %zp : (tensor<4x21x64xf32>, tensor<4x64x21xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x21x21xf32>
    %s_4 = tosa.reshape %s, %s4 : (tensor<4x21x21xf32>, !tosa.shape<4>) -> tensor<2x2x21x21xf32>
    %scaled = tosa.mul %s_4, %scale, %shift : (tensor<2x2x21x21xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x2x21x21xf32>
    %masked = tosa.add %scaled, %mask : (tensor<2x2x21x21xf32>, tensor<2x1x21x21xf32>) -> tensor<2x2x21x21xf32>
    %p = tcc.softmax %masked axis = 3 : tensor<2x2x21x21xf32>
    %p_3 = tosa.reshape %p, %p3 : (tensor<2x2x21x21xf32>, !tosa.shape<3>) -> tensor<4x21x21xf32>
    %v3 = tosa.reshape %v, %s3 : (tensor<2x2x21x64xf32>, !tosa.shape<3>) -> tensor<4x21x64xf32>
    %o = tosa.matmul %p_3, %v3, %zp, %zp : (tensor<4x21x21xf32>, tensor<4x21x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x21x64xf32>
    %o_4 = tosa.reshape %o, %o4 : (tensor<4x21x64xf32>, !tosa.shape<4>) -> tensor<2x2x21x64xf32>
    return %o_4 : tensor<2x2x21x64xf32>
  }
}
