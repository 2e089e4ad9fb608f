// --verify-diagnostics fails on a wrong, a missing or an unmatched
// expectation, and passes with @above/@below/@+N/@-N offsets that match.
// RUN: not tcc-opt %S/Inputs/wrong-expectation.mlir --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=WRONG
// RUN: not tcc-opt %S/Inputs/missing-expectation.mlir --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tcc-opt %S/Inputs/unmatched-expectation.mlir --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=UNMATCHED
// RUN: tcc-opt %s --split-input-file --verify-diagnostics

// WRONG: wrong-expectation.mlir:3:8: error: unexpected error: 'tcc.softmax' op axis 5 is out of range
// WRONG: wrong-expectation.mlir:2:{{[0-9]+}}: error: expected error "this message is not the one the verifier emits" was not produced
// MISSING: missing-expectation.mlir:2:8: error: unexpected error: 'tcc.softmax' op axis 5 is out of range
// UNMATCHED: unmatched-expectation.mlir:2:{{[0-9]+}}: error: expected warning "never emitted" was not produced

func.func @above(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.softmax %x axis = 1 : tensor<4xf32>
  // expected-error @above {{axis 1 is out of range}}
  return %0 : tensor<4xf32>
}

// -----

func.func @offsets(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{axis 3 is out of range}}

  %0 = tcc.softmax %x axis = 3 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @minus(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.softmax %x axis = -2 : tensor<4xf32>

  // expected-error @-2 {{axis -2 is out of range}}
  return %0 : tensor<4xf32>
}
