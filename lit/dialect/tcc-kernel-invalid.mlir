// The kernel boundary: `tcc.kernel` names a kernel (a C identifier, the
// entry point every back end emits), `tcc.kind` says what it computes,
// and an op of one kernel never sits inside an op of another. Violations
// are rejected with a located error.
// RUN: tcc-opt %s --split-input-file --verify-diagnostics

func.func @not_a_string(%a: f32) -> f32 {
  // expected-error @+1 {{expects tcc.kernel to be a kernel name (a string holding a C identifier), got 3 : i64}}
  %r = arith.negf %a {tcc.kernel = 3} : f32
  return %r : f32
}

// -----

func.func @not_an_identifier(%a: f32) -> f32 {
  // expected-error @+1 {{expects tcc.kernel to be a kernel name (a string holding a C identifier), got "0neg-1"}}
  %r = arith.negf %a {tcc.kernel = "0neg-1"} : f32
  return %r : f32
}

// -----

func.func @empty(%a: f32) -> f32 {
  // expected-error @+1 {{expects tcc.kernel to be a kernel name}}
  %r = arith.negf %a {tcc.kernel = ""} : f32
  return %r : f32
}

// -----

func.func @crossed(%a: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> f32 {
    // expected-error @+1 {{'arith.addf' op of kernel "add_2" is nested in an op of kernel "add_1"}}
    %s = arith.addf %acc, %a {tcc.kernel = "add_2"} : f32
    scf.yield %s : f32
  } {tcc.kernel = "add_1"}
  return %r : f32
}

// -----

func.func @unknown_kind(%a: f32) -> f32 {
  // expected-error @+1 {{expects tcc.kind to be one of "elementwise", "reduction", "matmul", "softmax", "layer_norm", "convolution", "attention", got "conv"}}
  %r = arith.negf %a {tcc.kernel = "neg_0", tcc.kind = "conv"} : f32
  return %r : f32
}
