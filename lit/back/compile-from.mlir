// `tcc compile --compile-from=PHASE` starts after PHASE on IR already at
// it: from the graph phase's output (TOSA), --compile-to=linalg runs the
// linalg phase alone, and the input phase's interface attributes are not
// added; a start at or after the stop and --input-shape are errors.
// RUN: tcc compile %s --compile-from=graph --compile-to=linalg | FileCheck %s
// RUN: not tcc compile %s --compile-from=gpu --compile-to=gpu 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not tcc compile %s --compile-from=codegen 2>&1 | FileCheck %s --check-prefix=LAST
// RUN: not tcc compile %s --compile-from=tiles 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tcc compile %s --compile-from=graph --input-shape=x=4 2>&1 | FileCheck %s --check-prefix=SHAPE

// CHECK-LABEL: func.func @add(
// CHECK-NOT: tcc.num_outputs
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: tosa.add
// ORDER: error: --compile-from=gpu starts after the gpu phase: it must name a phase before --compile-to (or before codegen)
// LAST: error: --compile-from=codegen starts after the codegen phase
// UNKNOWN: unknown phase 'tiles'
// SHAPE: error: --input-shape, --input-value, --sequence and --empty-optional apply to ONNX models, not to --compile-from=graph
func.func @add(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
