//===- TccConv.cpp - the convolution op of the tcc dialect ----------------===//
//
// `tcc.conv` (TccOps.td) is the convolution or pooling that
// `tcc-fold-conv-inputs` makes when it folds a convolution's padding or
// input producer into its loads: a structured op in the form of a
// `linalg.generic`, with its window (`#tcc.conv`, TccConv.td) as a typed
// attribute. This file holds the window attribute's helpers and verifier,
// the op's assembly pieces (iterator types printed as `[parallel, ...]`,
// body arguments named `%in`/`%out` as a generic's), its verifier (the
// window's loops and operand ranks), its memory effects and
// speculatability (as upstream's for linalg ops, so that CSE, DCE and
// hoisting treat it as a generic), its bufferization model and the C
// interface.
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"
#include "TccDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace tcc;

//===----------------------------------------------------------------------===//
// #tcc.conv
//===----------------------------------------------------------------------===//

std::pair<unsigned, unsigned> ConvAttr::getLoops() const {
  switch (getKind()) {
  case WindowKind::Conv2dNhwcHwcf:
    return {4, 3}; // n, oh, ow, f | kh, kw, c
  case WindowKind::DepthwiseConv2dNhwcHwcm:
    return {5, 2}; // n, oh, ow, c, m | kh, kw
  case WindowKind::DepthwiseConv2dNhwcHwc:
  case WindowKind::PoolingNhwcMax:
  case WindowKind::PoolingNhwcSum:
    return {4, 2}; // n, oh, ow, c | kh, kw
  }
  llvm_unreachable("unknown window kind");
}

unsigned ConvAttr::getFilterRank() const {
  switch (getKind()) {
  case WindowKind::Conv2dNhwcHwcf:          // kh, kw, c, f
  case WindowKind::DepthwiseConv2dNhwcHwcm: // kh, kw, c, m
    return 4;
  case WindowKind::DepthwiseConv2dNhwcHwc: // kh, kw, c
    return 3;
  case WindowKind::PoolingNhwcMax: // the window: kh, kw
  case WindowKind::PoolingNhwcSum:
    return 2;
  }
  llvm_unreachable("unknown window kind");
}

LogicalResult ConvAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               WindowKind kind, ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || dilations.size() != 2)
    return emitError() << "expects 2 strides and 2 dilations (height, width), "
                          "got "
                       << strides.size() << " and " << dilations.size();
  for (int64_t value : llvm::concat<const int64_t>(strides, dilations))
    if (value <= 0)
      return emitError() << "strides and dilations must be positive, got "
                         << value;
  return success();
}

//===----------------------------------------------------------------------===//
// tcc.conv
//===----------------------------------------------------------------------===//

/// `[parallel, reduction]`: the iterator types as linalg.generic prints
/// them, without the attribute's `#linalg.iterator_type<...>` wrapping.
ParseResult tcc::parseIteratorTypes(OpAsmParser &parser,
                                    ArrayAttr &iteratorTypes) {
  SmallVector<Attribute> types;
  auto parseOne = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef keyword;
    if (parser.parseKeyword(&keyword))
      return failure();
    std::optional<utils::IteratorType> type =
        utils::symbolizeIteratorType(keyword);
    if (!type)
      return parser.emitError(loc)
             << "expected 'parallel' or 'reduction', got '" << keyword << "'";
    types.push_back(linalg::IteratorTypeAttr::get(parser.getContext(), *type));
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parseOne))
    return failure();
  iteratorTypes = parser.getBuilder().getArrayAttr(types);
  return success();
}

void tcc::printIteratorTypes(OpAsmPrinter &printer, Operation *,
                             ArrayAttr iteratorTypes) {
  printer << "[";
  llvm::interleaveComma(iteratorTypes, printer, [&](Attribute type) {
    printer << utils::stringifyIteratorType(
        cast<linalg::IteratorTypeAttr>(type).getValue());
  });
  printer << "]";
}

void ConvOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  // As linalg.generic names them.
  auto linalgOp = cast<linalg::LinalgOp>(getOperation());
  for (Value argument : linalgOp.getRegionInputArgs())
    setNameFn(argument, "in");
  for (Value argument : linalgOp.getRegionOutputArgs())
    setNameFn(argument, "out");
}

LogicalResult ConvOp::verify() {
  ConvAttr window = getWindow();
  auto [parallel, reduction] = window.getLoops();
  StringRef kind = stringifyWindowKind(window.getKind());
  SmallVector<utils::IteratorType> iterators = getIteratorTypesArray();
  if (iterators.size() != parallel + reduction)
    return emitOpError() << "has " << iterators.size() << " loops, but a "
                         << kind << " has " << parallel + reduction << " ("
                         << parallel << " parallel, then " << reduction
                         << " reduction)";
  for (auto [index, iterator] : llvm::enumerate(iterators)) {
    bool expectParallel = index < parallel;
    if ((iterator == utils::IteratorType::parallel) != expectParallel)
      return emitOpError() << "loop " << index << " is "
                           << (expectParallel ? "a reduction" : "parallel")
                           << ", but a " << kind << " has " << parallel
                           << " parallel loops, then " << reduction
                           << " reduction loops";
  }
  auto filter = cast<ShapedType>(getFilter().getType());
  auto output = cast<ShapedType>(getInit().getType());
  if (!filter.hasRank() || !output.hasRank())
    return emitOpError() << "expects a ranked filter and output";
  if (isa<RankedTensorType>(filter) != isa<RankedTensorType>(output))
    return emitOpError() << "expects a filter and an output that are both "
                            "tensors or both memrefs";
  // A 2-D convolution's filter may be packed into panels of output
  // channels (`tcc-pack-weight-panels`: F/P x KH x KW x C x P).
  bool panels =
      window.getKind() == WindowKind::Conv2dNhwcHwcf && filter.getRank() == 5;
  if (filter.getRank() != window.getFilterRank() && !panels)
    return emitOpError() << "has a filter of rank " << filter.getRank()
                         << ", but a " << kind << " filter has rank "
                         << window.getFilterRank();
  if (output.getRank() != parallel)
    return emitOpError() << "has an output of rank " << output.getRank()
                         << ", but a " << kind << " output has rank "
                         << parallel;
  return success();
}

void ConvOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // As upstream's linalg ops: a memref filter is read, a memref output is
  // written (and read when the body reads its element).
  auto linalgOp = cast<linalg::LinalgOp>(getOperation());
  if (isa<MemRefType>(getFilter().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getFilterMutable(),
                         /*stage=*/0, /*effectOnFullRegion=*/true,
                         SideEffects::DefaultResource::get());
  OpOperand &init = getInitMutable();
  if (!isa<MemRefType>(init.get().getType()))
    return;
  if (linalgOp.payloadUsesValueFromOperand(&init))
    effects.emplace_back(MemoryEffects::Read::get(), &init, /*stage=*/0,
                         /*effectOnFullRegion=*/true,
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &init, /*stage=*/0,
                       /*effectOnFullRegion=*/true,
                       SideEffects::DefaultResource::get());
}

Speculation::Speculatability ConvOp::getSpeculatability() {
  // As upstream's linalg ops: on tensors, as speculatable as its body.
  if (!hasPureTensorSemantics())
    return Speculation::NotSpeculatable;
  return Speculation::RecursivelySpeculatable;
}

namespace {
/// Bufferizes tcc.conv as upstream bufferizes a linalg op: the filter is
/// read where the body reads it, the output is written (and read where
/// the body reads its element), and the memref form takes the body over.
struct ConvBufferization
    : public bufferization::DstBufferizableOpInterfaceExternalModel<
          ConvBufferization, ConvOp> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &opOperand,
                              const bufferization::AnalysisState &) const {
    return cast<linalg::LinalgOp>(op).payloadUsesValueFromOperand(&opOperand);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto conv = cast<ConvOp>(op);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(op);
    if (conv.hasPureBufferSemantics())
      return success();
    if (!conv.hasPureTensorSemantics())
      return op->emitError() << "op does not have pure tensor semantics";
    FailureOr<Value> filter =
        bufferization::getBuffer(rewriter, conv.getFilter(), options, state);
    if (failed(filter))
      return failure();
    FailureOr<Value> init =
        bufferization::getBuffer(rewriter, conv.getInit(), options, state);
    if (failed(init))
      return failure();
    rewriter.setInsertionPoint(op);
    OperationState bufferized(op->getLoc(), op->getName(),
                              ValueRange{*filter, *init}, TypeRange{},
                              op->getAttrs());
    bufferized.addRegion();
    Operation *created = Operation::create(bufferized);
    created->getRegion(0).getBlocks().splice(
        created->getRegion(0).begin(), op->getRegion(0).getBlocks());
    rewriter.insert(created);
    bufferization::replaceOpWithBufferizedValues(rewriter, op, *init);
    return success();
  }
};
} // namespace

void tcc::attachConvBufferization(MLIRContext *context) {
  ConvOp::attachInterface<ConvBufferization>(*context);
}

//===----------------------------------------------------------------------===//
// C interface
//===----------------------------------------------------------------------===//

MlirAttribute tccConvAttrGet(MlirContext context, int32_t kind,
                             const int64_t strides[2],
                             const int64_t dilations[2]) {
  MLIRContext *ctx = unwrap(context);
  // A pass that writes one declares the tcc dialect as a dependency;
  // without it loaded the attribute cannot exist.
  if (!ctx->getLoadedDialect<TccDialect>())
    return MlirAttribute{nullptr};
  std::optional<WindowKind> windowKind =
      symbolizeWindowKind(static_cast<uint32_t>(kind));
  if (!windowKind)
    return MlirAttribute{nullptr};
  auto emitError = [&] { return mlir::emitError(UnknownLoc::get(ctx)); };
  return wrap(ConvAttr::getChecked(emitError, ctx, *windowKind,
                                   ArrayRef<int64_t>(strides, 2),
                                   ArrayRef<int64_t>(dilations, 2)));
}

bool tccConvAttrRead(MlirAttribute attr, int32_t *kind, int64_t strides[2],
                     int64_t dilations[2]) {
  auto conv = dyn_cast_or_null<ConvAttr>(unwrap(attr));
  if (!conv)
    return false;
  *kind = static_cast<int32_t>(conv.getKind());
  for (int i = 0; i < 2; ++i) {
    strides[i] = conv.getStrides()[i];
    dilations[i] = conv.getDilations()[i];
  }
  return true;
}

MlirAttribute tccConvOpGetWindow(MlirOperation op) {
  auto conv = dyn_cast<ConvOp>(unwrap(op));
  if (!conv)
    return MlirAttribute{nullptr};
  return wrap(conv.getWindow());
}
