// The kernel boundary's verifier: a `tcc.dispatch` names its kernel with a
// C identifier (the entry point every back end emits), yields one value of
// each result's type, and holds no other kernel; the old `tcc.kernel`
// attribute is refused (the boundary is the op), and `tcc.kind` says what
// a kernel computes. Each violation is a located error.
// RUN: tcc-opt %s --split-input-file --verify-diagnostics

func.func @not_an_identifier(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'tcc.dispatch' op expects its kernel name to be a C identifier, got "0neg-1"}}
  tcc.dispatch "0neg-1" {
    linalg.negf ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
    tcc.yield
  }
  return
}

// -----

func.func @empty_name(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{expects its kernel name to be a C identifier, got ""}}
  tcc.dispatch "" {
    linalg.negf ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
    tcc.yield
  }
  return
}

// -----

func.func @yield_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'tcc.dispatch' op yields 0 values of types () for results of types ('tensor<4xf32>')}}
  %k = tcc.dispatch "neg_0" -> tensor<4xf32> {
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    tcc.yield
  }
  return %k : tensor<4xf32>
}

// -----

func.func @nested(%x: memref<4xf32>, %y: memref<4xf32>) {
  tcc.dispatch "neg_0" {
    // expected-error @+1 {{'tcc.dispatch' op of kernel "neg_1" is nested in kernel "neg_0": a kernel is one launch}}
    tcc.dispatch "neg_1" {
      linalg.negf ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
      tcc.yield
    }
    tcc.yield
  }
  return
}

// -----

func.func @yield_outside(%a: f32) -> f32 {
  // expected-error @+1 {{'tcc.yield' op expects parent op 'tcc.dispatch'}}
  tcc.yield %a : f32
}

// -----

func.func @kernel_attribute(%a: f32) -> f32 {
  // expected-error @+1 {{'arith.negf' op carries tcc.kernel, but a kernel is the tcc.dispatch op that holds its ops, not an attribute}}
  %r = arith.negf %a {tcc.kernel = "neg_0"} : f32
  return %r : f32
}

// -----

func.func @unknown_kind(%a: f32) -> f32 {
  // expected-error @+1 {{expects tcc.kind to be one of "elementwise", "reduction", "matmul", "softmax", "layer_norm", "convolution", "attention", got "conv"}}
  %r = arith.negf %a {tcc.kind = "conv"} : f32
  return %r : f32
}
