// tcc-read-only-inputs: every argument of a public function (the model's
// inputs) is marked `bufferization.writable = false`, so that
// one-shot-bufferize copies an input before an op updates it rather than
// writing into the caller's buffer; private functions are left alone.
// RUN: tcc-opt %s --split-input-file --tcc-read-only-inputs | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-read-only-inputs --one-shot-bufferize=bufferize-function-boundaries | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{.*}}: tensor<4xf32> {bufferization.writable = false, tcc.name = "cache"}
// CHECK-SAME: %{{.*}}: f32 {bufferization.writable = false})
// BUF-LABEL: func.func @step(
// BUF-SAME: %[[CACHE:.*]]: memref<4xf32
// BUF: %[[COPY:.*]] = memref.alloc()
// BUF: memref.copy %[[CACHE]], %[[COPY]]
// BUF: memref.store %{{.*}}, %[[COPY]]
// BUF: return %[[COPY]]
func.func @step(%cache: tensor<4xf32> {tcc.name = "cache"}, %v: f32) -> tensor<4xf32> {
  %c2 = arith.constant 2 : index
  %updated = tensor.insert %v into %cache[%c2] : tensor<4xf32>
  return %updated : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func private @helper(
// CHECK-NOT: bufferization.writable
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
