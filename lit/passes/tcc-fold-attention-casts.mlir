// tcc-fold-attention-casts: a flash attention whose key or value is a
// widening copy (arith.extf) of a 16-bit buffer reads that buffer itself;
// the copy kernel and its buffer go away. Near misses keep the copy.
// RUN: tcc-opt %s --split-input-file --tcc-fold-attention-casts | FileCheck %s

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A half cache's key and value (a decode step).
// CHECK-LABEL: func.func @half_cache
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<1x4x2x64xf32>, %[[K:[a-z0-9_]+]]: memref<1x4x40x64xf16>, %[[V:[a-z0-9_]+]]: memref<1x4x40x64xbf16>, %[[OUT:[a-z0-9_]+]]: memref<1x4x2x64xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.generic
// CHECK: tcc.flash_attention ins(%[[Q]], %[[K]], %[[V]] : memref<1x4x2x64xf32>, memref<1x4x40x64xf16>, memref<1x4x40x64xbf16>) outs(%[[OUT]] : memref<1x4x2x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @half_cache(%q: memref<1x4x2x64xf32>, %k: memref<1x4x40x64xf16>, %v: memref<1x4x40x64xbf16>, %out: memref<1x4x2x64xf32>) {
  %kw = memref.alloc() : memref<1x4x40x64xf32>
  tcc.dispatch "cast_0" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : memref<1x4x40x64xf16>) outs(%kw : memref<1x4x40x64xf32>) {
    ^bb0(%in: f16, %o: f32):
      %e = arith.extf %in : f16 to f32
      linalg.yield %e : f32
    }
    tcc.yield
  }
  %vw = memref.alloc() : memref<1x4x40x64xf32>
  tcc.dispatch "cast_1" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v : memref<1x4x40x64xbf16>) outs(%vw : memref<1x4x40x64xf32>) {
    ^bb0(%in: bf16, %o: f32):
      %e = arith.extf %in : bf16 to f32
      linalg.yield %e : f32
    }
    tcc.yield
  }
  tcc.dispatch "attention_2" {
    tcc.flash_attention ins(%q, %kw, %vw : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>, memref<1x4x40x64xf32>) outs(%out : memref<1x4x2x64xf32>) scale = 0.125
    tcc.yield
  }
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// One buffer serves the key casts of two layers in turn: the second cast
// overwrites all of it after the first attention, so both fold.
// CHECK-LABEL: func.func @two_layers
// CHECK-SAME: (%[[K1:[a-z0-9_]+]]: memref<1x4x40x64xf16>, %[[K2:[a-z0-9_]+]]: memref<1x4x40x64xf16>, %[[Q:[a-z0-9_]+]]: memref<1x4x2x64xf32>, %[[V:[a-z0-9_]+]]: memref<1x4x40x64xf32>
// CHECK-NOT: linalg.generic
// CHECK: tcc.flash_attention ins(%[[Q]], %[[K1]], %[[V]] :
// CHECK-NOT: linalg.generic
// CHECK: tcc.flash_attention ins(%[[Q]], %[[K2]], %[[V]] :
// CHECK-NOT: linalg.generic
func.func @two_layers(%k1: memref<1x4x40x64xf16>, %k2: memref<1x4x40x64xf16>, %q: memref<1x4x2x64xf32>, %v: memref<1x4x40x64xf32>, %o1: memref<1x4x2x64xf32>, %o2: memref<1x4x2x64xf32>) {
  %kw = memref.alloc() : memref<1x4x40x64xf32>
  tcc.dispatch "cast_0" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k1 : memref<1x4x40x64xf16>) outs(%kw : memref<1x4x40x64xf32>) {
    ^bb0(%in: f16, %o: f32):
      %e = arith.extf %in : f16 to f32
      linalg.yield %e : f32
    }
    tcc.yield
  }
  tcc.dispatch "attention_1" {
    tcc.flash_attention ins(%q, %kw, %v : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>, memref<1x4x40x64xf32>) outs(%o1 : memref<1x4x2x64xf32>) scale = 0.125
    tcc.yield
  }
  tcc.dispatch "cast_2" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k2 : memref<1x4x40x64xf16>) outs(%kw : memref<1x4x40x64xf32>) {
    ^bb0(%in: f16, %o: f32):
      %e = arith.extf %in : f16 to f32
      linalg.yield %e : f32
    }
    tcc.yield
  }
  tcc.dispatch "attention_3" {
    tcc.flash_attention ins(%q, %kw, %v : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>, memref<1x4x40x64xf32>) outs(%o2 : memref<1x4x2x64xf32>) scale = 0.125
    tcc.yield
  }
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Near misses, each keeping its copy: the source written between the cast
// and the attention (@rewritten), the widened copy read again after it
// (@read_after), a cast that computes as well (@scaled).
// CHECK-LABEL: func.func @rewritten
// CHECK: arith.extf
// CHECK: linalg.fill
// CHECK: tcc.flash_attention ins(%{{.*}}, %[[W:[a-z0-9_]+]], %{{.*}} : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>,
func.func @rewritten(%q: memref<1x4x2x64xf32>, %k: memref<1x4x40x64xf16>, %v: memref<1x4x40x64xf32>, %out: memref<1x4x2x64xf32>) {
  %kw = memref.alloc() : memref<1x4x40x64xf32>
  tcc.dispatch "cast_0" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : memref<1x4x40x64xf16>) outs(%kw : memref<1x4x40x64xf32>) {
    ^bb0(%in: f16, %o: f32):
      %e = arith.extf %in : f16 to f32
      linalg.yield %e : f32
    }
    tcc.yield
  }
  %zero = arith.constant 0.0 : f16
  tcc.dispatch "fill_1" {
    linalg.fill ins(%zero : f16) outs(%k : memref<1x4x40x64xf16>)
    tcc.yield
  }
  tcc.dispatch "attention_2" {
    tcc.flash_attention ins(%q, %kw, %v : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>, memref<1x4x40x64xf32>) outs(%out : memref<1x4x2x64xf32>) scale = 0.125
    tcc.yield
  }
  return
}

// CHECK-LABEL: func.func @read_after
// CHECK: arith.extf
// CHECK: tcc.flash_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>,
// CHECK: memref.copy
func.func @read_after(%q: memref<1x4x2x64xf32>, %k: memref<1x4x40x64xf16>, %v: memref<1x4x40x64xf32>, %out: memref<1x4x2x64xf32>, %keys: memref<1x4x40x64xf32>) {
  %kw = memref.alloc() : memref<1x4x40x64xf32>
  tcc.dispatch "cast_0" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : memref<1x4x40x64xf16>) outs(%kw : memref<1x4x40x64xf32>) {
    ^bb0(%in: f16, %o: f32):
      %e = arith.extf %in : f16 to f32
      linalg.yield %e : f32
    }
    tcc.yield
  }
  tcc.dispatch "attention_1" {
    tcc.flash_attention ins(%q, %kw, %v : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>, memref<1x4x40x64xf32>) outs(%out : memref<1x4x2x64xf32>) scale = 0.125
    tcc.yield
  }
  memref.copy %kw, %keys : memref<1x4x40x64xf32> to memref<1x4x40x64xf32>
  return
}

// CHECK-LABEL: func.func @scaled
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: tcc.flash_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>,
func.func @scaled(%q: memref<1x4x2x64xf32>, %k: memref<1x4x40x64xf16>, %v: memref<1x4x40x64xf32>, %out: memref<1x4x2x64xf32>) {
  %kw = memref.alloc() : memref<1x4x40x64xf32>
  tcc.dispatch "cast_0" {
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : memref<1x4x40x64xf16>) outs(%kw : memref<1x4x40x64xf32>) {
    ^bb0(%in: f16, %o: f32):
      %e = arith.extf %in : f16 to f32
      %s = arith.mulf %e, %e : f32
      linalg.yield %s : f32
    }
    tcc.yield
  }
  tcc.dispatch "attention_1" {
    tcc.flash_attention ins(%q, %kw, %v : memref<1x4x2x64xf32>, memref<1x4x40x64xf32>, memref<1x4x40x64xf32>) outs(%out : memref<1x4x2x64xf32>) scale = 0.125
    tcc.yield
  }
  return
}
