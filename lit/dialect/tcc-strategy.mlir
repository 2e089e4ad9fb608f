// The kernel-strategy attributes round-trip through their assembly form
// and are rejected with a located error when their parameters are invalid.
// RUN: tcc-opt %s --split-input-file | FileCheck %s
// RUN: tcc-opt %S/Inputs/strategy-invalid.mlir --split-input-file --verify-diagnostics

// CHECK: tcc.strategy = #tcc.loops<workgroup_size = 256, max_workgroups = 64>
// CHECK: tcc.strategy = #tcc.loops<workgroup_size = 128>
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 4, batch = 1, m = 49, n = 512, k = 4608>
// CHECK: tcc.strategy = #tcc.gemm<tile_m = 1, tile_n = 16, tile_k = 1, work_m = 1, work_n = 8, split_k = 1, k_lanes = 128, batch = 1, m = 1, n = 2304, k = 768>
// CHECK: tcc.strategy = #tcc.row_reduce<workgroup_size = 128>
// CHECK: tcc.strategy = #tcc.softmax<workgroup_size = 1>
// CHECK: tcc.strategy = #tcc.layer_norm<workgroup_size = 64>
// CHECK: tcc.strategy = #tcc.layer_norm<workgroup_size = 8, rows = 32>
// CHECK: tcc.strategy = #tcc.window<workgroup_size = 256, columns = 4, vector = 4, work_items = 3136>
// CHECK: tcc.strategy = #tcc.attention<block_q = 64, block_k = 32>
// CHECK: tcc.strategy = #tcc.attention<block_q = 1, block_k = 64, key_lanes = 64>
func.func @strategies() attributes {
    a = {tcc.strategy = #tcc.loops<workgroup_size = 256, max_workgroups = 64>},
    b = {tcc.strategy = #tcc.loops<workgroup_size = 128, max_workgroups = 0>},
    c = {tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 4, batch = 1, m = 49, n = 512, k = 4608>},
    c2 = {tcc.strategy = #tcc.gemm<tile_m = 1, tile_n = 16, tile_k = 1, work_m = 1, work_n = 8, split_k = 1, k_lanes = 128, batch = 1, m = 1, n = 2304, k = 768>},
    d = {tcc.strategy = #tcc.row_reduce<workgroup_size = 128>},
    e = {tcc.strategy = #tcc.softmax<workgroup_size = 1>},
    f = {tcc.strategy = #tcc.layer_norm<workgroup_size = 64>},
    f2 = {tcc.strategy = #tcc.layer_norm<workgroup_size = 8, rows = 32>},
    g = {tcc.strategy = #tcc.window<workgroup_size = 256, columns = 4, vector = 4, work_items = 3136>},
    h = {tcc.strategy = #tcc.attention<block_q = 64, block_k = 32>},
    i = {tcc.strategy = #tcc.attention<block_q = 1, block_k = 64, key_lanes = 64>}} {
  return
}
