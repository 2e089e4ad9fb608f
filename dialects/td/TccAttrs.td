//===- TccAttrs.td - kernel strategies of the tcc dialect ---*- tablegen -*-===//
//
// The typed kernel strategy: how one kernel is compiled, decided once per
// target by `tcc-configure-kernels` (compiler/src/config/) and read, never
// re-derived, by outlining, loop lowering and every back end. One attribute
// per strategy; an op carries at most one of them as `tcc.strategy`.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_ATTRS_TD
#define TCC_ATTRS_TD

include "mlir/IR/AttrTypeBase.td"

class Tcc_StrategyAttr<string name, string attrMnemonic>
    : AttrDef<Tcc_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tcc_LoopsStrategyAttr : Tcc_StrategyAttr<"LoopsStrategy", "loops"> {
  let summary = "a plain loop nest mapped onto work-items";
  let description = [{
    The kernel's linalg ops become parallel loop nests, one iteration per
    work-item, in work-groups of `workgroup_size`. A positive
    `max_workgroups` caps the grid (grid-stride loops cover the rest);
    0 launches one work-item per point.

    ```mlir
    tcc.strategy = #tcc.loops<workgroup_size = 64, max_workgroups = 64>
    ```
  }];
  let parameters = (ins "int64_t":$workgroup_size,
                        DefaultValuedParameter<"int64_t", "0">:$max_workgroups);
  let genVerifyDecl = 1;
}

def Tcc_GemmStrategyAttr : Tcc_StrategyAttr<"GemmStrategy", "gemm"> {
  let summary = "the tiled GEMM template";
  let description = [{
    A `batch x m x n x k` product (a matmul, a batched matmul or a
    convolution as an implicit GEMM) with its fill and epilogue, on the
    tiled GEMM template of `tcc-kernels`: output tiles of
    `tile_m x tile_n`, K in steps of `tile_k`, `work_m x work_n` outputs
    per work-item, K split over `split_k` work-groups. A tile of exactly
    one work-item's outputs is the register-blocked form for CPUs.
    `k_lanes` above 1 (default 1, not printed) is the few-row form: each
    work-item owns all `tile_m` rows (`work_m = tile_m`, `tile_k = 1`)
    and `k_lanes` work-items share each column block, each over every
    `k_lanes`-th row of K, their partial sums added in the work-group.
    `precision` is the arithmetic of the products: `fp32` (the default,
    not printed), or the tensor cores' `tf32`, `fp16` or `bf16` (fp32
    accumulators), which the OpenCL C and PTX writers read.

    ```mlir
    tcc.strategy = #tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16,
        work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 64>
    ```
  }];
  let parameters = (ins "int64_t":$tile_m, "int64_t":$tile_n,
                        "int64_t":$tile_k, "int64_t":$work_m,
                        "int64_t":$work_n, "int64_t":$split_k,
                        DefaultValuedParameter<"int64_t", "1">:$k_lanes,
                        "int64_t":$batch, "int64_t":$m, "int64_t":$n,
                        "int64_t":$k,
                        StringRefParameter<"arithmetic", "\"fp32\"">:$precision);
  let genVerifyDecl = 1;
}

def Tcc_RowReduceStrategyAttr
    : Tcc_StrategyAttr<"RowReduceStrategy", "row_reduce"> {
  let summary = "the row-reduction template";
  let description = [{
    One work-group of `workgroup_size` work-items per output element,
    reducing the innermost dimension.

    ```mlir
    tcc.strategy = #tcc.row_reduce<workgroup_size = 128>
    ```
  }];
  let parameters = (ins "int64_t":$workgroup_size);
  let genVerifyDecl = 1;
}

def Tcc_SoftmaxStrategyAttr : Tcc_StrategyAttr<"SoftmaxStrategy", "softmax"> {
  let summary = "the row softmax template";
  let description = [{
    One work-group of `workgroup_size` work-items per row.

    ```mlir
    tcc.strategy = #tcc.softmax<workgroup_size = 256>
    ```
  }];
  let parameters = (ins "int64_t":$workgroup_size);
  let genVerifyDecl = 1;
}

def Tcc_LayerNormStrategyAttr
    : Tcc_StrategyAttr<"LayerNormStrategy", "layer_norm"> {
  let summary = "the row layer norm template";
  let description = [{
    `workgroup_size` work-items per row. With `rows` above 1 (default 1,
    not printed), a work-group normalizes that many rows, `workgroup_size`
    work-items each (at most 32: a row's work-items are one warp's
    lanes), for rows too short to keep a work-group's memory accesses in
    flight.

    ```mlir
    tcc.strategy = #tcc.layer_norm<workgroup_size = 256>
    tcc.strategy = #tcc.layer_norm<workgroup_size = 8, rows = 32>
    ```
  }];
  let parameters = (ins "int64_t":$workgroup_size,
                        DefaultValuedParameter<"int64_t", "1">:$rows);
  let genVerifyDecl = 1;
}

def Tcc_WindowStrategyAttr : Tcc_StrategyAttr<"WindowStrategy", "window"> {
  let summary = "the window template (depthwise convolution, pooling)";
  let description = [{
    An NHWC depthwise convolution or max/sum pooling with its fill and
    epilogue, on the window template of `tcc-kernels`: each of
    `work_items` work-items (in groups of `workgroup_size`) computes
    `columns` neighbouring output columns of `vector` neighbouring
    channels (1 or 4), with the filter taps of its channels in registers
    and each input column read once for all the outputs it feeds.

    ```mlir
    tcc.strategy = #tcc.window<workgroup_size = 128, columns = 4,
        vector = 4, work_items = 3136>
    ```
  }];
  let parameters = (ins "int64_t":$workgroup_size, "int64_t":$columns,
                        "int64_t":$vector, "int64_t":$work_items);
  let genVerifyDecl = 1;
}

def Tcc_AttentionStrategyAttr
    : Tcc_StrategyAttr<"AttentionStrategy", "attention"> {
  let summary = "the flash-attention template";
  let description = [{
    A `tcc.flash_attention` on the flash-attention template of
    `tcc-kernels`: one work-group of `block_q` work-items per `block_q`
    query rows of one batch and head (one row per work-item, its query
    and output accumulator in registers), walking the keys in tiles of
    `block_k` rows of K and V staged in local memory, with an online
    softmax (running maximum and sum). `key_lanes` above 1 (default 1,
    not printed) is the key-parallel form for a few query rows (a decode
    step): `key_lanes` work-items share each row, each walking every
    `key_lanes`-th key with an online softmax of its own, and the
    work-group merges their maxima, sums and accumulators; `block_k` is
    then unused.

    ```mlir
    tcc.strategy = #tcc.attention<block_q = 64, block_k = 32>
    tcc.strategy = #tcc.attention<block_q = 1, block_k = 64, key_lanes = 64>
    ```
  }];
  let parameters = (ins "int64_t":$block_q, "int64_t":$block_k,
                        DefaultValuedParameter<"int64_t", "1">:$key_lanes);
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

def Tcc_DimsAttr : AttrDef<Tcc_Dialect, "Dims"> {
  let mnemonic = "dims";
  let summary = "the symbolic dimensions of a module and their ranges";
  let description = [{
    The dimensions a module keeps symbolic (`?` in its types) and the
    range each may take at run time, declared by `tcc compile --dim
    NAME=MIN..MAX` and written on the module as `tcc.dims`. A function
    argument names which of its dimensions are which symbol with
    `tcc.dim_names` (an array of strings, `""` for a static dimension), so
    the same name ties the inputs together.

    - `names`: the symbols, unique and non-empty;
    - `min`, `max`: the inclusive range of each, `1 <= min <= max <= 2^31-1`.

    ```mlir
    module attributes {tcc.dims = #tcc.dims<names = ["batch"],
        min = [1], max = [64]>}
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$names,
                        "::mlir::DenseI64ArrayAttr":$min,
                        "::mlir::DenseI64ArrayAttr":$max);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tcc_TargetAttr : AttrDef<Tcc_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "the device a module is compiled for";
  let description = [{
    What the compiler knows of the device, written once on the module (as
    `tcc.target`) by `tcc-attach-target` in the input phase from a table of
    known targets (`compiler/src/config/targets.rs`) and the command line,
    and read by every pass and back end that depends on the device:

    - `name`: the known target it came from (`nvidia-sm90`,
      `pocl-cpu-avx2`, ...);
    - `family`: whose tuning tables apply (`generic`, `nvidia`,
      `pocl-cpu`);
    - `arch`: the device architecture (`sm_90`, `x86-64-v3`; empty where
      the kernels are portable);
    - `api`: how the kernels are launched (`opencl`, `cuda`, `vulkan`);
    - `precision`: the GEMMs' arithmetic (`fp32`, `tf32`, `fp16`, `bf16`);
    - `vector_width`: floats in one SIMD register (CPUs) or one vector
      load (GPUs);
    - `max_local_bytes`: local (shared) memory one work-group may use;
    - `max_workgroup_size`: work-items one work-group may hold.

    ```mlir
    module attributes {tcc.target = #tcc.target<name = "nvidia-sm90",
        family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32",
        vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}
    ```
  }];
  let parameters = (ins StringRefParameter<"known target">:$name,
                        StringRefParameter<"tuning family">:$family,
                        StringRefParameter<"architecture">:$arch,
                        StringRefParameter<"launch API">:$api,
                        StringRefParameter<"GEMM precision">:$precision,
                        "int64_t":$vector_width,
                        "int64_t":$max_local_bytes,
                        "int64_t":$max_workgroup_size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TCC_ATTRS_TD
