// tcc-form-dispatches groups linalg ops into kernels, names them, and
// moves each kernel's ops into a `tcc.dispatch` (the kernel boundary) that
// yields what other ops read: a fill joins the reduction it initialises,
// an elementwise epilogue joins its matmul or reduction, an (already
// fused) elementwise chain is one kernel.
// RUN: tcc-opt %s --split-input-file --tcc-phase-linalg --tcc-form-dispatches | FileCheck %s

// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x16xf32>
// CHECK: %[[K:.*]] = tcc.dispatch "batch_matmul_add_min_max_{{[0-9]+}}" -> tensor<1x4x16xf32> {
// CHECK-NEXT: %[[FILL:.*]] = linalg.fill ins({{.*}}) outs(%[[E]]
// CHECK-NEXT: %[[MM:.*]] = linalg.batch_matmul {tcc.kind = "matmul"} {{.*}} outs(%[[FILL]]
// CHECK-NEXT: %[[EPI:.*]] = linalg.generic {{.*}} ins(%[[MM]], {{.*}} outs(%[[E]]
// CHECK: tcc.yield %[[EPI]] : tensor<1x4x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @matmul_bias_relu(%x: tensor<1x4x8xf32>, %w: tensor<1x8x16xf32>, %b: tensor<1x1x16xf32>) -> tensor<1x4x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %add = tosa.add %mm, %b : (tensor<1x4x16xf32>, tensor<1x1x16xf32>) -> tensor<1x4x16xf32>
  %relu = tosa.clamp %add {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %relu : tensor<1x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @chain
// CHECK: tcc.dispatch "sub_exp_tanh_{{[0-9]+}}" -> tensor<4x16xf32> {
// CHECK-NEXT: %[[G:.*]] = linalg.generic {{.*}} attrs = {tcc.kind = "elementwise"}
// CHECK: tcc.yield %[[G]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @chain(%x: tensor<4x16xf32>, %y: tensor<1x16xf32>) -> tensor<4x16xf32> {
  %0 = tosa.sub %x, %y : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %1 = tosa.exp %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = tosa.tanh %1 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @reduce
// CHECK: %[[K:.*]] = tcc.dispatch "reduce_max_{{[0-9]+}}" -> tensor<4x1xf32> {
// CHECK-NEXT: %[[INIT:.*]] = linalg.fill
// CHECK-NEXT: %[[R:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%[[INIT]] {{.*}} attrs = {tcc.kind = "reduction"}
// CHECK: tcc.yield %[[R]]
// CHECK: return %[[K]]
func.func @reduce(%x: tensor<4x16xf32>) -> tensor<4x1xf32> {
  %0 = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// A matmul whose result has two users keeps no epilogue: two kernels, the
// second reading the first's result.
// CHECK-LABEL: func.func @two_users
// CHECK: %[[MM:.*]] = tcc.dispatch "batch_matmul_{{[0-9]+}}" -> tensor<1x4x16xf32> {
// CHECK: linalg.batch_matmul {tcc.kind = "matmul"}
// CHECK: %[[ADD:.*]] = tcc.dispatch "add_{{[0-9]+}}" -> tensor<1x4x16xf32> {
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[MM]], {{.*}} attrs = {tcc.kind = "elementwise"}
// CHECK: return %[[MM]], %[[ADD]]
func.func @two_users(%x: tensor<1x4x8xf32>, %w: tensor<1x8x16xf32>, %b: tensor<1x1x16xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x16xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %add = tosa.add %mm, %b : (tensor<1x4x16xf32>, tensor<1x1x16xf32>) -> tensor<1x4x16xf32>
  return %mm, %add : tensor<1x4x16xf32>, tensor<1x4x16xf32>
}

// -----

// An elementwise consumer of a reduction (a mean's scaling, then a shift)
// is its epilogue: the fill, the reduction and the scaling share a kernel,
// which yields only the last.
// CHECK-LABEL: func.func @reduce_epilogue
// CHECK: %[[K:.*]] = tcc.dispatch "reduce_add_mul_add_{{[0-9]+}}" -> tensor<4x1xf32> {
// CHECK-NEXT: %[[INIT:.*]] = linalg.fill
// CHECK-NEXT: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%[[INIT]] {{.*}} attrs = {tcc.kind = "reduction"}
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[SUM]]
// CHECK: tcc.yield %[[OUT]] : tensor<4x1xf32>
// CHECK-NOT: tcc.kind
// CHECK: return %[[K]]
func.func @reduce_epilogue(%x: tensor<4x16xf32>) -> tensor<4x1xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %inv = "tosa.const"() <{values = dense<0.0625> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %m = tosa.mul %s, %inv, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %y = tosa.add %m, %inv : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

// A reduction whose result is also returned keeps no epilogue.
// CHECK-LABEL: func.func @reduce_two_users
// CHECK: %[[SUM:.*]] = tcc.dispatch "reduce_add_{{[0-9]+}}" -> tensor<4x1xf32> {
// CHECK: attrs = {tcc.kind = "reduction"}
// CHECK: %[[MUL:.*]] = tcc.dispatch "mul_{{[0-9]+}}" -> tensor<4x1xf32> {
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[SUM]] {{.*}} attrs = {tcc.kind = "elementwise"}
// CHECK: return %[[SUM]], %[[MUL]]
func.func @reduce_two_users(%x: tensor<4x16xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %inv = "tosa.const"() <{values = dense<0.0625> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %m = tosa.mul %s, %inv, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  return %s, %m : tensor<4x1xf32>, tensor<4x1xf32>
}
