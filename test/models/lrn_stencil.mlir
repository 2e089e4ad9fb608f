// A local response normalization over the channels of a 1x6x6x10 NHWC
// tensor written as ONNX's importer writes it (squares, a zero pad of the
// channel axis, five shifted slices summed, scale, shift, pow, multiply):
// tcc-fold-pad-slices makes it one kernel that reads the squares' input at
// clamped shifted channels. alpha/size is large (0.5) so that every neighbour
// matters. @lrn_pad_returned: the same with the padded squares also a
// result, so nothing is folded (near miss).
// Sums of 5 squares, then pow: relative rounding ~1e-6.
// TOLERANCE: 1e-6 5e-6
func.func @lrn(%x: tensor<1x6x6x10xf32>) -> (tensor<1x6x6x10xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %alpha = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %k = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %nb = "tosa.const"() <{values = dense<-0.75> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %pads = tosa.const_shape {values = dense<[0, 0, 0, 0, 0, 0, 2, 2]> : tensor<8xindex>} : () -> !tosa.shape<8>
  %size = tosa.const_shape {values = dense<[1, 6, 6, 10]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %sq = tosa.mul %x, %x, %shift : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>, tensor<1xi8>) -> tensor<1x6x6x10xf32>
  %p = tosa.pad %sq, %pads, %zero : (tensor<1x6x6x10xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x6x6x14xf32>
  %o0 = tosa.const_shape {values = dense<[0, 0, 0, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s0 = tosa.slice %p, %o0, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o1 = tosa.const_shape {values = dense<[0, 0, 0, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.slice %p, %o1, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o2 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s2 = tosa.slice %p, %o2, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o3 = tosa.const_shape {values = dense<[0, 0, 0, 3]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s3 = tosa.slice %p, %o3, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o4 = tosa.const_shape {values = dense<[0, 0, 0, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s4 = tosa.slice %p, %o4, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %a1 = tosa.add %s0, %s1 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %a2 = tosa.add %a1, %s2 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %a3 = tosa.add %a2, %s3 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %a4 = tosa.add %a3, %s4 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %sc = tosa.mul %a4, %alpha, %shift : (tensor<1x6x6x10xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x6x6x10xf32>
  %b = tosa.add %sc, %k : (tensor<1x6x6x10xf32>, tensor<1x1x1x1xf32>) -> tensor<1x6x6x10xf32>
  %f = tosa.pow %b, %nb : (tensor<1x6x6x10xf32>, tensor<1x1x1x1xf32>) -> tensor<1x6x6x10xf32>
  %y = tosa.mul %x, %f, %shift : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>, tensor<1xi8>) -> tensor<1x6x6x10xf32>
  return %y : tensor<1x6x6x10xf32>
}

func.func @lrn_pad_returned(%x: tensor<1x6x6x10xf32>) -> (tensor<1x6x6x10xf32>, tensor<1x6x6x14xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %alpha = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %k = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %nb = "tosa.const"() <{values = dense<-0.75> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %pads = tosa.const_shape {values = dense<[0, 0, 0, 0, 0, 0, 2, 2]> : tensor<8xindex>} : () -> !tosa.shape<8>
  %size = tosa.const_shape {values = dense<[1, 6, 6, 10]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %sq = tosa.mul %x, %x, %shift : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>, tensor<1xi8>) -> tensor<1x6x6x10xf32>
  %p = tosa.pad %sq, %pads, %zero : (tensor<1x6x6x10xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x6x6x14xf32>
  %o0 = tosa.const_shape {values = dense<[0, 0, 0, 0]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s0 = tosa.slice %p, %o0, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o1 = tosa.const_shape {values = dense<[0, 0, 0, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s1 = tosa.slice %p, %o1, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o2 = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s2 = tosa.slice %p, %o2, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o3 = tosa.const_shape {values = dense<[0, 0, 0, 3]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s3 = tosa.slice %p, %o3, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %o4 = tosa.const_shape {values = dense<[0, 0, 0, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s4 = tosa.slice %p, %o4, %size : (tensor<1x6x6x14xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x6x10xf32>
  %a1 = tosa.add %s0, %s1 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %a2 = tosa.add %a1, %s2 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %a3 = tosa.add %a2, %s3 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %a4 = tosa.add %a3, %s4 : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>) -> tensor<1x6x6x10xf32>
  %sc = tosa.mul %a4, %alpha, %shift : (tensor<1x6x6x10xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x6x6x10xf32>
  %b = tosa.add %sc, %k : (tensor<1x6x6x10xf32>, tensor<1x1x1x1xf32>) -> tensor<1x6x6x10xf32>
  %f = tosa.pow %b, %nb : (tensor<1x6x6x10xf32>, tensor<1x1x1x1xf32>) -> tensor<1x6x6x10xf32>
  %y = tosa.mul %x, %f, %shift : (tensor<1x6x6x10xf32>, tensor<1x6x6x10xf32>, tensor<1xi8>) -> tensor<1x6x6x10xf32>
  return %y, %p : tensor<1x6x6x10xf32>, tensor<1x6x6x14xf32>
}
