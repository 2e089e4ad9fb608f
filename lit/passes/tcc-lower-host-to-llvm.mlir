// tcc-lower-host-to-llvm replaces each host function by an LLVM-dialect
// entry `tcc_entry_<name>(rt, inputs, outputs) -> i32` that calls the
// runtime's function table (tcc_runtime_api: ctx at field 2, then alloc,
// release, constant, launch, copy, view at 3..8, the call's shapes at 9)
// and checks every status.
// Host code it cannot translate is an error at the op it cannot translate
// (or at the function, for what the function lacks).
// RUN: tcc-opt %s --split-input-file --tcc-lower-host-to-llvm --verify-diagnostics | FileCheck %s

// Arguments: inputs first, then the tcc.num_outputs outputs, each loaded
// from its table; a copy goes through `copy` (field 7) with byte offsets
// 0 and the source's size, and failure returns the status.
// CHECK-LABEL: llvm.func internal @tcc_entry_copy(
// CHECK-SAME: %[[RT:.*]]: !llvm.ptr, %[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr) -> i32
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[CTXP:.*]] = llvm.getelementptr %[[RT]][0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i32, i32, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)>
// CHECK: %[[CTX:.*]] = llvm.load %[[CTXP]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[XP:.*]] = llvm.getelementptr %[[IN]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[X:.*]] = llvm.load %[[XP]]
// CHECK: %[[YP:.*]] = llvm.getelementptr %[[OUT]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[Y:.*]] = llvm.load %[[YP]]
// CHECK: %[[OFFSET:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(24 : i64) : i64
// CHECK: %[[COPYP:.*]] = llvm.getelementptr %[[RT]][0, 7]
// CHECK: %[[COPY:.*]] = llvm.load %[[COPYP]]
// CHECK: %[[STATUS:.*]] = llvm.call %[[COPY]](%[[CTX]], %[[Y]], %[[OFFSET]], %[[X]], %[[OFFSET]], %[[BYTES]]) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, i64, i64) -> i32
// CHECK: %[[FAILED:.*]] = llvm.icmp "ne" %[[STATUS]], %[[ZERO]] : i32
// CHECK: llvm.cond_br %[[FAILED]], ^[[FAIL:.*]](%[[STATUS]] : i32), ^[[OK:.*]]
// CHECK: ^[[OK]]:
// CHECK-NEXT: llvm.return %[[ZERO]] : i32
// CHECK: ^[[FAIL]](%[[CODE:.*]]: i32):
// CHECK-NEXT: llvm.return %[[CODE]] : i32
// CHECK-NOT: func.func
module {
  func.func @copy(%x: memref<2x3xf32>, %y: memref<2x3xf32>) attributes {tcc.num_outputs = 1 : i64} {
    memref.copy %x, %y : memref<2x3xf32> to memref<2x3xf32>
    return
  }
}

// -----

// A launch: the kernel's number is its place in the gpu.module (@second is
// 1), the global size is grid x block per axis, the buffers go into a
// tcc_arg array ({kind = 0 (buffer), reserved, value}), and `launch`
// (field 6) takes (ctx, kernel, 3 dims, global, local, count, args).
// Index constants become i64 constants.
// CHECK-LABEL: llvm.func internal @tcc_entry_launch(
// CHECK-SAME: %[[RT:[^:]*]]: !llvm.ptr
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[CTX:.*]] = llvm.load
// CHECK: %[[X:.*]] = llvm.load
// CHECK: %[[Y:.*]] = llvm.load
// CHECK: %[[C1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[C4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[C64:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK: %[[GLOBAL:.*]] = llvm.alloca %[[ONE]] x !llvm.array<3 x i64> : (i32) -> !llvm.ptr
// CHECK: %[[LOCAL:.*]] = llvm.alloca %[[ONE]] x !llvm.array<3 x i64> : (i32) -> !llvm.ptr
// CHECK: %[[GX:.*]] = llvm.mul %[[C4]], %[[C64]] : i64
// CHECK: %[[GXP:.*]] = llvm.getelementptr %[[GLOBAL]][0, 0]
// CHECK: llvm.store %[[GX]], %[[GXP]] : i64, !llvm.ptr
// CHECK: %[[LXP:.*]] = llvm.getelementptr %[[LOCAL]][0, 0]
// CHECK: llvm.store %[[C64]], %[[LXP]] : i64, !llvm.ptr
// CHECK: %[[ARGS:.*]] = llvm.alloca %[[ONE]] x !llvm.array<2 x struct<(i32, i32, i64)>> : (i32) -> !llvm.ptr
// CHECK: %[[K0:.*]] = llvm.getelementptr %[[ARGS]][0, 0, 0]
// CHECK: llvm.store %[[ZERO]], %[[K0]] : i32, !llvm.ptr
// CHECK: %[[V0:.*]] = llvm.getelementptr %[[ARGS]][0, 0, 2]
// CHECK: llvm.store %[[X]], %[[V0]] : !llvm.ptr, !llvm.ptr
// CHECK: %[[V1:.*]] = llvm.getelementptr %[[ARGS]][0, 1, 2]
// CHECK: llvm.store %[[Y]], %[[V1]] : !llvm.ptr, !llvm.ptr
// CHECK: %[[KERNEL:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[DIMS:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: %[[COUNT:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: %[[LAUNCHP:.*]] = llvm.getelementptr %[[RT]][0, 6]
// CHECK: %[[LAUNCH:.*]] = llvm.load %[[LAUNCHP]]
// CHECK: llvm.call %[[LAUNCH]](%[[CTX]], %[[KERNEL]], %[[DIMS]], %[[GLOBAL]], %[[LOCAL]], %[[COUNT]], %[[ARGS]]) : !llvm.ptr, (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32
// The kernel module stays for the back end.
// CHECK: gpu.module @kernels
module attributes {gpu.container_module} {
  func.func @launch(%x: memref<256xf32>, %y: memref<256xf32>) attributes {tcc.num_outputs = 1 : i64} {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@second blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<256xf32>, %y : memref<256xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @first(%a: memref<256xf32>) kernel {
      gpu.return
    }
    gpu.func @second(%a: memref<256xf32>, %b: memref<256xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// Constants are numbered in module order of the memref.globals and come
// from `constant` (field 5) through an out-pointer; an intermediate buffer
// comes from `alloc` (field 3, its byte size) and goes back to `release`
// (field 4) right after its last use.
// CHECK-LABEL: llvm.func internal @tcc_entry_buffers(
// CHECK-SAME: %[[RT:[^:]*]]: !llvm.ptr
// CHECK: %[[CTX:.*]] = llvm.load
// CHECK: %[[INDEX:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.ptr : (i32) -> !llvm.ptr
// CHECK: %[[CONSTANTP:.*]] = llvm.getelementptr %[[RT]][0, 5]
// CHECK: %[[CONSTANT:.*]] = llvm.load %[[CONSTANTP]]
// CHECK: llvm.call %[[CONSTANT]](%[[CTX]], %[[INDEX]], %[[SLOT]]) : !llvm.ptr, (!llvm.ptr, i32, !llvm.ptr) -> i32
// CHECK: %[[W:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: %[[TSLOT:.*]] = llvm.alloca
// CHECK: %[[ALLOCP:.*]] = llvm.getelementptr %[[RT]][0, 3]
// CHECK: %[[ALLOC:.*]] = llvm.load %[[ALLOCP]]
// CHECK: llvm.call %[[ALLOC]](%[[CTX]], %[[BYTES]], %[[TSLOT]]) : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK: %[[T:.*]] = llvm.load %[[TSLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call %{{.*}}(%[[CTX]], %{{.*}}, %{{.*}}, %[[W]],
// CHECK: llvm.call %{{.*}}(%[[CTX]], %{{.*}}, %{{.*}}, %[[T]],
// CHECK: %[[RELEASEP:.*]] = llvm.getelementptr %[[RT]][0, 4]
// CHECK: %[[RELEASE:.*]] = llvm.load %[[RELEASEP]]
// CHECK: llvm.call %[[RELEASE]](%[[CTX]], %[[T]]) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
module {
  memref.global "private" constant @first : memref<2xf32> = dense<1.0>
  memref.global "private" constant @weights : memref<4xf32> = dense<2.0>
  func.func @buffers(%y: memref<4xf32>, %z: memref<4xf32>) attributes {tcc.num_outputs = 2 : i64} {
    %w = memref.get_global @weights : memref<4xf32>
    %t = memref.alloc() : memref<4xf32>
    memref.copy %w, %t : memref<4xf32> to memref<4xf32>
    memref.copy %t, %y : memref<4xf32> to memref<4xf32>
    memref.copy %y, %z : memref<4xf32> to memref<4xf32>
    return
  }
}

// -----

// Planned buffers are views of the arena: `view` (field 8) takes the
// offset and the view's byte size; the arena itself is never allocated
// here (the runtime owns it) and views are never released.
// CHECK-LABEL: llvm.func internal @tcc_entry_arena(
// CHECK-SAME: %[[RT:[^:]*]]: !llvm.ptr
// CHECK: %[[CTX:.*]] = llvm.load
// CHECK: %[[OFFSET:.*]] = llvm.mlir.constant(4096 : i64) : i64
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(400 : i64) : i64
// CHECK: %[[SLOT:.*]] = llvm.alloca
// CHECK: %[[VIEWP:.*]] = llvm.getelementptr %[[RT]][0, 8]
// CHECK: %[[VIEW:.*]] = llvm.load %[[VIEWP]]
// CHECK: llvm.call %[[VIEW]](%[[CTX]], %[[OFFSET]], %[[BYTES]], %[[SLOT]]) : !llvm.ptr, (!llvm.ptr, i64, i64, !llvm.ptr) -> i32
// CHECK-NOT: llvm.getelementptr %[[RT]][0, 3]
// CHECK-NOT: llvm.getelementptr %[[RT]][0, 4]
// CHECK: llvm.return
module {
  func.func @arena(%x: memref<100xf32>, %y: memref<100xf32>) attributes {tcc.arena_alignment = 4096 : i64, tcc.arena_bytes = 8192 : i64, tcc.num_outputs = 1 : i64} {
    %arena = memref.alloc() {alignment = 4096 : i64, tcc.arena} : memref<8192xi8>
    %offset = arith.constant 4096 : index
    %a = memref.view %arena[%offset][] : memref<8192xi8> to memref<100xf32>
    memref.copy %x, %a : memref<100xf32> to memref<100xf32>
    memref.copy %a, %y : memref<100xf32> to memref<100xf32>
    return
  }
}

// -----

module {
  func.func @stray_view(%x: memref<4xf32>) attributes {tcc.num_outputs = 0 : i64} {
    %bytes = memref.alloc() : memref<64xi8>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{host views must be views of the function's arena}}
    %v = memref.view %bytes[%c0][] : memref<64xi8> to memref<4xf32>
    return
  }
}

// -----

module {
  func.func @subview(%x: memref<4xf32>) attributes {tcc.num_outputs = 0 : i64} {
    // expected-error @+1 {{the host code generator cannot translate 'memref.subview'}}
    %s = memref.subview %x[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    return
  }
}

// -----

module {
  // expected-error @+1 {{@unnamed lacks tcc.num_outputs: run the input phase first}}
  func.func @unnamed(%x: memref<4xf32>) {
    return
  }
}

// -----

// A function on a symbolic dimension (ABI 4) reads the call's shapes from
// the table's `shapes` (field 9): every input's extents, then every
// output's (x's batch at 0, y's at 2). A `memref.dim` of an argument is a
// load from it; an arena view takes the call's bytes (16 per row); a copy
// checks that its target has its source's extents (status 1 if not)
// and copies the call's bytes.
// CHECK-LABEL: llvm.func internal @tcc_entry_dynamic(
// CHECK-SAME: %[[RT:[^:]*]]: !llvm.ptr
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[SHAPESP:.*]] = llvm.getelementptr %[[RT]][0, 9]
// CHECK: %[[SHAPES:.*]] = llvm.load %[[SHAPESP]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[XN:.*]] = llvm.getelementptr %[[SHAPES]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[N:.*]] = llvm.load %[[XN]] : !llvm.ptr -> i64
// CHECK: %[[ROW:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: %[[VIEWBYTES:.*]] = llvm.mul %[[ROW]], %[[N]] : i64
// CHECK: llvm.intr.umax(%[[VIEWBYTES]], {{.*}}) : (i64, i64) -> i64
// CHECK: %[[YN:.*]] = llvm.getelementptr %[[SHAPES]][2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[M:.*]] = llvm.load %[[YN]] : !llvm.ptr -> i64
// CHECK: %[[DIFFER:.*]] = llvm.icmp "ne" %[[N]], %[[M]] : i64
// CHECK: %[[STATUS:.*]] = llvm.zext %[[DIFFER]] : i1 to i32
// CHECK: llvm.icmp "ne" %[[STATUS]], %[[ZERO]] : i32
// CHECK: %[[BYTES:.*]] = llvm.mul {{.*}}, %[[N]] : i64
// CHECK: llvm.call {{.*}}(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BYTES]])
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [8]>} {
  func.func @dynamic(%x: memref<?x4xf32> {tcc.dim_names = ["batch", ""]}, %y: memref<?x4xf32>) attributes {tcc.num_outputs = 1 : i64, tcc.arena_bytes = 128 : i64, tcc.arena_alignment = 64 : i64} {
    %arena = memref.alloc() {alignment = 64 : i64, tcc.arena} : memref<128xi8>
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %v = memref.view %arena[%c0][%n] : memref<128xi8> to memref<?x4xf32>
    memref.copy %v, %y : memref<?x4xf32> to memref<?x4xf32>
    return
  }
}
