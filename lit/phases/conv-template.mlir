// Convolutions in the implicit-GEMM template. Over a multiple of 4 input
// channels, each A element staged is a float4 of 4 neighbouring channels
// of one pixel: one set of window coordinates and bounds checks and one
// aligned float4 load (the padded 3x3 @padded, the unpadded 1x1
// @pointwise; `Buffer::load_vector_aligned`: one 16-byte load where
// libclc's vload4 reads four floats one by one). With 6
// channels (@odd_channels) A stays one float per element. The filter is
// read as a plain K x N matrix.
// RUN: tcc compile %s --emit=opencl-c --target=nvidia -o %t && cat %t/*.cl | FileCheck %s
// On CPUs (pocl-cpu, the register-blocked form) K is walked as the
// window's loops: tap row, tap column, channel. A convolution over 8 or
// more channels reads a padded copy of its input (no bounds checks); over
// fewer (an image's first), its pad folds: it checks its rows' bounds once
// per tap, then runs the channel loop with `tcc_inside` true (the pad
// select folds away) where all rows are inside the image, false
// elsewhere; the 1x1 one has no check.
// RUN: tcc compile %s --emit=opencl-c --target=pocl-cpu-avx512 -o %t.cpu && cat %t.cpu/*.cl | FileCheck %s --check-prefix=CPU

// CHECK-LABEL: void conv_{{[0-9]+}}(
// CHECK: /* tile {{.*}} M=800 N=96 K=576 batch=1 */
// CHECK: float4 fetch_a[
// CHECK: float4 element = (float4)(0.0f);
// CHECK: if (i < 800 && k < 576) {
// CHECK: const float4 [[V:v[0-9]+]] = (*(__global const float4*)(a{{[0-9]+}} + {{.*}} * 64 + (k % 64)));
// CHECK-NEXT: const float4 [[A:v[0-9]+]] = (v{{[0-9]+}} ? [[V]] : (float4)(0e0f));
// CHECK: element = [[A]];
// The contiguous HWCF filter is B as a K x N row-major matrix, read as
// float4 along N.
// CHECK: fetch_b[r] = (k < 576 && j < 96) ? vload4(0, a{{[0-9]+}} + k * 96 + j) : (float4)(0.0f);
// CHECK: tile_a[kk][mm] = fetch_a[r].x; tile_a[kk + 1][mm] = fetch_a[r].y; tile_a[kk + 2][mm] = fetch_a[r].z; tile_a[kk + 3][mm] = fetch_a[r].w;
// CPU-LABEL: void conv_{{[0-9]+}}(
// CPU: /* register-blocked: {{.*}} M=800 N=96 K=576 batch=1 */
// CPU-NOT: tcc_all_inside
// CPU: for (tcc_index k_ky = 0; k_ky < 3; ++k_ky)
// CPU-NEXT: for (tcc_index k_kx = 0; k_kx < 3; ++k_kx) {
// CPU-NEXT: for (tcc_index k_ch = 0; k_ch < 64; k_ch += 1) {
// CPU-NOT: tcc_all_inside
// CPU: vload16
func.func @padded(%x: tensor<2x20x20x64xf32>, %w: tensor<96x3x3x64xf32>) -> tensor<2x20x20x96xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %b = "tosa.const"() <{values = dense<0.1> : tensor<96xf32>}> : () -> tensor<96xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x20x20x64xf32>, tensor<96x3x3x64xf32>, tensor<96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x20x20x96xf32>
  return %c : tensor<2x20x20x96xf32>
}

// CHECK-LABEL: void conv_{{[0-9]+}}(
// CHECK: /* tile {{.*}} M=800 N=32 K=36 batch=1 */
// CPU-LABEL: void conv_{{[0-9]+}}(
// CPU: /* register-blocked: {{.*}} M=800 N=32 K=36 batch=1 */
// CPU: for (tcc_index k_ky = 0; k_ky < 3; ++k_ky)
// CPU-NEXT: for (tcc_index k_kx = 0; k_kx < 3; ++k_kx) {
// CPU-NEXT: bool tcc_all_inside = true;
// CPU: const bool tcc_inside = false;
// CPU-NEXT: const tcc_index i = i0, k_ch = 0, k = (k_ky * 3 + k_kx) * 4;
// CPU: const float [[X:v[0-9]+]] = a{{[0-9]+}}[{{.*}} * 4 + k_ch];
// CPU-NEXT: const float v{{[0-9]+}} = ((tcc_inside | [[INSIDE:v[0-9]+]]) ? [[X]] : 0e0f);
// CPU-NEXT: tcc_all_inside = tcc_all_inside && [[INSIDE]];
// CPU: if (tcc_all_inside) {
// CPU-NEXT: const bool tcc_inside = true;
// CPU-NEXT: for (tcc_index k_ch = 0; k_ch < 4; k_ch += 1) {
// CPU-NEXT: const tcc_index k_step = (k_ky * 3 + k_kx) * 4 + k_ch;
// CPU: } else {
// CPU-NEXT: const bool tcc_inside = false;
// CPU-NEXT: for (tcc_index k_ch = 0; k_ch < 4; k_ch += 1) {
func.func @padded_few_channels(%x: tensor<2x20x20x4xf32>, %w: tensor<32x3x3x4xf32>) -> tensor<2x20x20x32xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %b = "tosa.const"() <{values = dense<0.1> : tensor<32xf32>}> : () -> tensor<32xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x20x20x4xf32>, tensor<32x3x3x4xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x20x20x32xf32>
  return %c : tensor<2x20x20x32xf32>
}

// CHECK-LABEL: void conv_{{[0-9]+}}(
// CHECK: /* tile {{.*}} M=800 N=64 K=128 batch=1 */
// CHECK: float4 element = (float4)(0.0f);
// CHECK-NEXT: if (i < 800 && k < 128) {
// CHECK-NEXT: element = (*(__global const float4*)(a{{[0-9]+}} + (i / 400) * 51200 + {{.*}} * 128 + (k % 128)));
// CPU-LABEL: void conv_{{[0-9]+}}(
// CPU: /* register-blocked: {{.*}} M=800 N=64 K=128 batch=1 */
// CPU: for (tcc_index k_ky = 0; k_ky < 1; ++k_ky)
// CPU-NEXT: for (tcc_index k_kx = 0; k_kx < 1; ++k_kx) {
// CPU-NEXT: for (tcc_index k_ch = 0; k_ch < 128; k_ch += 1) {
// CPU-NOT: tcc_inside
// CPU: ra0 = a{{[0-9]+}}[{{.*}} * 128 + k_ch];
func.func @pointwise(%x: tensor<2x20x20x128xf32>, %w: tensor<64x1x1x128xf32>) -> tensor<2x20x20x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %b = "tosa.const"() <{values = dense<0.1> : tensor<64xf32>}> : () -> tensor<64xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x20x20x128xf32>, tensor<64x1x1x128xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x20x20x64xf32>
  return %c : tensor<2x20x20x64xf32>
}

// CHECK-LABEL: void conv_{{[0-9]+}}(
// CHECK: /* tile {{.*}} K=54 batch=1 */
// CHECK: float fetch_a[
// CHECK: float element = 0.0f;
// CHECK-NOT: vload4(0, a{{[0-9]+}} + {{.*}}(k % 6)
// CHECK: tile_a[kk][mm] = fetch_a[r];
func.func @odd_channels(%x: tensor<2x20x20x6xf32>, %w: tensor<64x3x3x6xf32>) -> tensor<2x20x20x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %b = "tosa.const"() <{values = dense<0.1> : tensor<64xf32>}> : () -> tensor<64xf32>
  %c = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x20x20x6xf32>, tensor<64x3x3x6xf32>, tensor<64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x20x20x64xf32>
  return %c : tensor<2x20x20x64xf32>
}
