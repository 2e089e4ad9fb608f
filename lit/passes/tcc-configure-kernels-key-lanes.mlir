// tcc-configure-kernels gives a flash attention of at most 4 query rows (a
// decode step) on nvidia the key-parallel form: key_lanes work-items per
// row (64, 32 or 16: the most whose partial accumulators fit 32 KiB), the
// work-group's block_q its rows. An attention of at least 16 rows whose
// 64-row work-groups would leave SMs without one (a transformer at batch
// 1) takes it too, in work-groups of 16 rows of 4 lanes. Other row
// counts, other targets, and fp16/bf16 (whose tensor-core body is faster
// there) keep 64-row work-groups.
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=nvidia})' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels{target=generic})' | FileCheck %s --check-prefix=GENERIC --implicit-check-not=key_lanes
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(tcc-attach-target{target=nvidia-sm90 precision=fp16},tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels)' | FileCheck %s --check-prefix=HALF --implicit-check-not=key_lanes

// One row over a cache of 256 (GPT-2 small's one-token step).
// CHECK-LABEL: func.func @step
// CHECK: tcc.strategy = #tcc.attention<block_q = 1, block_k = 64, key_lanes = 64>
// GENERIC-LABEL: func.func @step
// GENERIC: tcc.strategy = #tcc.attention<block_q = 64,
// HALF-LABEL: func.func @step
// HALF: tcc.strategy = #tcc.attention<block_q = 64,
func.func @step(%q: tensor<1x12x1x64xf32>, %k: tensor<1x12x256x64xf32>, %v: tensor<1x12x256x64xf32>) -> tensor<1x12x1x64xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.125 : tensor<1x12x1x64xf32>, tensor<1x12x256x64xf32>, tensor<1x12x256x64xf32> -> tensor<1x12x1x64xf32>
  return %o : tensor<1x12x1x64xf32>
}

// -----

// Four rows: 16 lanes each (4 x 32 x 68 floats would not fit).
// CHECK-LABEL: func.func @four_rows
// CHECK: tcc.strategy = #tcc.attention<block_q = 4, block_k = 64, key_lanes = 16>
func.func @four_rows(%q: tensor<1x12x4x64xf32>, %k: tensor<1x12x256x64xf32>, %v: tensor<1x12x256x64xf32>) -> tensor<1x12x4x64xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.125 : tensor<1x12x4x64xf32>, tensor<1x12x256x64xf32>, tensor<1x12x256x64xf32> -> tensor<1x12x4x64xf32>
  return %o : tensor<1x12x4x64xf32>
}

// -----

// Five rows: the 64-row work-groups.
// CHECK-LABEL: func.func @five_rows
// CHECK: tcc.strategy = #tcc.attention<block_q = 64, block_k = 64>
func.func @five_rows(%q: tensor<1x12x5x64xf32>, %k: tensor<1x12x256x64xf32>, %v: tensor<1x12x256x64xf32>) -> tensor<1x12x5x64xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.125 : tensor<1x12x5x64xf32>, tensor<1x12x256x64xf32>, tensor<1x12x256x64xf32> -> tensor<1x12x5x64xf32>
  return %o : tensor<1x12x5x64xf32>
}

// -----

// ViT-B/16 at batch 1: 12 heads of 197 rows would make 48 work-groups of
// 64 rows: 16 rows of 4 lanes instead.
// CHECK-LABEL: func.func @few_groups
// CHECK: tcc.strategy = #tcc.attention<block_q = 16, block_k = 64, key_lanes = 4>
// GENERIC-LABEL: func.func @few_groups
// GENERIC: tcc.strategy = #tcc.attention<block_q = 64,
// HALF-LABEL: func.func @few_groups
// HALF: tcc.strategy = #tcc.attention<block_q = 64,
func.func @few_groups(%q: tensor<1x12x197x64xf32>, %k: tensor<1x12x197x64xf32>, %v: tensor<1x12x197x64xf32>) -> tensor<1x12x197x64xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.125 : tensor<1x12x197x64xf32>, tensor<1x12x197x64xf32>, tensor<1x12x197x64xf32> -> tensor<1x12x197x64xf32>
  return %o : tensor<1x12x197x64xf32>
}

// -----

// BERT-base at batch 32 (384 heads of 128 rows: 768 work-groups): 64 rows.
// CHECK-LABEL: func.func @many_groups
// CHECK: tcc.strategy = #tcc.attention<block_q = 64, block_k = 64>
func.func @many_groups(%q: tensor<32x12x128x64xf32>, %k: tensor<32x12x128x64xf32>, %v: tensor<32x12x128x64xf32>) -> tensor<32x12x128x64xf32> {
  %o = tcc.attention %q, %k, %v scale = 0.125 : tensor<32x12x128x64xf32>, tensor<32x12x128x64xf32>, tensor<32x12x128x64xf32> -> tensor<32x12x128x64xf32>
  return %o : tensor<32x12x128x64xf32>
}
