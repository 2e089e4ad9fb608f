// tcc-configure-kernels gives depthwise convolutions and poolings (named,
// or tcc.conv ops with a folded pad) the window template:
// `#tcc.window` with the work-group size, the output columns and channels
// (4: a float4 where the channels allow; on pocl-cpu the widest SIMD
// register of the target's vector_width that divides the channels, 16 on
// avx512, 8 on avx2) per work-item, and the work-item
// count. pocl-cpu takes it everywhere, in blocks of 4 columns wherever the
// rows have them; the GPU targets only where it measured faster on the
// H100 (stride 1, at most 16 window columns, at least 2^20 outputs) and
// keep loop nests for the rest. windows=on|off|N forces the choice
// (tcc compile maps the deprecated TCC_WINDOWS to it); templates=false
// (SPIR-V) never takes it. pocl-cpu runs state their CPU (avx512).
// RUN: tcc-opt %s --split-input-file --tcc-phase-linalg --tcc-phase-dispatch --tcc-hoist-parallel-dims --tcc-configure-kernels=target=nvidia | FileCheck %s --check-prefix=NVIDIA
// RUN: tcc-opt %s --split-input-file --tcc-phase-linalg --tcc-phase-dispatch --tcc-hoist-parallel-dims --tcc-configure-kernels=target=generic | FileCheck %s --check-prefix=GENERIC
// RUN: tcc-opt %s --split-input-file --tcc-phase-linalg --tcc-phase-dispatch --tcc-hoist-parallel-dims --tcc-configure-kernels=target=pocl-cpu-avx512 | FileCheck %s --check-prefix=POCL
// RUN: tcc-opt %s --split-input-file --tcc-phase-linalg --tcc-phase-dispatch --tcc-hoist-parallel-dims --tcc-configure-kernels=target=pocl-cpu-avx2 | FileCheck %s --check-prefix=AVX2
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-phase-dispatch,tcc-hoist-parallel-dims,tcc-configure-kernels{target=pocl-cpu-avx512 windows=2})' | FileCheck %s --check-prefix=FORCED
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-phase-dispatch,tcc-hoist-parallel-dims,tcc-configure-kernels{target=nvidia windows=on})' | FileCheck %s --check-prefix=FORCED-NV
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-phase-dispatch,tcc-hoist-parallel-dims,tcc-configure-kernels{target=nvidia windows=off})' | FileCheck %s --check-prefix=OFF
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-phase-dispatch,tcc-hoist-parallel-dims,tcc-configure-kernels{target=nvidia templates=false})' | FileCheck %s --check-prefix=OFF
// RUN: not tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-configure-kernels{windows=sideways})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: windows must be auto, on, off or a number of columns, not 'sideways'

// MobileNet-v2's first depthwise layer at batch 8 (3x3, pad 1, bias and
// ReLU6 fused): 4 columns of 4 channels per work-item on the GPUs,
// 8 x 112 x 28 x 8 = 200704 work-items.
// NVIDIA-LABEL: func.func @depthwise_relu6
// NVIDIA: tcc.conv<depthwise_conv_2d_nhwc_hwcm
// NVIDIA-SAME: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 4, vector = 4, work_items = 200704>
// GENERIC-LABEL: func.func @depthwise_relu6
// GENERIC: tcc.strategy = #tcc.window<workgroup_size = 128, columns = 4, vector = 4, work_items = 200704>
// POCL-LABEL: func.func @depthwise_relu6
// POCL: tcc.conv<depthwise_conv_2d_nhwc_hwcm
// POCL-SAME: tcc.strategy = #tcc.window<workgroup_size = 64, columns = 4, vector = 16, work_items = 50176>
// AVX2-LABEL: func.func @depthwise_relu6
// AVX2: tcc.strategy = #tcc.window<workgroup_size = 64, columns = 4, vector = 8, work_items = 100352>
// FORCED-LABEL: func.func @depthwise_relu6
// FORCED: tcc.strategy = #tcc.window<workgroup_size = 64, columns = 2, vector = 16, work_items = 100352>
// OFF-LABEL: func.func @depthwise_relu6
// OFF: tcc.strategy = #tcc.loops<workgroup_size = 256>
func.func @depthwise_relu6(%x: tensor<8x112x112x32xf32>, %w: tensor<3x3x32x1xf32>, %b: tensor<32xf32>) -> tensor<8x112x112x32xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<8x112x112x32xf32>, tensor<3x3x32x1xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x112x112x32xf32>
  %r = tosa.clamp %y {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<8x112x112x32xf32>) -> tensor<8x112x112x32xf32>
  return %r : tensor<8x112x112x32xf32>
}

// -----

// A late stage at batch 1 (7x7x960): too small for the template on the
// GPUs (loop nests there). Forced, blocks of 4 or 2 columns would leave
// under two groups per SM, so one column per work-item; a channel
// multiplier of 2 or channels not a multiple of 4 take scalar channels.
// NVIDIA-LABEL: func.func @late_and_scalar
// NVIDIA-NOT: #tcc.window
// FORCED-NV-LABEL: func.func @late_and_scalar
// FORCED-NV: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 1, vector = 4, work_items = 11760>
// FORCED-NV: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 1, vector = 1, work_items = 1960>
// FORCED-NV: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 1, vector = 1, work_items = 294>
// POCL-LABEL: func.func @late_and_scalar
// POCL: tcc.strategy = #tcc.window<workgroup_size = 64, columns = 4, vector = 16, work_items = 840>
// FORCED-LABEL: func.func @late_and_scalar
// FORCED: tcc.strategy = #tcc.window<workgroup_size = 64, columns = 2, vector = 16, work_items = 1680>
// OFF-LABEL: func.func @late_and_scalar
// OFF-NOT: #tcc.window
func.func @late_and_scalar(%x: tensor<1x7x7x960xf32>, %w: tensor<3x3x960x1xf32>, %b: tensor<960xf32>, %s: tensor<1x7x7x20xf32>, %w2: tensor<3x3x20x2xf32>, %b2: tensor<40xf32>, %w3: tensor<3x3x6x1xf32>, %b3: tensor<6xf32>, %t: tensor<1x9x9x6xf32>) -> (tensor<1x7x7x960xf32>, tensor<1x7x7x40xf32>, tensor<1x7x7x6xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x7x7x960xf32>, tensor<3x3x960x1xf32>, tensor<960xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x7x7x960xf32>
  %y2 = tosa.depthwise_conv2d %s, %w2, %b2, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x7x7x20xf32>, tensor<3x3x20x2xf32>, tensor<40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x7x7x40xf32>
  %y3 = tosa.depthwise_conv2d %t, %w3, %b3, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x9x9x6xf32>, tensor<3x3x6x1xf32>, tensor<6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x7x7x6xf32>
  return %y, %y2, %y3 : tensor<1x7x7x960xf32>, tensor<1x7x7x40xf32>, tensor<1x7x7x6xf32>
}

// -----

// Poolings: ResNet-50's stem max pool (3x3 stride 2, padded top and left, 112 -> 56) at
// batch 32, an average pool (a sum pool whose epilogue divides by the
// cells inside the input) and a 7x7 global average pool: stride 2, small
// and global, all loop nests on the GPUs unless forced.
// NVIDIA-LABEL: func.func @pools
// NVIDIA-NOT: #tcc.window
// FORCED-NV-LABEL: func.func @pools
// FORCED-NV: tcc.conv<pooling_nhwc_max
// FORCED-NV-SAME: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 4, vector = 4, work_items = 401408>
// FORCED-NV: tcc.conv<pooling_nhwc_sum
// FORCED-NV-SAME: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 1, vector = 4, work_items = 12544>
// FORCED-NV: linalg.pooling_nhwc_sum
// FORCED-NV-SAME: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 1, vector = 4, work_items = 512>
// POCL-LABEL: func.func @pools
// POCL: tcc.strategy = #tcc.window<workgroup_size = 64, columns = 4, vector = 16, work_items = 100352>
func.func @pools(%x: tensor<32x112x112x64xf32>, %a: tensor<1x14x14x256xf32>, %g: tensor<1x7x7x2048xf32>) -> (tensor<32x56x56x64xf32>, tensor<1x14x14x256xf32>, tensor<1x1x1x2048xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %m = tosa.max_pool2d %x {kernel = array<i64: 3, 3>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 2, 2>} : (tensor<32x112x112x64xf32>) -> tensor<32x56x56x64xf32>
  %p = tosa.avg_pool2d %a, %zp, %zp {acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x14x14x256xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x14x14x256xf32>
  %q = tosa.avg_pool2d %g, %zp, %zp {acc_type = f32, kernel = array<i64: 7, 7>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x7x7x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1x2048xf32>
  return %m, %p, %q : tensor<32x56x56x64xf32>, tensor<1x14x14x256xf32>, tensor<1x1x1x2048xf32>
}
