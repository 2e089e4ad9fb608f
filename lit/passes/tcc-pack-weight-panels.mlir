// tcc-pack-weight-panels: on pocl-cpu, the constant filter of a
// convolution (and a matmul's constant B) on the register-blocked GEMM is packed into panels of 16
// output channels (F/16 x KH x KW x C x 16, read through
// (d3 floordiv 16, d4, d5, d6, d3 mod 16)), so that the kernel reads a
// block's columns in order along k. A named convolution first takes the
// tcc.conv form (its kernel attributes kept). Output channels that are
// not whole panels are padded with zero ones. Filters that are not
// constants and other targets are left alone.
// Blocks whose columns are not whole panels (the 24-wide blocks of both
// CPU targets where N is 24: `config::pocl_cpu`) read B as stored.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx2},tcc-pack-weight-panels)' | FileCheck %s --check-prefixes=CHECK,AVX2
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels{target=pocl-cpu-avx512},tcc-pack-weight-panels)' | FileCheck %s --check-prefixes=CHECK,AVX512
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-fold-conv-inputs,tcc-form-dispatches,tcc-configure-kernels{target=nvidia},tcc-pack-weight-panels)' | FileCheck %s --check-prefix=NVIDIA

// NVIDIA-NOT: floordiv

// The filter W[f][0][0][c] = 100 f + c (TOSA's OHWI): panel p holds
// channels 16 p .. 16 p + 15, each input channel's 16 in a row.
// CHECK-DAG: #[[PANELS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3 floordiv 16, d4, d5, d6, d3 mod 16)>
// CHECK-DAG: #[[MM_PANELS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2 floordiv 16, d3, d2 mod 16)>
// CHECK-LABEL: func.func @named_1x1
// CHECK: %[[W:.+]] = arith.constant dense<{{\[\[\[\[\[}}0.000000e+00, 1.000000e+02, {{.*}}, 1.500000e+03], [1.000000e+00, 1.010000e+02, {{.*}}, 1.501000e+03]]]], {{\[\[\[\[}}1.600000e+03, {{.*}}, 3.100000e+03], [1.601000e+03, {{.*}}, 3.101000e+03]]]]]> : tensor<2x1x1x2x16xf32>
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, {{.*}}> ins(%[[W]] : tensor<2x1x1x2x16xf32>) {{.*}} indexing_maps = [#[[PANELS]], #{{.+}}]
// CHECK-SAME: attributes {tcc.kind = "convolution", tcc.strategy = #tcc.gemm<{{.*}} n = 32, k = 2>
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
// CHECK: return
func.func @named_1x1(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x32xf32> {
  %w = "tosa.const"() <{values = dense<[[[[0.0, 1.0]]], [[[100.0, 101.0]]], [[[200.0, 201.0]]], [[[300.0, 301.0]]], [[[400.0, 401.0]]], [[[500.0, 501.0]]], [[[600.0, 601.0]]], [[[700.0, 701.0]]], [[[800.0, 801.0]]], [[[900.0, 901.0]]], [[[1000.0, 1001.0]]], [[[1100.0, 1101.0]]], [[[1200.0, 1201.0]]], [[[1300.0, 1301.0]]], [[[1400.0, 1401.0]]], [[[1500.0, 1501.0]]], [[[1600.0, 1601.0]]], [[[1700.0, 1701.0]]], [[[1800.0, 1801.0]]], [[[1900.0, 1901.0]]], [[[2000.0, 2001.0]]], [[[2100.0, 2101.0]]], [[[2200.0, 2201.0]]], [[[2300.0, 2301.0]]], [[[2400.0, 2401.0]]], [[[2500.0, 2501.0]]], [[[2600.0, 2601.0]]], [[[2700.0, 2701.0]]], [[[2800.0, 2801.0]]], [[[2900.0, 2901.0]]], [[[3000.0, 3001.0]]], [[[3100.0, 3101.0]]]]> : tensor<32x1x1x2xf32>}> : () -> tensor<32x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<32xf32>}> : () -> tensor<32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<32x1x1x2xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x32xf32>
  return %c : tensor<1x4x4x32xf32>
}

// A padded 3x3 convolution, already a tcc.conv (tcc-fold-conv-inputs).
// CHECK-LABEL: func.func @padded_3x3
// CHECK: %[[W:.+]] = arith.constant dense<2.500000e-01> : tensor<1x3x3x4x16xf32>
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, {{.*}}> ins(%[[W]] : tensor<1x3x3x4x16xf32>) {{.*}} indexing_maps = [#[[PANELS]], #{{.+}}]
func.func @padded_3x3(%x: tensor<1x6x6x4xf32>) -> tensor<1x6x6x16xf32> {
  %w = "tosa.const"() <{values = dense<0.25> : tensor<16x3x3x4xf32>}> : () -> tensor<16x3x3x4xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<16xf32>}> : () -> tensor<16xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x4xf32>, tensor<16x3x3x4xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x6x6x16xf32>
  return %c : tensor<1x6x6x16xf32>
}

// A filter passed in at run time stays as it is.
// CHECK-LABEL: func.func @argument_filter
// CHECK-NOT: floordiv
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-SAME: tensor<1x1x8x32xf32>
func.func @argument_filter(%x: tensor<1x4x4x8xf32>, %w: tensor<32x1x1x8xf32>) -> tensor<1x4x4x32xf32> {
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<32x1x1x8xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x32xf32>
  return %c : tensor<1x4x4x32xf32>
}

// 40 output channels in 32-wide blocks (AVX-512) or 16-wide ones (AVX2):
// the third panel is padded with 8 zero channels (the GEMM computes them
// and never stores them).
// CHECK-LABEL: func.func @ragged_channels
// CHECK: %[[W:.+]] = arith.constant dense<{{\[\[\[\[\[}}1.000000e+00, {{.*}}, 1.600000e+01]]]], {{\[\[\[\[}}1.700000e+01, {{.*}}, 3.200000e+01]]]], {{\[\[\[\[}}3.300000e+01, {{.*}}, 4.000000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]]]> : tensor<3x1x1x1x16xf32>
// CHECK: tcc.conv<conv_2d_nhwc_hwcf, {{.*}}> ins(%[[W]] : tensor<3x1x1x1x16xf32>) outs(%{{.+}} : tensor<1x4x4x40xf32>) indexing_maps = [#[[PANELS]], #{{.+}}]
func.func @ragged_channels(%x: tensor<1x4x4x1xf32>) -> tensor<1x4x4x40xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]], [[[5.0]]], [[[6.0]]], [[[7.0]]], [[[8.0]]], [[[9.0]]], [[[10.0]]], [[[11.0]]], [[[12.0]]], [[[13.0]]], [[[14.0]]], [[[15.0]]], [[[16.0]]], [[[17.0]]], [[[18.0]]], [[[19.0]]], [[[20.0]]], [[[21.0]]], [[[22.0]]], [[[23.0]]], [[[24.0]]], [[[25.0]]], [[[26.0]]], [[[27.0]]], [[[28.0]]], [[[29.0]]], [[[30.0]]], [[[31.0]]], [[[32.0]]], [[[33.0]]], [[[34.0]]], [[[35.0]]], [[[36.0]]], [[[37.0]]], [[[38.0]]], [[[39.0]]], [[[40.0]]]]> : tensor<40x1x1x1xf32>}> : () -> tensor<40x1x1x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<40xf32>}> : () -> tensor<40xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x1xf32>, tensor<40x1x1x1xf32>, tensor<40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x40xf32>
  return %c : tensor<1x4x4x40xf32>
}

// 24 output channels: blocks 24 wide (AVX2's 4 x 24, AVX-512's 8 x 24: three
// 8-float vectors a row) pad N less than 16-wide ones, and their columns
// are not whole panels, so the filter is read as stored.
// CHECK-LABEL: func.func @narrow_blocks
// CHECK-NOT: floordiv
// AVX2: tcc.strategy = #tcc.gemm<{{.*}}work_m = 4, work_n = 24{{.*}}>
// AVX512: tcc.strategy = #tcc.gemm<{{.*}}work_m = 8, work_n = 24{{.*}}>
// CHECK-NOT: floordiv
// CHECK: return
func.func @narrow_blocks(%x: tensor<1x4x4x1xf32>) -> tensor<1x4x4x24xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<24x1x1x1xf32>}> : () -> tensor<24x1x1x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<24xf32>}> : () -> tensor<24xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x1xf32>, tensor<24x1x1x1xf32>, tensor<24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x24xf32>
  return %c : tensor<1x4x4x24xf32>
}

// Two convolutions reading one filter share its packed form, and the
// plain constant goes.
// CHECK-LABEL: func.func @shared_filter
// CHECK: %[[W:.+]] = arith.constant dense<5.000000e-01> : tensor<2x1x1x2x16xf32>
// CHECK-NOT: arith.constant dense<5.000000e-01> : tensor<
// CHECK: ins(%[[W]] : tensor<2x1x1x2x16xf32>)
// CHECK-NOT: arith.constant dense<5.000000e-01> : tensor<
// CHECK: ins(%[[W]] : tensor<2x1x1x2x16xf32>)
// CHECK: return
func.func @shared_filter(%x: tensor<1x4x4x2xf32>, %y: tensor<1x4x4x2xf32>) -> (tensor<1x4x4x32xf32>, tensor<1x4x4x32xf32>) {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<32x1x1x2xf32>}> : () -> tensor<32x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<32x1x1x2xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x32xf32>
  %d = tosa.conv2d %y, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<32x1x1x2xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x32xf32>
  return %c, %d : tensor<1x4x4x32xf32>, tensor<1x4x4x32xf32>
}

// A matmul's constant B (K x N = 2 x 40, B[k][j] = 100 k + j) is packed
// the same way: 1 x 3 panels x K x 16, the third panel padded with 8
// zero columns, and the batched matmul becomes a generic reading it
// through (d0, d2 floordiv 16, d3, d2 mod 16), its kernel attributes kept.
// CHECK-LABEL: func.func @matmul_weights
// CHECK: %[[B:.+]] = arith.constant dense<{{\[\[\[\[}}0.000000e+00, 1.000000e+00, {{.*}}, 1.500000e+01], [1.000000e+02, {{.*}}, 1.150000e+02]], {{\[\[}}1.600000e+01, {{.*}}, 3.100000e+01], [1.160000e+02, {{.*}}, 1.310000e+02]], {{\[\[}}3.200000e+01, {{.*}}, 3.900000e+01, 0.000000e+00, {{.*}}], [1.320000e+02, {{.*}}, 1.390000e+02, 0.000000e+00, {{.*}}]]]]> : tensor<1x3x2x16xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[MM_PANELS]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}}, %[[B]] : tensor<1x4x2xf32>, tensor<1x3x2x16xf32>) outs(%{{.+}} : tensor<1x4x40xf32>)
// CHECK-SAME: tcc.kind = "matmul", tcc.strategy = #tcc.gemm<{{.*}} n = 40, k = 2>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
func.func @matmul_weights(%x: tensor<1x4x2xf32>) -> tensor<1x4x40xf32> {
  %w = "tosa.const"() <{values = dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0], [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 129.0, 130.0, 131.0, 132.0, 133.0, 134.0, 135.0, 136.0, 137.0, 138.0, 139.0]]]> : tensor<1x2x40xf32>}> : () -> tensor<1x2x40xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x2xf32>, tensor<1x2x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x40xf32>
  return %mm : tensor<1x4x40xf32>
}

// A matmul of two run-time operands stays a named matmul.
// CHECK-LABEL: func.func @matmul_of_arguments
// CHECK-NOT: floordiv
// CHECK: linalg.batch_matmul
func.func @matmul_of_arguments(%x: tensor<1x4x2xf32>, %w: tensor<1x2x32xf32>) -> tensor<1x4x32xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x2xf32>, tensor<1x2x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x32xf32>
  return %mm : tensor<1x4x32xf32>
}
