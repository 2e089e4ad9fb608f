// tcc-opt behaves like mlir-opt: stdin/-o, --split-input-file output,
// IR printing around passes, timing, debug info, pass and dialect lists.
// RUN: tcc-opt < %s | FileCheck %s --check-prefix=STDIN
// RUN: tcc-opt %s -o %t.out.mlir && FileCheck %s --check-prefix=STDIN < %t.out.mlir
// RUN: tcc-opt %s --split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: tcc-opt %s --split-input-file --tcc-decompose-composites --canonicalize --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-ALL
// RUN: tcc-opt %s --split-input-file --tcc-decompose-composites --canonicalize --mlir-print-ir-before=tcc-decompose-composites -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: tcc-opt %s --split-input-file --tcc-decompose-composites --canonicalize --mlir-print-ir-after=tcc-decompose-composites -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: tcc-opt %s --split-input-file --tcc-decompose-composites --mlir-timing -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: tcc-opt %s --split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO
// RUN: tcc-opt --list-passes | FileCheck %s --check-prefix=LIST
// RUN: tcc-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS
// A command-line error is a usage error: exit code 2, as tcc and tcc-run.
// RUN: bash -c 'tcc-opt %s --no-such-flag 2>/dev/null; test $? -eq 2'
// RUN: not tcc-opt %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=USAGE
// USAGE: Unknown command line argument '--no-such-flag'

// STDIN: func.func @first
// STDIN: func.func @second

// SPLIT: func.func @first
// SPLIT: // -----
// SPLIT: func.func @second

// AFTER-ALL: IR Dump After {{.*}}tcc-decompose-composites
// AFTER-ALL: IR Dump After Canonicalizer

// BEFORE: IR Dump Before {{.*}}tcc-decompose-composites
// BEFORE: tcc.softmax
// BEFORE-NOT: IR Dump Before Canonicalizer

// AFTER: IR Dump After {{.*}}tcc-decompose-composites
// AFTER: tosa.reduce_max
// AFTER-NOT: IR Dump After Canonicalizer

// TIMING: Execution time report
// TIMING: tcc-decompose-composites

// DEBUGINFO: loc("{{.*}}driver-flags.mlir":{{[0-9]+}}:{{[0-9]+}})

// LIST: --tcc-decompose-composites {{ *}}- {{ *}}Expand tcc composite ops
// LIST: --tosa-to-linalg

// DIALECTS: Available Dialects:{{.*}}linalg{{.*}}tcc{{.*}}tosa

func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.softmax %x axis = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
