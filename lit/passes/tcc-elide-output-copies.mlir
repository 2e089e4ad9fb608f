// tcc-elide-output-copies: a result that is a reshape of an allocation is
// written straight into the output argument.
// RUN: tcc-opt %s --split-input-file --tcc-elide-output-copies | FileCheck %s

// The allocation becomes the inverse reshape (a collapse) of the output
// argument; the producer writes through it and the copy is gone.
// CHECK-LABEL: func.func @expanded
// CHECK-SAME: (%[[X:.*]]: memref<1x8xf32>, %[[OUT:.*]]: memref<1x8x1x1xf32>)
// CHECK: %[[VIEW:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0], [1, 2, 3]] : memref<1x8x1x1xf32> into memref<1x8xf32>
// CHECK: memref.copy %[[X]], %[[VIEW]]
// CHECK-NOT: memref.alloc
// CHECK-NEXT: return
func.func @expanded(%x: memref<1x8xf32>, %out: memref<1x8x1x1xf32>) {
  %alloc = memref.alloc() : memref<1x8xf32>
  memref.copy %x, %alloc : memref<1x8xf32> to memref<1x8xf32>
  %e = memref.expand_shape %alloc [[0], [1, 2, 3]] output_shape [1, 8, 1, 1] : memref<1x8xf32> into memref<1x8x1x1xf32>
  memref.copy %e, %out : memref<1x8x1x1xf32> to memref<1x8x1x1xf32>
  return
}

// -----

// A collapsed result: the allocation becomes an expand of the output.
// CHECK-LABEL: func.func @collapsed
// CHECK-SAME: (%[[X:.*]]: memref<2x4xf32>, %[[OUT:.*]]: memref<8xf32>)
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[OUT]] {{\[\[}}0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
// CHECK: memref.copy %[[X]], %[[VIEW]]
// CHECK-NEXT: return
func.func @collapsed(%x: memref<2x4xf32>, %out: memref<8xf32>) {
  %alloc = memref.alloc() : memref<2x4xf32>
  memref.copy %x, %alloc : memref<2x4xf32> to memref<2x4xf32>
  %c = memref.collapse_shape %alloc [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  memref.copy %c, %out : memref<8xf32> to memref<8xf32>
  return
}

// -----

// Near misses stay: the reshape of an input (not an allocation), and an
// output argument that something else also writes.
// CHECK-LABEL: func.func @near_misses
// CHECK-COUNT-3: memref.copy
func.func @near_misses(%x: memref<1x8xf32>, %out: memref<1x8x1x1xf32>, %out2: memref<1x8x1x1xf32>) {
  %e = memref.expand_shape %x [[0], [1, 2, 3]] output_shape [1, 8, 1, 1] : memref<1x8xf32> into memref<1x8x1x1xf32>
  memref.copy %e, %out : memref<1x8x1x1xf32> to memref<1x8x1x1xf32>
  %alloc = memref.alloc() : memref<1x8xf32>
  %e2 = memref.expand_shape %alloc [[0], [1, 2, 3]] output_shape [1, 8, 1, 1] : memref<1x8xf32> into memref<1x8x1x1xf32>
  memref.copy %e2, %out2 : memref<1x8x1x1xf32> to memref<1x8x1x1xf32>
  memref.copy %e, %out2 : memref<1x8x1x1xf32> to memref<1x8x1x1xf32>
  return
}

// -----

// An allocation sized by a symbolic dimension (issue 33), copied whole
// into an output of its type: the producer writes the output argument
// (the runtime sizes it from the same dimension); the copy and the
// allocation are gone.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: memref<?x8xf32>, %[[OUT:.*]]: memref<?x8xf32>)
// CHECK: memref.copy %[[X]], %[[OUT]]
// CHECK-NOT: memref.alloc
// CHECK-NEXT: return
func.func @dynamic(%x: memref<?x8xf32>, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %alloc = memref.alloc(%n) : memref<?x8xf32>
  memref.copy %x, %alloc : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %alloc, %out : memref<?x8xf32> to memref<?x8xf32>
  return
}

// -----

// Written again after the copy: the output must keep the copied values,
// so the allocation stays.
// CHECK-LABEL: func.func @written_after
// CHECK: %[[ALLOC:.*]] = memref.alloc
// CHECK: memref.copy %{{.*}}, %[[ALLOC]]
// CHECK: memref.copy %[[ALLOC]], %{{.*}} : memref<?x8xf32> to memref<?x8xf32>
// CHECK: memref.copy %{{.*}}, %[[ALLOC]]
func.func @written_after(%x: memref<?x8xf32>, %y: memref<?x8xf32>, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %alloc = memref.alloc(%n) : memref<?x8xf32>
  memref.copy %x, %alloc : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %alloc, %out : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %y, %alloc : memref<?x8xf32> to memref<?x8xf32>
  return
}
