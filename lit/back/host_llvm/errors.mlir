// The host back end's errors on hand-written gpu-phase IR
// (`tcc compile --compile-from=gpu`): a host op it cannot translate is an
// error at that op, and no artifact is written.
// RUN: not tcc compile %s --compile-from=gpu -o %t.so 2>&1 | FileCheck %s
// RUN: not test -e %t.so

// CHECK: errors.mlir:[[@LINE+3]]:10: error: the host code generator cannot translate 'memref.subview'
module attributes {gpu.container_module} {
  func.func @f(%x: memref<8xf32>, %y: memref<8xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %s = memref.subview %x[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
    return
  }
  gpu.module @tcc_kernels {
  }
}
