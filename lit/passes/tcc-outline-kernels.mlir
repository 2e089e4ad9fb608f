// tcc-outline-kernels moves each kernel group into a gpu.func of
// gpu.module @tcc_kernels and launches it from the host function: whole
// buffers as arguments, views rebuilt inside the kernel, the configured
// work-group size, copies of views turned into kernels.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels,tcc-phase-buffer,tcc-configure-kernels,tcc-outline-kernels)' | FileCheck %s
// Outlining reads each kernel's strategy and never guesses one.
// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-phase-linalg,tcc-form-dispatches,tcc-configure-kernels,tcc-phase-buffer,tcc-outline-kernels)' 2>&1 | FileCheck %s --check-prefix=UNCONFIGURED
// UNCONFIGURED: error: kernel copy_{{[0-9]+}} has no strategy (tcc.strategy): run tcc-configure-kernels first

// CHECK: module attributes {gpu.container_module
// CHECK-LABEL: func.func @row_max
// CHECK-SAME: (%[[X:.*]]: memref<4x16xf32>, %[[B:.*]]: memref<1x16xf32>, %[[SUM:.*]]: memref<4x16xf32>, %[[MAX:.*]]: memref<4x1xf32>)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: gpu.launch_func @tcc_kernels::@[[ADD:add_[0-9]+]] blocks in (%[[C1]], %{{.*}}, %{{.*}}) threads in (%[[C64]], %{{.*}}, %{{.*}}) args(%[[X]] : memref<4x16xf32>, %[[B]] : memref<1x16xf32>, %[[SUM]] : memref<4x16xf32>)
// CHECK: %[[TMP:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: gpu.launch_func @tcc_kernels::@[[RED:reduce_max_[0-9]+]] {{.*}} args(%[[TMP]] : memref<4xf32>, %[[SUM]] : memref<4x16xf32>)
// CHECK: gpu.launch_func @tcc_kernels::@[[COPY:copy_[0-9]+]] {{.*}} args(%[[TMP]] : memref<4xf32>, %[[MAX]] : memref<4x1xf32>)
// CHECK-NOT: linalg.
// CHECK: return

// CHECK: gpu.module @tcc_kernels
// CHECK: gpu.func @[[ADD]](%{{.*}}: memref<4x16xf32>, %{{.*}}: memref<1x16xf32>, %{{.*}}: memref<4x16xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, tcc.kind = "elementwise", tcc.strategy = #tcc.loops<workgroup_size = 64>}
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: gpu.return
// The fill and the reduction it initialises share one kernel; views of the
// arguments are rebuilt inside.
// CHECK: gpu.func @[[RED]](%[[OUT:.*]]: memref<4xf32>, %[[IN:.*]]: memref<4x16xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>, tcc.kind = "reduction", tcc.strategy = #tcc.loops<workgroup_size = 4>}
// CHECK: %[[OUT2:.*]] = memref.expand_shape %[[OUT]]
// CHECK: linalg.fill {{.*}} outs(%[[OUT2]] : memref<4x1xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[OUT2]] : memref<4x1xf32>)
// CHECK: arith.maximumf
// The copy out of a view becomes an elementwise linalg.generic; bufferization
// made it, so its strategy comes from the second tcc-configure-kernels.
// CHECK: gpu.func @[[COPY]](%[[SRC:.*]]: memref<4xf32>, %[[DST:.*]]: memref<4x1xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>, tcc.kind = "elementwise", tcc.strategy = #tcc.loops<workgroup_size = 4>}
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[SRC]]
// CHECK: linalg.generic {{.*}} ins(%[[VIEW]] : memref<4x1xf32>) outs(%[[DST]] : memref<4x1xf32>)
// CHECK-NOT: memref.copy
func.func @row_max(%x: tensor<4x16xf32>, %b: tensor<1x16xf32>) -> (tensor<4x16xf32>, tensor<4x1xf32>) {
  %0 = tosa.add %x, %b : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %1 = tosa.reduce_max %0 {axis = 1 : i32} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x1xf32>
}
