// tcc-fold-attention-transposes: the transposes around a flash attention
// (Q, K, V into [batch, heads, tokens, head_dim] and the output back)
// become memref.transpose views that the attention kernel reads and
// writes through strides; the copies and their buffers go away.
// RUN: tcc-opt %s --split-input-file --tcc-fold-attention-transposes | FileCheck %s

// Every operand and the output: four views, no copy left.
// CHECK-LABEL: func.func @all_four
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<2x8x4x16xf32>, %[[K:[a-z0-9_]+]]: memref<2x8x4x16xf32>, %[[V:[a-z0-9_]+]]: memref<2x8x4x16xf32>, %[[OUT:[a-z0-9_]+]]: memref<2x8x4x16xf32>)
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[QT:.*]] = memref.transpose %[[Q]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<2x8x4x16xf32> to memref<2x4x8x16xf32, strided<[512, 16, 64, 1]>>
// CHECK-DAG: %[[KT:.*]] = memref.transpose %[[K]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK-DAG: %[[VT:.*]] = memref.transpose %[[V]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK-DAG: %[[OT:.*]] = memref.transpose %[[OUT]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: tcc.flash_attention ins(%[[QT]], %[[KT]], %[[VT]] : {{.*}}) outs(%[[OT]] : {{.*}}) scale = 2.500000e-01
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @all_four(%q: memref<2x8x4x16xf32>, %k: memref<2x8x4x16xf32>, %v: memref<2x8x4x16xf32>, %out: memref<2x8x4x16xf32>) {
  %qt = memref.alloc() : memref<2x4x8x16xf32>
  tcc.dispatch "transpose_0" {
    linalg.transpose ins(%q : memref<2x8x4x16xf32>) outs(%qt : memref<2x4x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  %kt = memref.alloc() : memref<2x4x8x16xf32>
  tcc.dispatch "transpose_1" {
    linalg.transpose ins(%k : memref<2x8x4x16xf32>) outs(%kt : memref<2x4x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  %vt = memref.alloc() : memref<2x4x8x16xf32>
  tcc.dispatch "transpose_2" {
    linalg.transpose ins(%v : memref<2x8x4x16xf32>) outs(%vt : memref<2x4x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  %o = memref.alloc() : memref<2x4x8x16xf32>
  tcc.dispatch "attention_3" {
    tcc.flash_attention ins(%qt, %kt, %vt : memref<2x4x8x16xf32>, memref<2x4x8x16xf32>, memref<2x4x8x16xf32>) outs(%o : memref<2x4x8x16xf32>) scale = 0.25
    tcc.yield
  }
  tcc.dispatch "transpose_4" {
    linalg.transpose ins(%o : memref<2x4x8x16xf32>) outs(%out : memref<2x8x4x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  return
}

// -----

// One buffer serves the key transpose of two layers in turn (CSE shares
// their destination): each attention reads its own source, since the
// second copy overwrites all of the buffer after the first attention.
// CHECK-LABEL: func.func @shared_by_two_layers
// CHECK-SAME: (%[[K1:[a-z0-9_]+]]: memref<1x8x2x16xf32>, %[[K2:[a-z0-9_]+]]: memref<1x8x2x16xf32>, %[[Q:[a-z0-9_]+]]: memref<1x2x8x16xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[T1:.*]] = memref.transpose %[[K1]]
// CHECK: tcc.flash_attention ins(%[[Q]], %[[T1]], %[[Q]] :
// CHECK: %[[T2:.*]] = memref.transpose %[[K2]]
// CHECK: tcc.flash_attention ins(%[[Q]], %[[T2]], %[[Q]] :
// CHECK-NOT: linalg.transpose
func.func @shared_by_two_layers(%k1: memref<1x8x2x16xf32>, %k2: memref<1x8x2x16xf32>, %q: memref<1x2x8x16xf32>, %o1: memref<1x2x8x16xf32>, %o2: memref<1x2x8x16xf32>) {
  %kt = memref.alloc() : memref<1x2x8x16xf32>
  tcc.dispatch "transpose_0" {
    linalg.transpose ins(%k1 : memref<1x8x2x16xf32>) outs(%kt : memref<1x2x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  tcc.dispatch "attention_1" {
    tcc.flash_attention ins(%q, %kt, %q : memref<1x2x8x16xf32>, memref<1x2x8x16xf32>, memref<1x2x8x16xf32>) outs(%o1 : memref<1x2x8x16xf32>) scale = 0.25
    tcc.yield
  }
  tcc.dispatch "transpose_2" {
    linalg.transpose ins(%k2 : memref<1x8x2x16xf32>) outs(%kt : memref<1x2x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  tcc.dispatch "attention_3" {
    tcc.flash_attention ins(%q, %kt, %q : memref<1x2x8x16xf32>, memref<1x2x8x16xf32>, memref<1x2x8x16xf32>) outs(%o2 : memref<1x2x8x16xf32>) scale = 0.25
    tcc.yield
  }
  return
}

// -----

// Near misses stay: the source is overwritten between the copy and the
// attention (bufferization reused it), and the copied key is read again
// after the attention by an op that does not overwrite it.
// CHECK-LABEL: func.func @near_misses
// CHECK-COUNT-2: linalg.transpose
// CHECK-NOT: memref.transpose
func.func @near_misses(%src: memref<1x8x2x16xf32>, %k: memref<1x8x2x16xf32>, %q: memref<1x2x8x16xf32>, %o: memref<1x2x8x16xf32>, %later: memref<1x2x8x16xf32>) {
  %qt = memref.alloc() : memref<1x2x8x16xf32>
  tcc.dispatch "transpose_0" {
    linalg.transpose ins(%src : memref<1x8x2x16xf32>) outs(%qt : memref<1x2x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%src : memref<1x8x2x16xf32>)
  %kt = memref.alloc() : memref<1x2x8x16xf32>
  tcc.dispatch "transpose_1" {
    linalg.transpose ins(%k : memref<1x8x2x16xf32>) outs(%kt : memref<1x2x8x16xf32>) permutation = [0, 2, 1, 3]
    tcc.yield
  }
  tcc.dispatch "attention_2" {
    tcc.flash_attention ins(%qt, %kt, %q : memref<1x2x8x16xf32>, memref<1x2x8x16xf32>, memref<1x2x8x16xf32>) outs(%o : memref<1x2x8x16xf32>) scale = 0.25
    tcc.yield
  }
  memref.copy %kt, %later : memref<1x2x8x16xf32> to memref<1x2x8x16xf32>
  return
}
