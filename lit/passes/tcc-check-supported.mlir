// tcc-check-supported accepts tcc's coverage and rejects, with a location,
// ops outside it, dynamically shaped tensors and element types tcc does not
// compute in. --verify-diagnostics fails on a missing or an unexpected
// error (so @supported must pass without one); the second run checks that
// the pass itself fails, with one error per expected-error below and none
// at @supported's lines.
// RUN: tcc-opt %s --split-input-file --tcc-check-supported --verify-diagnostics
// RUN: not tcc-opt %s --split-input-file --tcc-check-supported 2>&1 | FileCheck %s
// CHECK-NOT: error:
// CHECK: :[[# @LINE + 25]]:8: error: unsupported op 'tosa.sin'
// CHECK: error: argument 0 of @dynamic_shape has the dynamically shaped type 'tensor<?x4xf32>'
// CHECK: error: 'tosa.exp' uses the dynamically shaped type
// CHECK: error: unsupported op 'tosa.sin'
// CHECK: error: unsupported op 'tosa.cos'
// CHECK: error: argument 0 of @float8 has the type 'tensor<4xf8E4M3FN>'
// CHECK: error: 'tosa.cast' result has the type 'tensor<4xf8E5M2>'

func.func @supported(%a: tensor<1x4x8xf32>, %b: tensor<1x8x4xf32>) -> tensor<1x4x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4xf32>
  %1 = tcc.softmax %0 axis = -1 : tensor<1x4x4xf32>
  %e = tensor.empty() : tensor<1x4x4xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1 : tensor<1x4x4xf32>) outs(%e : tensor<1x4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<1x4x4xf32>
  return %2 : tensor<1x4x4xf32>
}

// -----

func.func @unsupported_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsupported op 'tosa.sin': tcc cannot compile it}}
  %0 = tosa.sin %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 0 of @dynamic_shape has the dynamically shaped type 'tensor<?x4xf32>': tcc needs static shapes}}
func.func @dynamic_shape(%x: tensor<?x4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tosa.exp' uses the dynamically shaped type 'tensor<?x4xf32>': tcc needs static shapes}}
  %0 = tosa.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<4xf32>
}

// -----

// Every unsupported op is reported, not only the first.
func.func @several(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsupported op 'tosa.sin'}}
  %0 = tosa.sin %x : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{unsupported op 'tosa.cos'}}
  %1 = tosa.cos %0 : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Half precision and f64 are in (half stored, computed in f32 registers).
func.func @half(%x: tensor<4xf16>, %y: tensor<4xbf16>, %z: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>) {
  %0 = tosa.cast %x : (tensor<4xf16>) -> tensor<4xf32>
  %1 = tosa.cast %y : (tensor<4xbf16>) -> tensor<4xf32>
  %2 = tosa.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = tosa.add %z, %z : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %2, %3 : tensor<4xf32>, tensor<4xf64>
}

// -----

// float8 has no kernel form (ONNX float8 is converted at import time).
// expected-error @+1 {{argument 0 of @float8 has the type 'tensor<4xf8E4M3FN>': tcc's kernels do not handle f8E4M3FN elements}}
func.func @float8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  return %x : tensor<4xf8E4M3FN>
}

// -----

func.func @float8_result(%x: tensor<4xf32>) -> tensor<4xf8E5M2> {
  // expected-error @+1 {{'tosa.cast' result has the type 'tensor<4xf8E5M2>': tcc's kernels do not handle f8E5M2 elements}}
  %0 = tosa.cast %x : (tensor<4xf32>) -> tensor<4xf8E5M2>
  return %0 : tensor<4xf8E5M2>
}

// -----

// A symbolic batch (`tcc compile --dim batch=1..64`): declared on the
// module, named on the argument. The argument is accepted, and so is every
// op of the first dynamic slice computing on it with the batch leading:
// elementwise ops, a MatMul with a dynamic M, reshapes keeping the batch
// leading, transposes, a reduction over a static axis, the row softmax,
// a convolution and pooling with a dynamic N.
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @slice(%x: tensor<?x4xf32> {tcc.dim_names = ["batch", ""]}, %w: tensor<1x4x8xf32>, %img: tensor<?x8x8x3xf32> {tcc.dim_names = ["batch", "", "", ""]}, %f: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x4x4x4xf32>) {
    %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %0 = tosa.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %s3 = tosa.const_shape {values = dense<[1, -1, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %1 = tosa.reshape %0, %s3 : (tensor<?x4xf32>, !tosa.shape<3>) -> tensor<1x?x4xf32>
    %2 = tosa.matmul %1, %w, %z, %z : (tensor<1x?x4xf32>, tensor<1x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x8xf32>
    %s2 = tosa.const_shape {values = dense<[-1, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %3 = tosa.reshape %2, %s2 : (tensor<1x?x8xf32>, !tosa.shape<2>) -> tensor<?x8xf32>
    %4 = tcc.softmax %3 axis = -1 : tensor<?x8xf32>
    %5 = tosa.reduce_sum %0 {axis = 1 : i32} : (tensor<?x4xf32>) -> tensor<?x1xf32>
    %6 = tosa.conv2d %img, %f, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<?x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x8x8x4xf32>
    %7 = tosa.max_pool2d %6 {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<?x8x8x4xf32>) -> tensor<?x4x4x4xf32>
    %8 = tosa.transpose %7 {perms = array<i32: 0, 3, 1, 2>} : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
    return %4, %5, %8 : tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x4x4x4xf32>
  }
}

// -----

// What is outside the first slice is refused, each op once, naming the op,
// the dimension and its range, and why.
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @outside(%x: tensor<?x4xf32> {tcc.dim_names = ["batch", ""]}, %img: tensor<?x8x8x3xf32> {tcc.dim_names = ["batch", "", "", ""]}) -> (tensor<1x4xf32>, tensor<8x?x8x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    // expected-error @+1 {{'tosa.reduce_sum' computes on the dynamically shaped type 'tensor<?x4xf32>' (dynamic dimension 'batch' (1..64)): 'tosa.reduce_sum' reduces over the dynamic dimension}}
    %0 = tosa.reduce_sum %x {axis = 0 : i32} : (tensor<?x4xf32>) -> tensor<1x4xf32>
    %1 = tosa.transpose %img {perms = array<i32: 1, 0, 2, 3>} : (tensor<?x8x8x3xf32>) -> tensor<8x?x8x3xf32>
    // expected-error @+1 {{'tosa.avg_pool2d' computes on the dynamically shaped type 'tensor<8x?x4x3xf32>' (dynamic dimension 'batch' (1..64)): 'tosa.avg_pool2d' gets a dynamic dimension that is not the leading one (in 'tensor<8x?x4x3xf32>'): only a leading batch (after unit dimensions) compiles for it yet}}
    %p = tosa.avg_pool2d %1, %z, %z {acc_type = f32, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<8x?x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x?x4x3xf32>
    // expected-error @+1 {{'tosa.concat' computes on the dynamically shaped type 'tensor<?x4xf32>' (dynamic dimension 'batch' (1..64)): 'tosa.concat' joins along the dynamic dimension}}
    %2 = tosa.concat %x, %x {axis = 0 : i32} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    // expected-error @+1 {{'tcc.softmax' computes on the dynamically shaped type 'tensor<?x4xf32>' (dynamic dimension 'batch' (1..64)): 'tcc.softmax' normalizes along an axis other than the last: only rows along the last axis compile with a dynamic dimension yet}}
    %3 = tcc.softmax %x axis = 0 : tensor<?x4xf32>
    return %0, %1, %2, %3 : tensor<1x4xf32>, tensor<8x?x8x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  }
}

// -----

// A sequence beside the batch: symbolic extents on any axes of
// elementwise ops, reshapes, transposes and products (attention's scores
// over the sequence, `batch x heads x sequence x sequence`), a softmax
// along a symbolic row, a layer norm over a static one.
module attributes {tcc.dims = #tcc.dims<names = ["batch", "sequence"], min = [1, 1], max = [8, 128]>} {
  func.func @sequence(%q: tensor<?x2x?x16xf32> {tcc.dim_names = ["batch", "", "sequence", ""]}, %k: tensor<?x2x?x16xf32> {tcc.dim_names = ["batch", "", "sequence", ""]}, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) {
    %kt = tosa.transpose %k {perms = array<i32: 0, 1, 3, 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x16x?xf32>
    %s3 = tosa.const_shape {values = dense<[-1, 16, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %n = tensor.dim %q, %c0 : tensor<?x2x?x16xf32>
    %t = tensor.dim %q, %c2 : tensor<?x2x?x16xf32>
    %n2 = arith.muli %n, %c2 : index
    %qf = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x2x?x16xf32> into tensor<?x?x16xf32>
    %kf = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<?x2x16x?xf32> into tensor<?x16x?xf32>
    %scores = tosa.matmul %qf, %kf, %z, %z : (tensor<?x?x16xf32>, tensor<?x16x?xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x?xf32>
    %s4 = tensor.expand_shape %scores [[0, 1], [2], [3]] output_shape [%n, 2, %t, %t] : tensor<?x?x?xf32> into tensor<?x2x?x?xf32>
    %p = tcc.softmax %s4 axis = -1 : tensor<?x2x?x?xf32>
    %e = tosa.exp %q : (tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
    %ln = tcc.layer_norm %e, %g, %b axis = 3 epsilon = 1.0e-05 : tensor<?x2x?x16xf32>, tensor<16xf32>
    return %p, %ln : tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>
  }
}

// -----

// Its forms outside: a reduction over the sequence, a convolution whose
// image is symbolic past its batch.
module attributes {tcc.dims = #tcc.dims<names = ["batch", "sequence"], min = [1, 1], max = [8, 128]>} {
  func.func @sequence_outside(%x: tensor<?x?xf32> {tcc.dim_names = ["batch", "sequence"]}, %img: tensor<?x?x8x3xf32> {tcc.dim_names = ["batch", "sequence", "", ""]}, %f: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> (tensor<?x1xf32>, tensor<?x?x8x4xf32>) {
    %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    // expected-error @+1 {{'tosa.reduce_sum' reduces over the dynamic dimension}}
    %0 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<?x?xf32>) -> tensor<?x1xf32>
    // expected-error @+1 {{'tosa.conv2d' gets a dynamic dimension that is not the leading one (in 'tensor<?x?x8x4xf32>')}}
    %1 = tosa.conv2d %img, %f, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<?x?x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8x4xf32>
    return %0, %1 : tensor<?x1xf32>, tensor<?x?x8x4xf32>
  }
}

// -----

// What transformer and segmentation exports add to the slice: comparisons
// and selects (attention masks), GELU, a gather of token ids from a static
// table and one per batch (a resize), concatenations and tiles along
// static axes (rotary halves, grouped-query heads), and the importer's
// broadcast of a constant to the batch (a `tensor.empty` sized by
// `tensor.dim`, an all-parallel `linalg.generic`).
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @transformer_ops(%x: tensor<?x4xf32> {tcc.dim_names = ["batch", ""]}, %ids: tensor<1x?xi32> {tcc.dim_names = ["", "batch"]}, %table: tensor<1x16x4xf32>, %img: tensor<?x8x6xf32> {tcc.dim_names = ["batch", "", ""]}, %rows: tensor<?x3xi32> {tcc.dim_names = ["batch", ""]}) -> (tensor<?x4xf32>, tensor<1x?x4xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x3x6xf32>) {
    %z = "tosa.const"() <{values = dense<0.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
    %m = tosa.greater %x, %z : (tensor<?x4xf32>, tensor<1x1xf32>) -> tensor<?x4xi1>
    %0 = tosa.select %m, %x, %z : (tensor<?x4xi1>, tensor<?x4xf32>, tensor<1x1xf32>) -> tensor<?x4xf32>
    %1 = tosa.gather %table, %ids : (tensor<1x16x4xf32>, tensor<1x?xi32>) -> tensor<1x?x4xf32>
    %2 = tosa.concat %x, %0 {axis = 1 : i32} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
    %multiples = tosa.const_shape {values = dense<[1, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %3 = tosa.tile %x, %multiples : (tensor<?x4xf32>, !tosa.shape<2>) -> tensor<?x8xf32>
    %seed = "tosa.const"() <{values = dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>}> : () -> tensor<1x4xf32>
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x4xf32>
    %empty = tensor.empty(%n) : tensor<?x4xf32>
    %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%seed : tensor<1x4xf32>) outs(%empty : tensor<?x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<?x4xf32>
    %5 = tosa.gather %img, %rows : (tensor<?x8x6xf32>, tensor<?x3xi32>) -> tensor<?x3x6xf32>
    %6 = tcc.gelu %4 approximate = "none" : tensor<?x4xf32>
    return %6, %1, %2, %3, %4, %5 : tensor<?x4xf32>, tensor<1x?x4xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x3x6xf32>
  }
}

// -----

// Their forms outside the slice: a tile repeating the batch, a batch of
// rows gathered with static indices. (A generic reducing over the batch is
// inside it: the loop nests take a symbolic reduction bound.)
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @transformer_ops_outside(%x: tensor<?x4xf32> {tcc.dim_names = ["batch", ""]}, %img: tensor<?x8x6xf32> {tcc.dim_names = ["batch", "", ""]}, %rows: tensor<1x3xi32>) -> (tensor<?x4xf32>, tensor<4xf32>, tensor<1x3x6xf32>) {
    %multiples = tosa.const_shape {values = dense<[2, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
    // expected-error @+1 {{'tosa.tile' repeats along the dynamic dimension}}
    %0 = tosa.tile %x, %multiples : (tensor<?x4xf32>, !tosa.shape<2>) -> tensor<?x4xf32>
    %empty = tensor.empty() : tensor<4xf32>
    %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%empty : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.addf %in, %out : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    // expected-error @+1 {{'tosa.gather' gathers from a dynamically shaped table with static indices}}
    %2 = tosa.gather %img, %rows : (tensor<?x8x6xf32>, tensor<1x3xi32>) -> tensor<1x3x6xf32>
    return %0, %1, %2 : tensor<?x4xf32>, tensor<4xf32>, tensor<1x3x6xf32>
  }
}

// -----

// With one declared dimension an argument's `?`s need no names (MLIR
// models); a function that only passes the value through compiles.
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @unnamed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

module attributes {tcc.dims = #tcc.dims<names = ["batch", "seq"], min = [1, 1], max = [64, 128]>} {
  // expected-error @+1 {{argument 0 of @two_dims has the type 'tensor<?x4xf32>': name its dynamic dimensions with tcc.dim_names (one of batch, seq per dimension}}
  func.func @two_dims(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  // expected-error @+1 {{argument 0 of @undeclared has the type 'tensor<?x4xf32>': dimension 0 is 'seq', which is not declared (declare it with --dim seq=MIN..MAX; declared: batch)}}
  func.func @undeclared(%x: tensor<?x4xf32> {tcc.dim_names = ["seq", ""]}) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  // expected-error @+1 {{argument 0 of @named_static has the type 'tensor<?x4xf32>': dimension 1 is named 'batch' but is static (4)}}
  func.func @named_static(%x: tensor<?x4xf32> {tcc.dim_names = ["batch", "batch"]}) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  // expected-error @+1 {{argument 0 of @wrong_rank has the type 'tensor<?x4xf32>': its tcc.dim_names has 1 entries for a tensor of rank 2}}
  func.func @wrong_rank(%x: tensor<?x4xf32> {tcc.dim_names = ["batch"]}) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

// An output's dynamic extent must be the dimension itself (the runtime
// sizes outputs from it): a reshape folding a static axis into the batch
// makes it 2 x batch; one taking it out again gives the batch back.
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @folded(%x: tensor<?x2x10xf32>) -> (tensor<?x10xf32>, tensor<?x20xf32>) {
    %s = tosa.const_shape {values = dense<[-1, 10]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %0 = tosa.reshape %x, %s : (tensor<?x2x10xf32>, !tosa.shape<2>) -> tensor<?x10xf32>
    %t = tosa.const_shape {values = dense<[-1, 20]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %1 = tosa.reshape %0, %t : (tensor<?x10xf32>, !tosa.shape<2>) -> tensor<?x20xf32>
    // expected-error @+1 {{'func.return' computes on the dynamically shaped type 'tensor<?x10xf32>' (dynamic dimension 'batch' (1..64)): result 0 has the dynamic extent 2 x 'batch': an output's dynamic extent must be the dimension itself yet}}
    return %0, %1 : tensor<?x10xf32>, tensor<?x20xf32>
  }
}
