//===- TccConv.td - convolution windows of the tcc dialect --*- tablegen -*-===//
//
// The typed description of a convolution or pooling that
// `tcc-fold-conv-inputs` rewrote into a `linalg.generic` (its pad or its
// input producer folded into the body's loads): which window op it
// computes (and so its iteration space and operand layouts), its strides
// and dilations. The generic carries it as `tcc.conv`; the dialect's
// attribute verifier checks the generic against it (TccDialect.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_CONV_TD
#define TCC_CONV_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tcc_WindowKind : I32EnumAttr<"WindowKind",
    "the window op a `#tcc.conv` generic computes", [
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
  let summary = "a convolution or pooling computed by a linalg.generic";
  let description = [{
    Marks a `linalg.generic` as the convolution or pooling `kind` (named
    after the linalg op it replaced, whose layouts it keeps: NHWC input,
    HWCF/HWCM/HWC filter or a pooling window) with the given `strides` and
    `dilations` (height, width). The generic's body holds the window
    arithmetic in its own coordinates; this attribute says what it is, so
    that kernel grouping, the window and GEMM templates and kernel naming
    need not pattern-match the body.

    The generic it sits on must have the loops of `kind` (parallel loops
    first: `n, oh, ow, f` then `kh, kw, c` for `conv_2d_nhwc_hwcf`;
    `n, oh, ow, c, m` then `kh, kw` for `depthwise_conv_2d_nhwc_hwcm`;
    `n, oh, ow, c` then `kh, kw` otherwise), one input (the filter or the
    pooling window: `kh, kw`) of the filter's rank and one output with one
    dimension per parallel loop.

    ```mlir
    linalg.generic {...} ins(%w : tensor<3x3x4x8xf32>)
        outs(%init : tensor<1x8x8x8xf32>)
        attrs = {tcc.conv = #tcc.conv<conv_2d_nhwc_hwcf, strides = [2, 2],
                                      dilations = [1, 1]>} {...}
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
    /// The rank of the generic's input (the filter or pooling window).
    unsigned getFilterRank() const;
  }];
  let genVerifyDecl = 1;
}

#endif // TCC_CONV_TD
