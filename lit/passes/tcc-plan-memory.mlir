// tcc-plan-memory gives every intermediate buffer of a host function an
// offset in one arena (liveness, greedy by size), records the arena size
// and the liveness lower bound, and leaves escaping buffers alone.
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory | FileCheck %s
// RUN: tcc-opt %s --split-input-file '--tcc-plan-memory=alignment=256' | FileCheck %s --check-prefix=A256
// RUN: not tcc-opt %s --split-input-file '--tcc-plan-memory=alignment=3' 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: alignment must be a power of two up to 1048576, got '3'

// A chain x -> a -> b -> c -> y: a and c are never alive together and
// share offset 0; b sits in the next aligned slot.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: tcc.arena_alignment = 4096 : i64, tcc.arena_bytes = 8192 : i64, tcc.live_bytes_bound = 800 : i64
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 4096 : i64, tcc.arena} : memref<8192xi8>
// CHECK: %[[OA:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[OA]]][] : memref<8192xi8> to memref<100xf32>
// CHECK: %[[OB:.*]] = arith.constant 4096 : index
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[OB]]][] : memref<8192xi8> to memref<100xf32>
// CHECK: %[[OC:.*]] = arith.constant 0 : index
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[OC]]][] : memref<8192xi8> to memref<100xf32>
// CHECK-NOT: memref.alloc()
// CHECK: memref.copy %arg0, %[[A]]
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: memref.copy %[[B]], %[[C]]
// CHECK: memref.copy %[[C]], %arg1
// A256-LABEL: func.func @chain
// A256-SAME: tcc.arena_alignment = 256 : i64, tcc.arena_bytes = 1024 : i64, tcc.live_bytes_bound = 800 : i64
// A256: arith.constant 512 : index
func.func @chain(%x: memref<100xf32>, %y: memref<100xf32>) {
  %a = memref.alloc() : memref<100xf32>
  %b = memref.alloc() : memref<100xf32>
  %c = memref.alloc() : memref<100xf32>
  memref.copy %x, %a : memref<100xf32> to memref<100xf32>
  memref.copy %a, %b : memref<100xf32> to memref<100xf32>
  memref.copy %b, %c : memref<100xf32> to memref<100xf32>
  memref.copy %c, %y : memref<100xf32> to memref<100xf32>
  return
}

// -----

// A returned buffer escapes and stays an allocation; an unused one is
// erased; nothing is left to plan.
// CHECK-LABEL: func.func @escapes
// CHECK-SAME: tcc.arena_bytes = 0 : i64, tcc.live_bytes_bound = 0 : i64
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: memref.copy %arg0, %[[R]]
// CHECK-NEXT: return %[[R]]
func.func @escapes(%x: memref<4xf32>) -> memref<4xf32> {
  %r = memref.alloc() : memref<4xf32>
  %unused = memref.alloc() : memref<8xf32>
  memref.copy %x, %r : memref<4xf32> to memref<4xf32>
  return %r : memref<4xf32>
}

// -----

// A buffer that a view aliases is left alone (the alias could outlive
// it); the deallocation of a planned buffer goes away with it.
// CHECK-LABEL: func.func @aliased
// CHECK-SAME: tcc.arena_bytes = 4096 : i64, tcc.live_bytes_bound = 64 : i64
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 4096 : i64, tcc.arena} : memref<4096xi8>
// CHECK: %[[S:.*]] = memref.alloc() : memref<4x4xf32>
// CHECK: %[[V:.*]] = memref.view %[[ARENA]]
// CHECK: %[[E:.*]] = memref.collapse_shape %[[S]]
// CHECK: memref.copy %[[V]], %arg1
// CHECK-NOT: memref.dealloc
func.func @aliased(%x: memref<16xf32>, %y: memref<16xf32>) {
  %s = memref.alloc() : memref<4x4xf32>
  %t = memref.alloc() : memref<16xf32>
  %e = memref.collapse_shape %s [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  memref.copy %x, %e : memref<16xf32> to memref<16xf32>
  memref.copy %e, %t : memref<16xf32> to memref<16xf32>
  memref.copy %t, %y : memref<16xf32> to memref<16xf32>
  memref.dealloc %t : memref<16xf32>
  return
}
