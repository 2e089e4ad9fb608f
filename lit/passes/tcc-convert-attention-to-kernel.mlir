// tcc-convert-attention-to-kernel turns tcc.attention of f32, f16 or
// bf16 tensors into tcc.flash_attention (one kernel later) and leaves the
// others to tcc-decompose-composites.
// RUN: tcc-opt %s --tcc-convert-attention-to-kernel | FileCheck %s

// CHECK-LABEL: func.func @f32
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x6x64xf32>, %[[K:.*]]: tensor<1x2x8x64xf32>, %[[M:.*]]: tensor<1x1x1x8xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x6x64xf32>
// CHECK: %[[A:.*]] = tcc.flash_attention ins(%[[Q]], %[[K]], %[[K]], %[[M]] : tensor<1x4x6x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x1x1x8xf32>) outs(%[[E]] : tensor<1x4x6x64xf32>) scale = 1.250000e-01 causal = true -> tensor<1x4x6x64xf32>
// CHECK: %[[B:.*]] = tcc.flash_attention ins(%[[A]], %[[K]], %[[K]] : {{.*}}) scale = 1.000000e+00 -> tensor<1x4x6x64xf32>
// CHECK: return %[[B]]
func.func @f32(%q: tensor<1x4x6x64xf32>, %k: tensor<1x2x8x64xf32>, %m: tensor<1x1x1x8xf32>) -> tensor<1x4x6x64xf32> {
  %0 = tcc.attention %q, %k, %k mask %m : tensor<1x1x1x8xf32> scale = 0.125 causal = true : tensor<1x4x6x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x4x6x64xf32>
  %1 = tcc.attention %0, %k, %k scale = 1.0 : tensor<1x4x6x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x4x6x64xf32>
  return %1 : tensor<1x4x6x64xf32>
}

// A half graph's attention (f16, bf16) takes the kernel too, in its own
// element type.
// CHECK-LABEL: func.func @half
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x2x4x8xf16>
// CHECK: tcc.flash_attention ins({{.*}}) outs(%[[E]] : tensor<1x2x4x8xf16>) scale = 5.000000e-01 -> tensor<1x2x4x8xf16>
func.func @half(%q: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %0 = tcc.attention %q, %q, %q scale = 0.5 : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x4x8xf16>
  return %0 : tensor<1x2x4x8xf16>
}

// CHECK-LABEL: func.func @bf16
// CHECK: tcc.flash_attention {{.*}} -> tensor<1x2x4x8xbf16>
func.func @bf16(%q: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %0 = tcc.attention %q, %q, %q scale = 0.5 : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16> -> tensor<1x2x4x8xbf16>
  return %0 : tensor<1x2x4x8xbf16>
}

// f64 (demoted or refused before this pass in a compile): left alone.
// CHECK-LABEL: func.func @f64
// CHECK: tcc.attention
// CHECK-NOT: tcc.flash_attention
func.func @f64(%q: tensor<1x2x4x8xf64>) -> tensor<1x2x4x8xf64> {
  %0 = tcc.attention %q, %q, %q scale = 0.5 : tensor<1x2x4x8xf64>, tensor<1x2x4x8xf64>, tensor<1x2x4x8xf64> -> tensor<1x2x4x8xf64>
  return %0 : tensor<1x2x4x8xf64>
}
