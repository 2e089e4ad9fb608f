// An int8 convolution whose zero pad was folded into its loads (a
// tcc.conv: i8 input read at clamped coordinates, the i8 zero outside
// it, addi(acc, muli(extsi a, extsi w)) in i32; what tcc-fold-conv-inputs
// makes of tcc-quantize-int8's padded convolutions) takes the GEMM
// template's int8 form: A staged a word (4 channels, a char4 computed by
// the body up to the products) at a time, int accumulators,
// mma.sync.m16n8k32 s8 in the PTX form, and the integer loop in OpenCL C.
// RUN: tcc compile %s --target=nvidia --emit=opencl-c | FileCheck %s
// RUN: tcc compile %s --target=nvidia --emit=ptx | FileCheck %s --check-prefix=PTX

// CHECK: #define TCC_MMA_S8(
// CHECK: on int8 tensor cores
// CHECK: __local char tile_a[{{[0-9]+}}][{{[0-9]+}}][80]
// CHECK: int acc[
// CHECK: const char4 [[V:v[0-9]+]] = vload4(0, a2 +
// CHECK-NEXT: const char4 [[S:v[0-9]+]] = ({{v[0-9]+}} ? [[V]] : (char4)((char)0));
// CHECK-NEXT: word = as_uint([[S]]);
// CHECK: TCC_MMA_S8(acc
// CHECK: const int acc_value = acc_init + acc[wm][wn];
// CHECK: #else
// CHECK: acc[wm][wn] += ra[wm].x * rb[wn].x
// PTX: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
#map = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
module {
  func.func @pad(%arg0: tensor<2x16x16x32xi8>, %arg1: tensor<3x3x32x64xi8>) -> tensor<2x16x16x64xi32> {
    %cst = arith.constant 0 : i8
    %cst32 = arith.constant 0 : i32
    %0 = tensor.empty() : tensor<2x16x16x64xi32>
    %1 = linalg.fill ins(%cst32 : i32) outs(%0 : tensor<2x16x16x64xi32>) -> tensor<2x16x16x64xi32>
    %2 = tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%arg1 : tensor<3x3x32x64xi8>) outs(%1 : tensor<2x16x16x64xi32>) indexing_maps = [#map, #map1] iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction, reduction] {
    ^bb0(%in: i8, %out: i32):
      %3 = linalg.index 0 : index
      %4 = linalg.index 6 : index
      %5 = linalg.index 1 : index
      %6 = linalg.index 4 : index
      %7 = arith.addi %5, %6 : index
      %c1 = arith.constant 1 : index
      %8 = arith.subi %7, %c1 : index
      %c0 = arith.constant 0 : index
      %c15 = arith.constant 15 : index
      %c16 = arith.constant 16 : index
      %9 = arith.cmpi sge, %8, %c0 : index
      %10 = arith.cmpi slt, %8, %c16 : index
      %11 = arith.andi %9, %10 : i1
      %12 = arith.maxsi %8, %c0 : index
      %13 = arith.minsi %12, %c15 : index
      %14 = linalg.index 2 : index
      %15 = linalg.index 5 : index
      %16 = arith.addi %14, %15 : index
      %c1_0 = arith.constant 1 : index
      %17 = arith.subi %16, %c1_0 : index
      %c0_1 = arith.constant 0 : index
      %c15_2 = arith.constant 15 : index
      %c16_3 = arith.constant 16 : index
      %18 = arith.cmpi sge, %17, %c0_1 : index
      %19 = arith.cmpi slt, %17, %c16_3 : index
      %20 = arith.andi %18, %19 : i1
      %21 = arith.andi %11, %20 : i1
      %22 = arith.maxsi %17, %c0_1 : index
      %23 = arith.minsi %22, %c15_2 : index
      %extracted = tensor.extract %arg0[%3, %13, %23, %4] : tensor<2x16x16x32xi8>
      %24 = arith.select %21, %extracted, %cst : i8
      %aw = arith.extsi %24 : i8 to i32
      %ww = arith.extsi %in : i8 to i32
      %25 = arith.muli %aw, %ww : i32
      %26 = arith.addi %out, %25 : i32
      linalg.yield %26 : i32
    } -> tensor<2x16x16x64xi32>
    return %2 : tensor<2x16x16x64xi32>
  }
}

