// A long row reduction (1024 elements per output) with a fused producer
// runs one work-group per output element: the tile phase records the
// strategy, the gpu phase launches one group per output, codegen strides
// the row and reduces the partials in local memory.
// RUN: tcc compile %s --compile-to=tile --target=nvidia | FileCheck %s --check-prefix=TILE
// RUN: tcc compile %s --compile-to=gpu --target=nvidia | FileCheck %s --check-prefix=GPU
// RUN: tcc compile %s --emit=opencl-c --target=nvidia | FileCheck %s --check-prefix=CL
// RUN: tcc compile %s --emit=opencl-c --target=pocl-cpu | FileCheck %s --check-prefix=CPU
// RUN: tcc compile %s --compile-to=tile --target=pocl-cpu | FileCheck %s --check-prefix=CPUTILE

// TILE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}}tcc.strategy = #tcc.row_reduce<workgroup_size = 256>

// 8 outputs: 8 work-groups of 256.
// GPU-DAG: %[[C8:.*]] = arith.constant 8 : index
// GPU-DAG: %[[C256:.*]] = arith.constant 256 : index
// GPU: gpu.launch_func @tcc_kernels::@[[K:.*]] blocks in (%[[C8]], %{{.*}}, %{{.*}}) threads in (%[[C256]], %{{.*}}, %{{.*}})
// GPU: gpu.func @[[K]]({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, tcc.kind = "reduction", tcc.strategy = #tcc.row_reduce<workgroup_size = 256>}

// CL: __local float scratch[256];
// CL: float partial_total = 0.0f;
// CL: for (tcc_index r = lid; r < 1024; r += 256) {
// CL: tcc_expf(
// CL: partial_total = (partial_total + value);
// CL: if (lid < step) scratch[lid] = (scratch[lid] + scratch[lid + step]);
// CL: const float total = scratch[0];
// CL: if (lid == 0) {

// On CPUs one work-item walks the row in chunks of 16 with a partial per
// lane (SIMD after LLVM's SLP vectorizer), combined pairwise at the end.
// exp is the branch-free polynomial there (tcc_expf_poly).
// CPU: __kernel __attribute__((reqd_work_group_size(1, 1, 1)))
// CPU-NOT: __local
// CPU: float total_0 = 0.0f, total_1 = 0.0f,
// CPU: for (tcc_index chunk = 0; chunk < 1024; chunk += 16) {
// CPU: const tcc_index r = chunk + 15;
// CPU: tcc_expf_poly(
// CPU: total_15 = (total_15 + value);
// CPU: total_7 = (total_7 + total_15);
// CPU: total_0 = (total_0 + total_1);
// CPU: const float total = total_0;

// A short reduction keeps one work-item per output.
// TILE: tcc.dispatch "reduce_max{{.*}}
// TILE: tcc.strategy = #tcc.loops<workgroup_size = {{[0-9]+}}>

// A column sum (the row strided by 8 in memory) takes the row template on
// GPUs; on CPUs one work-item per output, which PoCL vectorizes across
// neighbouring outputs, beats one work-item reading a strided row.
// TILE: tcc.dispatch "reduce_add_2"
// TILE: linalg.generic {{.*}}tcc.kind = "reduction", tcc.strategy = #tcc.row_reduce<workgroup_size = 256>
// CPUTILE: tcc.dispatch "reduce_exp_add_0"
// CPUTILE: tcc.kind = "reduction", tcc.strategy = #tcc.row_reduce<workgroup_size = 1>
// CPUTILE: tcc.dispatch "reduce_add_2"
// CPUTILE: tcc.kind = "reduction", tcc.strategy = #tcc.loops<workgroup_size = {{[0-9]+}}, max_workgroups = 64>

func.func @row_sum_exp(%x: tensor<8x1024xf32>, %y: tensor<64x16xf32>, %z: tensor<1024x8xf32>) -> (tensor<8x1xf32>, tensor<64x1xf32>, tensor<1x8xf32>) {
  %e = tosa.exp %x : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<8x1024xf32>) -> tensor<8x1xf32>
  %m = tosa.reduce_max %y {axis = 1 : i32} : (tensor<64x16xf32>) -> tensor<64x1xf32>
  %c = tosa.reduce_sum %z {axis = 0 : i32} : (tensor<1024x8xf32>) -> tensor<1x8xf32>
  return %s, %m, %c : tensor<8x1xf32>, tensor<64x1xf32>, tensor<1x8xf32>
}
