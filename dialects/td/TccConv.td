//===- TccConv.td - convolution windows of the tcc dialect --*- tablegen -*-===//
//
// The typed description of a convolution or pooling that
// `tcc-fold-conv-inputs` rewrote into a `tcc.conv` op (its pad or its
// input producer folded into the body's loads): which window op it
// computes (and so its iteration space and operand layouts), its strides
// and dilations. The op holds it as its `window`; the op's verifier checks
// the op against it (TccConv.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_CONV_TD
#define TCC_CONV_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tcc_WindowKind : I32EnumAttr<"WindowKind",
    "the window op a `tcc.conv` computes", [
      I32EnumAttrCase<"Conv2dNhwcHwcf", 0, "conv_2d_nhwc_hwcf">,
      I32EnumAttrCase<"DepthwiseConv2dNhwcHwcm", 1,
                      "depthwise_conv_2d_nhwc_hwcm">,
      I32EnumAttrCase<"DepthwiseConv2dNhwcHwc", 2,
                      "depthwise_conv_2d_nhwc_hwc">,
      I32EnumAttrCase<"PoolingNhwcMax", 3, "pooling_nhwc_max">,
      I32EnumAttrCase<"PoolingNhwcSum", 4, "pooling_nhwc_sum">]> {
  let cppNamespace = "::tcc";
  let genSpecializedAttr = 0;
}

def Tcc_ConvAttr : AttrDef<Tcc_Dialect, "Conv"> {
  let mnemonic = "conv";
  let summary = "the window of a tcc.conv: what it computes";
  let description = [{
    The convolution or pooling `kind` a `tcc.conv` computes (named after
    the linalg op it replaced, whose layouts it keeps: NHWC input,
    HWCF/HWCM/HWC filter or a pooling window) with the given `strides` and
    `dilations` (height, width). The op's body holds the window arithmetic
    in its own coordinates; this attribute says what it is, so that kernel
    grouping, the window and GEMM templates and kernel naming need not
    pattern-match the body.

    The op must have the loops of `kind` (parallel loops first: `n, oh,
    ow, f` then `kh, kw, c` for `conv_2d_nhwc_hwcf`; `n, oh, ow, c, m`
    then `kh, kw` for `depthwise_conv_2d_nhwc_hwcm`; `n, oh, ow, c` then
    `kh, kw` otherwise), a filter (or pooling window: `kh, kw`) of the
    kind's rank and an output with one dimension per parallel loop.

    ```mlir
    %r = tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2], dilations = [1, 1]>
        ins(%w : tensor<3x3x4x8xf32>) outs(%init : tensor<1x8x8x8xf32>) ...
    ```
  }];
  let parameters = (ins EnumParameter<Tcc_WindowKind>:$kind,
                        ArrayRefParameter<"int64_t">:$strides,
                        ArrayRefParameter<"int64_t">:$dilations);
  let assemblyFormat = [{
    `<` $kind `,` `strides` `=` `[` $strides `]` `,`
    `dilations` `=` `[` $dilations `]` `>`
  }];
  let extraClassDeclaration = [{
    /// The number of parallel and reduction loops of the window op.
    std::pair<unsigned, unsigned> getLoops() const;
    /// The rank of the op's filter (or pooling window).
    unsigned getFilterRank() const;
  }];
  let genVerifyDecl = 1;
}

#endif // TCC_CONV_TD
