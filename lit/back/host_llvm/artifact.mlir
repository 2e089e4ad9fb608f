// The host back end's self-description (`tcc compile --compile-from=gpu
// --emit=llvm-ir`): `tcc_artifact_v1()` returns the tcc_artifact table —
// ABI version 3, OpenCL C source, the kernels' launch records (none
// here: tcc_kernel_desc records are checked in lit/phases/codegen.mlir),
// one tcc_function_desc per
// host function (name, entry, input and output counts and tensors, arena)
// and one tcc_constant_desc per memref.global in module order, 64-byte
// aligned. Tensors carry their tcc.io_names name, dtype code (i64 3,
// bool 5 one byte each, f16 1, i8 4, f32 0), rank and shape.
// RUN: tcc compile %s --compile-from=gpu --emit=llvm-ir | FileCheck %s
// With --name=m every exported symbol is prefixed, and the optional
// getters exist (returning NULL) so that one declaration links any model.
// RUN: tcc compile %s --compile-from=gpu --emit=llvm-ir --name=m | FileCheck %s --check-prefix=NAMED

// CHECK: @tcc.kernels = private constant [0 x { ptr, i64, i32, i32, i32, i32, i32, i32, ptr }] zeroinitializer
// CHECK: @tcc.first.inputs.shape.0 = private constant [2 x i64] [i64 2, i64 3]
// CHECK: @[[IDS:.str.[0-9]+]] = private constant [4 x i8] c"ids\00"
// CHECK: @tcc.first.inputs = private constant [2 x { ptr, i32, i32, ptr }] [{ ptr, i32, i32, ptr } { ptr @[[IDS]], i32 3, i32 2, ptr @tcc.first.inputs.shape.0 }, { ptr, i32, i32, ptr } { ptr @{{.str.[0-9]+}}, i32 5, i32 1, ptr @tcc.first.inputs.shape.1 }]
// CHECK: @tcc.first.outputs = private constant [2 x { ptr, i32, i32, ptr }] [{ ptr, i32, i32, ptr } { ptr @{{.str.[0-9]+}}, i32 1, i32 1, ptr @tcc.first.outputs.shape.0 }, { ptr, i32, i32, ptr } { ptr @{{.str.[0-9]+}}, i32 4, i32 1, ptr @tcc.first.outputs.shape.1 }]
// CHECK: @tcc.second.inputs = private constant [0 x { ptr, i32, i32, ptr }] zeroinitializer
// CHECK: @tcc.second.outputs = private constant [1 x { ptr, i32, i32, ptr }] [{ ptr, i32, i32, ptr } { ptr @{{.str.[0-9]+}}, i32 0, i32 0, ptr @tcc.second.outputs.shape.0 }]
// CHECK: @tcc.functions = private constant [2 x { ptr, ptr, i32, i32, ptr, ptr, i64, i64 }] [{ ptr, ptr, i32, i32, ptr, ptr, i64, i64 } { ptr @{{.str.[0-9]+}}, ptr @tcc_entry_first, i32 2, i32 2, ptr @tcc.first.inputs, ptr @tcc.first.outputs, i64 0, i64 0 }, { ptr, ptr, i32, i32, ptr, ptr, i64, i64 } { ptr @{{.str.[0-9]+}}, ptr @tcc_entry_second, i32 0, i32 1, ptr @tcc.second.inputs, ptr @tcc.second.outputs, i64 0, i64 0 }]
// CHECK: @tcc.constant.0 = private constant [8 x i8] c"\07\00\00\00\09\00\00\00", align 64
// CHECK: @tcc.constant.1 = private constant [3 x i8] c"\01\00\01", align 64
// CHECK: @tcc_constants_v1 = {{.*}}constant [2 x { ptr, i64 }] [{ ptr, i64 } { ptr @tcc.constant.0, i64 8 }, { ptr, i64 } { ptr @tcc.constant.1, i64 3 }]
// CHECK: @tcc.artifact = private constant { i32, i32, ptr, i64, ptr, i32, i32, ptr, ptr, i32, i32, ptr, ptr } { i32 3, i32 0, ptr @.str.0, i64 {{[0-9]+}}, ptr @.str.1, i32 0, i32 2, ptr @tcc.kernels, ptr @tcc.functions, i32 2, i32 0, ptr @tcc_constants_v1, ptr @.str.2 }
// CHECK: @tcc_description_v1 = {{.*}}constant [{{[0-9]+}} x i8] c"TCCDESC\01
// CHECK: define internal i32 @tcc_entry_first(
// The constants are fetched by their index, in module order.
// CHECK: call i32 %{{[0-9]+}}(ptr %{{[0-9]+}}, i32 0, ptr
// CHECK: call i32 %{{[0-9]+}}(ptr %{{[0-9]+}}, i32 1, ptr
// CHECK: define internal {{.*}}i32 @tcc_entry_second(
// CHECK: define {{.*}}ptr @tcc_artifact_v1()
// CHECK-NEXT: entry:
// CHECK-NEXT: ret ptr @tcc.artifact
// CHECK-NOT: tcc_kernel_ptx_v1

// NAMED-DAG: define {{.*}}ptr @m_tcc_artifact_v1()
// NAMED-DAG: define {{.*}}ptr @m_tcc_metadata_v1()
// NAMED-DAG: define {{.*}}ptr @m_tcc_kernel_ptx_v1()
// NAMED-DAG: @m_tcc_description_v1 = {{.*}}constant
// NAMED-DAG: @m_tcc_constants_v1 = {{.*}}constant
// NAMED-NOT: define {{.*}} @tcc_artifact_v1()
module attributes {gpu.container_module} {
  memref.global "private" constant @small : memref<2xi32> = dense<[7, 9]>
  memref.global "private" constant @flags : memref<3xi1> = dense<[true, false, true]>
  func.func @first(%ids: memref<2x3xi64>, %mask: memref<4xi1>, %half: memref<5xf16>, %bytes: memref<1xi8>) attributes {tcc.io_names = ["ids", "mask", "half", "bytes"], tcc.num_outputs = 2 : i64} {
    %a = memref.get_global @small : memref<2xi32>
    %b = memref.get_global @flags : memref<3xi1>
    return
  }
  func.func @second(%x: memref<f32>) attributes {tcc.num_outputs = 1 : i64} {
    return
  }
  gpu.module @tcc_kernels {
  }
}
