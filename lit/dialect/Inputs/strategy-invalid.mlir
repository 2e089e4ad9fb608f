// Invalid kernel strategies (lit/dialect/tcc-strategy.mlir runs this).

// expected-error @+1 {{workgroup_size must be positive, got 0}}
func.func private @zero() attributes {s = #tcc.row_reduce<workgroup_size = 0>}

// -----

// expected-error @+1 {{max_workgroups must be 0 (no limit) or positive, got -1}}
func.func private @negative() attributes {s = #tcc.loops<workgroup_size = 64, max_workgroups = -1>}

// -----

// expected-error @+1 {{work_m and work_n must divide tile_m and tile_n}}
func.func private @indivisible() attributes {s = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 3, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 64>}

// -----

// expected-error @+1 {{k_lanes above 1 (the few-row form) needs work_m = tile_m, tile_k = 1 and split_k = 1}}
func.func private @lanes_of_a_split() attributes {s = #tcc.gemm<tile_m = 4, tile_n = 16, tile_k = 1, work_m = 4, work_n = 8, split_k = 2, k_lanes = 128, batch = 1, m = 4, n = 64, k = 512>}

// -----

// expected-error @+1 {{vector must be 1, 4, 8 or 16, got 2}}
func.func private @vector() attributes {s = #tcc.window<workgroup_size = 128, columns = 4, vector = 2, work_items = 64>}

// -----

// expected-error @+1 {{columns and work_items must be positive}}
func.func private @columns() attributes {s = #tcc.window<workgroup_size = 128, columns = 0, vector = 4, work_items = 64>}

// -----

// expected-error @+1 {{block_q and block_k must be positive, got 64 and 0}}
func.func private @attention_blocks() attributes {s = #tcc.attention<block_q = 64, block_k = 0>}

// -----

// expected-error @+1 {{key_lanes must be positive and block_q x key_lanes at most 1024 work-items, got 512}}
func.func private @too_many_lanes() attributes {s = #tcc.attention<block_q = 4, block_k = 64, key_lanes = 512>}

// -----

// expected-error @+1 {{several rows a work-group take a power of two of at most 32 work-items a row and at most 1024 in all, got 64 x 4}}
func.func private @packed_rows_too_wide() attributes {s = #tcc.layer_norm<workgroup_size = 64, rows = 4>}

// -----

// expected-error @+1 {{rows must be positive, got 0}}
func.func private @no_rows() attributes {s = #tcc.layer_norm<workgroup_size = 64, rows = 0>}
