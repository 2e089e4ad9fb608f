// tcc-fold-tied-broadcasts drops the run-time broadcast guards that
// tosa-to-linalg puts around an elementwise op whose two operands are
// dynamic along one dimension, where the module declares one symbolic
// dimension (so the extents are equal): the add then reads its inputs
// directly and no linalg op is left outside it. With two declared
// dimensions, or without any, the guards stay.
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tosa-to-linalg),tcc-fold-tied-broadcasts,canonicalize)' | FileCheck %s

// CHECK-LABEL: func.func @tied
// CHECK-SAME: (%[[A:.*]]: tensor<?x16xf32>, %[[B:.*]]: tensor<?x16xf32>)
// CHECK-NOT: scf.if
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<?x16xf32>, tensor<?x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @tied(%a: tensor<?x16xf32>, %b: tensor<?x16xf32>) -> tensor<?x16xf32> {
    %0 = tosa.add %a, %b : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
    return %0 : tensor<?x16xf32>
  }
}

// -----

// A static operand broadcast along the batch needs no guard to begin with.
// CHECK-LABEL: func.func @one_dynamic
// CHECK-NOT: scf.if
// CHECK: linalg.generic
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
  func.func @one_dynamic(%a: tensor<?x16xf32>, %b: tensor<1x16xf32>) -> tensor<?x16xf32> {
    %0 = tosa.add %a, %b : (tensor<?x16xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
    return %0 : tensor<?x16xf32>
  }
}

// -----

// Two declared dimensions: two extents that meet in one elementwise op
// are the same product of them at every point of the ranges (a batch and
// a sequence would differ where neither is 1); folded as well.
// CHECK-LABEL: func.func @two_dims
// CHECK-NOT: scf.if
// CHECK: linalg.generic
module attributes {tcc.dims = #tcc.dims<names = ["batch", "seq"], min = [1, 1], max = [64, 128]>} {
  func.func @two_dims(%a: tensor<?x16xf32>, %b: tensor<?x16xf32>) -> tensor<?x16xf32> {
    %0 = tosa.add %a, %b : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
    return %0 : tensor<?x16xf32>
  }
}

// -----

// No declared dimension: kept.
// CHECK-LABEL: func.func @undeclared
// CHECK: scf.if
func.func @undeclared(%a: tensor<?x16xf32>, %b: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = tosa.add %a, %b : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
