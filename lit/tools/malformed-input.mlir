// Malformed input gives a located error and exit code 1, never a crash.
// RUN: not tcc-opt %S/Inputs/truncated.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// TRUNCATED: truncated.mlir:2:18: error: expected ':'

// RUN: not tcc-opt %S/Inputs/unknown-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown-op.mlir:2:3: error: unregistered operation 'tcc.frobnicate' found in dialect ('tcc') that does not allow unknown operations

// RUN: not tcc-opt %S/Inputs/wrong-types.mlir 2>&1 | FileCheck %s --check-prefix=TYPES
// TYPES: wrong-types.mlir:2:3: error: type of return operand 0 ('tensor<2xf32>') doesn't match function result type ('tensor<2xi32>')

// Binary garbage (bytes that are not MLIR text or bytecode).
// RUN: printf '\x01\x9c\xff\x00\x7fgarbage\xfe' > %t.garbage.mlir
// RUN: not tcc-opt %t.garbage.mlir 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: garbage.mlir:1:1: error:

// A missing file.
// RUN: not tcc-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory

// An unknown pass.
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-no-such-pass)' 2>&1 | FileCheck %s --check-prefix=NOPASS
// NOPASS: 'tcc-no-such-pass' does not refer to a registered pass or pass pipeline
