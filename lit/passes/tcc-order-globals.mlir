// tcc-order-globals: the module's memref.globals move to its top in the
// order the functions first use them (functions in module order, ops in
// pre-order; unused globals after, in their old order), and the globals
// bufferization named (`__constant_<shape>[_<n>]`) are renamed by that
// order, uses included; other names stay.
// RUN: tcc-opt %s --tcc-order-globals | FileCheck %s

// CHECK: memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<3.000000e+00>
// CHECK-NEXT: memref.global "private" constant @weights : memref<2xf32> = dense<4.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_2xf32_0 : memref<2xf32> = dense<1.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_4xi32 : memref<4xi32> = dense<7>
// CHECK-NEXT: memref.global "private" constant @__constant_2xf32_1 : memref<2xf32> = dense<2.000000e+00>
// CHECK-LABEL: func.func @first(
// CHECK: memref.get_global @__constant_2xf32 : memref<2xf32>
// CHECK: memref.get_global @weights : memref<2xf32>
// CHECK: memref.get_global @__constant_2xf32_0 : memref<2xf32>
// CHECK-LABEL: func.func @second(
// CHECK: memref.get_global @__constant_4xi32 : memref<4xi32>
// CHECK: memref.get_global @__constant_2xf32 : memref<2xf32>
module {
  memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<1.0>
  memref.global "private" constant @__constant_2xf32_0 : memref<2xf32> = dense<2.0>
  memref.global "private" constant @__constant_2xf32_1 : memref<2xf32> = dense<3.0>
  memref.global "private" constant @weights : memref<2xf32> = dense<4.0>
  func.func @first() {
    %a = memref.get_global @__constant_2xf32_1 : memref<2xf32>
    %b = memref.get_global @weights : memref<2xf32>
    %c = memref.get_global @__constant_2xf32 : memref<2xf32>
    return
  }
  memref.global "private" constant @__constant_4xi32 : memref<4xi32> = dense<7>
  func.func @second() {
    %d = memref.get_global @__constant_4xi32 : memref<4xi32>
    %e = memref.get_global @__constant_2xf32_1 : memref<2xf32>
    return
  }
}
