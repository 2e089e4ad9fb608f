// The host back end on a hand-written gpu-phase module (`tcc compile
// --compile-from=gpu --emit=llvm-ir`, optimized LLVM IR): each host
// function becomes `tcc_entry_<name>(rt, inputs, outputs)`, which loads
// `ctx` and each callback from the runtime table (tcc_runtime_api: ctx at
// byte 8, alloc 16, release 24, constant 32, launch 40, copy 48, view 56),
// checks every status and returns the first failure.
// RUN: tcc compile %s --compile-from=gpu --emit=llvm-ir | FileCheck %s

// @model: a constant by index, an arena view (offset 256, 16 bytes), a
// launch of kernel 0 over 4x1x1 work-items in groups of 4x1x1 with its
// three buffers as tcc_args {kind 0, reserved 0, pointer}, and a copy of
// the view into the output.
// CHECK-LABEL: define internal i32 @tcc_entry_model(
// CHECK-SAME: ptr {{[^%]*}}%[[RT:[0-9]+]], ptr {{[^%]*}}%[[IN:[0-9]+]], ptr {{[^%]*}}%[[OUT:[0-9]+]])
// CHECK: %[[CTXP:[0-9]+]] = getelementptr i8, ptr %[[RT]], i64 8
// CHECK: %[[CTX:[0-9]+]] = load ptr, ptr %[[CTXP]]
// CHECK: %[[X:[0-9]+]] = load ptr, ptr %[[IN]]
// CHECK: %[[Y:[0-9]+]] = load ptr, ptr %[[OUT]]
// CHECK: %[[CSLOT:[0-9]+]] = alloca ptr
// CHECK: getelementptr i8, ptr %[[RT]], i64 32
// CHECK: %[[CS:[0-9]+]] = call i32 %{{[0-9]+}}(ptr %[[CTX]], i32 0, ptr nonnull %[[CSLOT]])
// CHECK: icmp eq i32 %[[CS]], 0
// CHECK: %[[BIAS:[0-9]+]] = load ptr, ptr %[[CSLOT]]
// CHECK: %[[VSLOT:[0-9]+]] = alloca ptr
// CHECK: getelementptr i8, ptr %[[RT]], i64 56
// CHECK: call i32 %{{[0-9]+}}(ptr %[[CTX]], i64 256, i64 16, ptr nonnull %[[VSLOT]])
// CHECK: %[[VIEW:[0-9]+]] = load ptr, ptr %[[VSLOT]]
// CHECK: %[[GLOBAL:[0-9]+]] = alloca [3 x i64]
// CHECK: %[[LOCAL:[0-9]+]] = alloca [3 x i64]
// CHECK: store i64 4, ptr %[[GLOBAL]]
// CHECK: store i64 4, ptr %[[LOCAL]]
// CHECK: %[[ARGS:[0-9]+]] = alloca [3 x { i32, i32, i64 }]
// CHECK: store i32 0, ptr %[[ARGS]]
// CHECK: %[[A0:[0-9]+]] = getelementptr inbounds nuw i8, ptr %[[ARGS]], i64 8
// CHECK: store ptr %[[X]], ptr %[[A0]]
// CHECK: %[[A1:[0-9]+]] = getelementptr inbounds nuw i8, ptr %[[ARGS]], i64 24
// CHECK: store ptr %[[BIAS]], ptr %[[A1]]
// CHECK: %[[A2:[0-9]+]] = getelementptr inbounds nuw i8, ptr %[[ARGS]], i64 40
// CHECK: store ptr %[[VIEW]], ptr %[[A2]]
// CHECK: getelementptr i8, ptr %[[RT]], i64 40
// CHECK: call i32 %{{[0-9]+}}(ptr %[[CTX]], i32 0, i32 3, ptr nonnull %[[GLOBAL]], ptr nonnull %[[LOCAL]], i32 3, ptr nonnull %[[ARGS]])
// CHECK: getelementptr i8, ptr %[[RT]], i64 48
// CHECK: %[[COPIED:[0-9]+]] = call i32 %{{[0-9]+}}(ptr %[[CTX]], ptr %[[Y]], i64 0, ptr %[[VIEW]], i64 0, i64 16)
// CHECK: phi i32 [ %[[COPIED]], %{{[0-9]+}} ], [ %{{[0-9]+}}, %{{[0-9]+}} ], [ %{{[0-9]+}}, %{{[0-9]+}} ], [ %[[CS]], %{{[0-9]+}} ]
// CHECK-NOT: getelementptr i8, ptr %[[RT]], i64 16
// CHECK: ret i32

// @scratch: an intermediate buffer from alloc (16 bytes), released once
// its last use (the second copy) has been enqueued, on the way to
// returning 0.
// CHECK-LABEL: define internal i32 @tcc_entry_scratch(
// CHECK-SAME: ptr {{[^%]*}}%[[RT:[0-9]+]],
// CHECK: getelementptr i8, ptr %[[RT]], i64 16
// CHECK: call i32 %{{[0-9]+}}(ptr %[[CTX:[0-9]+]], i64 16, ptr nonnull %[[SLOT:[0-9]+]])
// CHECK: %[[T:[0-9]+]] = load ptr, ptr %[[SLOT]]
// CHECK: call i32 %{{[0-9]+}}(ptr %[[CTX]], ptr %[[T]], i64 0, ptr %{{[0-9]+}}, i64 0, i64 16)
// CHECK: call i32 %{{[0-9]+}}(ptr %[[CTX]], ptr %{{[0-9]+}}, i64 0, ptr %[[T]], i64 0, i64 16)
// CHECK: phi i32 [ 0, %[[DONE:[0-9]+]] ]
// CHECK: [[DONE]]:
// CHECK-NEXT: getelementptr i8, ptr %[[RT]], i64 24
// CHECK-NEXT: %[[RELEASE:[0-9]+]] = load ptr
// CHECK-NEXT: call void %[[RELEASE]](ptr %[[CTX]], ptr %[[T]])
module attributes {gpu.container_module} {
  memref.global "private" constant @bias : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> {alignment = 64 : i64}
  func.func @model(%x: memref<4xf32>, %y: memref<4xf32>) attributes {tcc.arena_alignment = 256 : i64, tcc.arena_bytes = 512 : i64, tcc.io_names = ["x", "y"], tcc.num_outputs = 1 : i64} {
    %arena = memref.alloc() {alignment = 256 : i64, tcc.arena} : memref<512xi8>
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %b = memref.get_global @bias : memref<4xf32>
    %t = memref.view %arena[%c256][] : memref<512xi8> to memref<4xf32>
    gpu.launch_func @tcc_kernels::@add blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>, %b : memref<4xf32>, %t : memref<4xf32>)
    memref.copy %t, %y : memref<4xf32> to memref<4xf32>
    return
  }
  func.func @scratch(%x: memref<4xf32>, %y: memref<4xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %t = memref.alloc() : memref<4xf32>
    memref.copy %x, %t : memref<4xf32> to memref<4xf32>
    memref.copy %t, %y : memref<4xf32> to memref<4xf32>
    return
  }
  gpu.module @tcc_kernels {
    gpu.func @add(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.global_id x
      %va = memref.load %a[%i] : memref<4xf32>
      %vb = memref.load %b[%i] : memref<4xf32>
      %s = arith.addf %va, %vb : f32
      memref.store %s, %c[%i] : memref<4xf32>
      gpu.return
    }
  }
}
