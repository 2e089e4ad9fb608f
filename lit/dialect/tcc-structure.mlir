// The structural attributes other dialects' ops carry: the kernel
// boundary (`tcc.kernel`, `tcc.kind`) on the ops of one kernel. Valid ones
// round-trip; invalid ones are rejected with a located error (the
// dialect's attribute verifier, cpp/TccStructure.cpp; see
// tcc-kernel-invalid.mlir). The convolution is an op: tcc-conv.mlir.
// RUN: tcc-opt %s --split-input-file | FileCheck %s

// Ops of one kernel may nest (a kernel's loop holding its body ops).
// CHECK-LABEL: func.func @kernel_nesting
// CHECK: scf.for {{.*}} {
// CHECK: tcc.kernel = "add_1"
// CHECK: } {tcc.kernel = "add_1"}
func.func @kernel_nesting(%a: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> f32 {
    %s = arith.addf %acc, %a {tcc.kernel = "add_1"} : f32
    scf.yield %s : f32
  } {tcc.kernel = "add_1"}
  return %r : f32
}
