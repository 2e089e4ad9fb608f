//===- TccOps.td - the tcc dialect --------------------------*- tablegen -*-===//
//
// Composite model ops that TOSA lacks. Later phases either decompose them into
// TOSA (tcc-decompose-composites) or hand them to library kernels. Every op
// verifies its operands, attributes and result types.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_OPS_TD
#define TCC_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

def Tcc_Dialect : Dialect {
  let name = "tcc";
  let cppNamespace = "::tcc";
  let summary = "Composite tensor ops of the tcc compiler";
  let description = [{
    Ops for model-level computations that TOSA expresses only as chains of
    primitive ops (softmax, layer normalization, GELU, ...). Keeping them
    whole through the graph phase lets tcc fuse them into few kernels or map
    them to hand-tuned library kernels; `tcc-decompose-composites` lowers
    them to TOSA for everything else.
  }];
  let useDefaultAttributePrinterParser = 1;
  // `tcc.conv` has linalg's iterator types and a body of linalg ops
  // (`linalg.index`, `linalg.yield`).
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  // Checks the structural attributes other dialects' ops carry
  // (`tcc.kernel`, `tcc.kind`): TccStructure.cpp.
  let hasOperationAttrVerify = 1;
}

include "TccAttrs.td"
include "TccConv.td"

class Tcc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tcc_Dialect, mnemonic, traits>;

def Tcc_FloatTensor : RankedTensorOf<[AnyFloat]>;

def Tcc_SoftmaxOp : Tcc_Op<"softmax",
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "softmax along one axis";
  let description = [{
    `output = exp(x - max(x)) / sum(exp(x - max(x)))` along `axis`.
    A negative axis counts from the last dimension.

    ```mlir
    %y = tcc.softmax %x axis = -1 : tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$output);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Tcc_LogSoftmaxOp : Tcc_Op<"log_softmax",
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "logarithm of softmax along one axis";
  let description = [{
    `output = x - max(x) - log(sum(exp(x - max(x))))` along `axis`.

    ```mlir
    %y = tcc.log_softmax %x axis = 1 : tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$output);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Tcc_LayerNormOp : Tcc_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "output"]>,
     AllTypesMatch<["scale", "bias"]>]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes `input` over the dimensions `axis..rank-1` to zero mean and
    unit variance (`epsilon` added to the variance), then scales and shifts:
    `output = (x - mean) / sqrt(var + epsilon) * scale + bias`.
    `scale` and `bias` have the shape of the normalized dimensions.

    ```mlir
    %y = tcc.layer_norm %x, %gamma, %beta axis = -1 epsilon = 1.0e-05
        : tensor<2x8x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$scale,
                       Tcc_FloatTensor:$bias, I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs Tcc_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `axis` `=` $axis `epsilon` `=` $epsilon
    attr-dict `:` type($output) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Tcc_GeluOp : Tcc_Op<"gelu",
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `approximate = "none"`: `0.5 * x * (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`.

    ```mlir
    %y = tcc.gelu %x approximate = "tanh" : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Tcc_FloatTensor:$output);
  let assemblyFormat = [{
    $input (`approximate` `=` $approximate^)? attr-dict `:` type($output)
  }];
  let hasVerifier = 1;
}

def Tcc_SiluOp : Tcc_Op<"silu",
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "sigmoid linear unit, x * sigmoid(x)";
  let description = [{
    ```mlir
    %y = tcc.silu %x : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input);
  let results = (outs Tcc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Tcc_LayerNormRowsOp : Tcc_Op<"layer_norm_rows",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     DestinationStyleOpInterface]> {
  let summary = "layer normalization of each row, destination-passing style";
  let description = [{
    `tcc.layer_norm` over the last axis of an f32 tensor, written into
    `init` (destination-passing style, so that it bufferizes like a linalg
    op): each row `x` of `input` (all dimensions but the last) becomes
    `(x - mean(x)) * rsqrt(mean((x - mean(x))^2) + epsilon) * scale + bias`.
    `scale` and `bias` have the shape of a row, which is static; the
    dimensions before it may be dynamic (a symbolic batch). On tensors it returns the
    result; on memrefs (after bufferization) it writes `init` and returns
    nothing. `tcc-convert-layer-norm-to-rows` creates it; the OpenCL C back
    end compiles it as one kernel, one work-group per row.

    ```mlir
    %y = tcc.layer_norm_rows ins(%x, %g, %b : tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>)
        outs(%init : tensor<8x64xf32>) epsilon = 1.0e-05 -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$input, AnyShaped:$scale, AnyShaped:$bias,
                       AnyShaped:$init, F32Attr:$epsilon);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $input `,` $scale `,` $bias `:` type($input) `,` type($scale) `,`
    type($bias) `)` `outs` `(` $init `:` type($init) `)` `epsilon` `=` $epsilon
    attr-dict (`->` type($result)^)?
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

def Tcc_AttentionOp : Tcc_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(scale * Q·Kᵀ + mask) · V` over the last axis, per batch and
    head: `query` is `[B, H, Sq, D]`, `key` and `value` are
    `[B, Hkv, Skv, D]` with `H` a multiple of `Hkv` (grouped heads: query
    head `h` reads key/value head `h / (H / Hkv)`), the result is
    `[B, H, Sq, D]`. The optional `mask` is added to the scaled scores and
    broadcasts to `[B, H, Sq, Skv]` (each dimension equal or 1). With
    `causal`, key `j` is masked out of query row `i` where `j > i` (the
    upper-left aligned triangle of PyTorch's `is_causal` and ONNX
    `Attention`), as if `-inf` were added there. A query row left without
    any key (every score `-inf`) is 0, not the softmax's NaN (what the
    NaN guard of torch's `scaled_dot_product_attention` export writes).

    `tcc-raise-attention` creates it from the matmul/softmax chains
    exporters emit; `tcc-convert-attention-to-kernel` makes an f32 one a
    single flash-attention kernel; `tcc-decompose-composites` expands it
    into TOSA (its definition, and the reference oracle's).

    ```mlir
    %o = tcc.attention %q, %k, %v mask %m : tensor<1x1x1x8xf32> scale = 0.125
        causal = true : tensor<1x4x8x64xf32>, tensor<1x2x8x64xf32>,
        tensor<1x2x8x64xf32> -> tensor<1x4x8x64xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$query, Tcc_FloatTensor:$key,
                       Tcc_FloatTensor:$value,
                       Optional<Tcc_FloatTensor>:$mask, F32Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Tcc_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^ `:` type($mask))?
    `scale` `=` $scale (`causal` `=` $causal^)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Tcc_FlashAttentionOp : Tcc_Op<"flash_attention",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     DestinationStyleOpInterface]> {
  let summary = "attention as one kernel, destination-passing style";
  let description = [{
    `tcc.attention` of f32 operands written into `init` (destination
    passing, so that it bufferizes like a linalg op); the same operands,
    shapes, `scale` and `causal`, but for the key and the value, which may
    each hold f16, bf16 or f32 whatever the query's type (the kernel
    widens every element it loads to fp32). On tensors it returns the result; on
    memrefs it writes `init` and returns nothing.
    `tcc-convert-attention-to-kernel` creates it; the OpenCL C back end
    compiles it as one flash-attention kernel (`#tcc.attention`).

    ```mlir
    %o = tcc.flash_attention ins(%q, %k, %v : tensor<1x4x8x64xf32>,
        tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>)
        outs(%init : tensor<1x4x8x64xf32>) scale = 0.125 -> tensor<1x4x8x64xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$query, AnyShaped:$key, AnyShaped:$value,
                       Optional<AnyShaped>:$mask, AnyShaped:$init,
                       F32Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value (`,` $mask^)? `:` type($query) `,`
    type($key) `,` type($value) (`,` type($mask)^)? `)`
    `outs` `(` $init `:` type($init) `)` `scale` `=` $scale
    (`causal` `=` $causal^)? attr-dict (`->` type($result)^)?
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

// linalg's `#linalg.iterator_type<...>` (LinalgBase.td is not included:
// it would define the linalg dialect in this file's records too).
def Tcc_IteratorTypeAttr : Attr<
    CPred<"::llvm::isa<::mlir::linalg::IteratorTypeAttr>($_self)">,
    "linalg iterator type">;
def Tcc_IteratorTypeArrayAttr : TypedArrayAttrBase<Tcc_IteratorTypeAttr,
    "array of linalg iterator types">;

def Tcc_ConvOp : Tcc_Op<"conv", [
    SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ConditionallySpeculatable>,
    RecursiveMemoryEffects,
    DestinationStyleOpInterface,
    LinalgStructuredInterface,
    ReifyRankedShapedTypeOpInterface]> {
  let summary = "a convolution or pooling with its input folded into its loads";
  let description = [{
    What `tcc-fold-conv-inputs` makes of a convolution or pooling whose
    padding (or input producer) it folds into the loads: a structured op
    in the form of a `linalg.generic` (`indexing_maps`, `iterator_types`
    and a body that yields with `linalg.yield`) over one input, the
    filter (or the pooling window), and one output, `init`. The input
    image is read inside the body (`tensor.extract`, `memref.load` after
    bufferization) at coordinates the body computes from `linalg.index`.

    `window` (`#tcc.conv`) says which window op it computes: `kind`, named
    after the linalg op it replaced, whose layouts it keeps (NHWC input,
    HWCF/HWCM/HWC filter or a pooling window), and its `strides` and
    `dilations` (height, width); kernel grouping, the window and GEMM
    templates and kernel naming read it instead of matching the body. The
    op has the loops of `kind` (parallel loops first: `n, oh, ow, f` then
    `kh, kw, c` for `conv_2d_nhwc_hwcf`; `n, oh, ow, c, m` then `kh, kw`
    for `depthwise_conv_2d_nhwc_hwcm`; `n, oh, ow, c` then `kh, kw`
    otherwise), a filter of the kind's rank (a 2-D convolution's may be
    packed into panels of output channels, rank 5) and an output with one
    dimension per parallel loop.

    It implements linalg's structured-op interface (`LinalgOp`) and
    destination passing, so that upstream's loop lowering, shape
    reification and canonicalizations apply to it as to a generic; its
    bufferization model is in `cpp/TccConv.cpp`. On tensors it returns
    the result (init's type); on memrefs it writes `init` and returns
    nothing.

    ```mlir
    %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2], dilations = [1, 1]>
        ins(%w : tensor<3x3x4x8xf32>) outs(%init : tensor<1x8x8x8xf32>)
        indexing_maps = [#filter, #out]
        iterator_types = [parallel, parallel, parallel, parallel, reduction,
                          reduction, reduction] {
    ^bb0(%in: f32, %out: f32):
      ...
      linalg.yield %sum : f32
    } -> tensor<1x8x8x8xf32>
    ```
  }];
  let arguments = (ins AnyShaped:$filter, AnyShaped:$init,
                       Tcc_ConvAttr:$window,
                       AffineMapArrayAttr:$indexing_maps,
                       Tcc_IteratorTypeArrayAttr:$iterator_types);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let regions = (region SizedRegion<1>:$region);
  let assemblyFormat = [{
    `` $window `ins` `(` $filter `:` type($filter) `)`
    `outs` `(` $init `:` type($init) `)`
    `indexing_maps` `=` $indexing_maps
    `iterator_types` `=` custom<IteratorTypes>($iterator_types)
    attr-dict-with-keyword $region (`->` type($result)^)?
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
    /// LinalgOp: no library call implements it.
    std::string getLibraryCallName() { return "op_has_no_registered_library_name"; }
    /// LinalgOp: the body is written by its creator, not built from a
    /// named op's definition.
    static std::function<void(::mlir::ImplicitLocOpBuilder &, ::mlir::Block &,
                              ::mlir::ArrayRef<::mlir::NamedAttribute>,
                              ::mlir::function_ref<::mlir::InFlightDiagnostic()>)>
    getRegionBuilder() {
      return nullptr;
    }
    /// Whether the body reads the iteration indices (`linalg.index`).
    bool hasIndexSemantics() {
      return !getBody()->getOps<::mlir::linalg::IndexOp>().empty();
    }
    ::mlir::LogicalResult reifyResultShapes(::mlir::OpBuilder &b,
        ::mlir::ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
      return ::llvm::cast<::mlir::linalg::LinalgOp>(getOperation())
          .reifyResultShapes(b, reifiedReturnShapes);
    }
  }];
  let hasVerifier = 1;
}


def Tcc_DispatchOp : Tcc_Op<"dispatch", [
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "one kernel: the ops that run as one device launch";
  let description = [{
    The kernel boundary, as IREE's `flow.dispatch.region`: the ops of one
    kernel (a reduction with the fill that starts its accumulator, a
    matmul or convolution with its elementwise epilogue, an elementwise
    op on its own, ...) inside the op's one block, in the order they run.
    `tcc-form-dispatches` makes it; `tcc-outline-kernels` moves each
    region into a `gpu.func` and launches it from where the op was.
    `kernel` names the kernel (a C identifier: every back end's entry
    point); the kernel's root op carries `tcc.kind` and, from the tile
    phase on, its `tcc.strategy`.

    The region is not isolated from above: it reads the values of the
    function (constants, the inputs, other kernels' results) where they
    are defined. On tensors the op returns what its `tcc.yield` yields
    (the values other ops read). On memrefs it has no results: its
    bufferization model moves the allocations made inside it out in
    front of it, so that a kernel writes buffers that live outside it.

    ```mlir
    %r = tcc.dispatch "matmul_add_0" -> tensor<4x8xf32> {
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
      %p = linalg.matmul {tcc.kind = "matmul"} ins(%a, %b : ...) outs(%f : ...) -> ...
      %s = linalg.generic ... ins(%p, %bias : ...) outs(%e : ...) -> ...
      tcc.yield %s : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$kernel);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kernel (`->` type($results)^)? $body attr-dict
  }];
  let extraClassDeclaration = [{
    /// The region's terminator.
    ::tcc::YieldOp getYield();
  }];
  let hasVerifier = 1;
}

def Tcc_YieldOp : Tcc_Op<"yield", [Pure, Terminator,
                                   HasParent<"DispatchOp">]> {
  let summary = "what a kernel's region gives back to the function";
  let description = [{
    The terminator of `tcc.dispatch`: the values its results stand for,
    in order (none on memrefs; the buffers while bufferization runs).
  }];
  let arguments = (ins Variadic<AnyShaped>:$values);
  let assemblyFormat = [{ ($values^ `:` type($values))? attr-dict }];
}

#endif // TCC_OPS_TD
