//===- TccStructure.cpp - verifiers of tcc's structural attributes --------===//
//
// Other dialects' ops carry tcc's structure as discardable attributes: a
// convolution rewritten into a `linalg.generic` carries `tcc.conv =
// #tcc.conv<...>` (TccConv.td), and every op of one kernel carries
// `tcc.kernel = "<name>"` (its root also `tcc.kind`) from
// `tcc-form-dispatches` until `tcc-outline-kernels` moves the group into a
// `gpu.func`. MLIR hands every `tcc.*` attribute of an op to the dialect's
// `verifyOperationAttribute`, which checks them here, so that a pass that
// breaks one (a generic rebuilt with other loops, a kernel name that is no
// identifier) fails at the pass that did it, with the op's location.
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"
#include "TccDialect.h"

#include "mlir/CAPI/IR.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace tcc;

#include "TccEnums.cpp.inc"

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

/// Checks that `op`, carrying `conv`, is a generic with the loops and
/// operands of the window op `conv` names.
static LogicalResult verifyConvGeneric(Operation *op, ConvAttr conv) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return op->emitOpError() << "carries tcc.conv, which only a "
                                "linalg.generic may carry";
  auto [parallel, reduction] = conv.getLoops();
  StringRef kind = stringifyWindowKind(conv.getKind());
  SmallVector<utils::IteratorType> iterators =
      generic.getIteratorTypesArray();
  if (iterators.size() != parallel + reduction)
    return op->emitOpError()
           << "has " << iterators.size() << " loops, but a " << kind
           << " has " << parallel + reduction << " (" << parallel
           << " parallel, then " << reduction << " reduction)";
  for (auto [index, iterator] : llvm::enumerate(iterators)) {
    bool expectParallel = index < parallel;
    if ((iterator == utils::IteratorType::parallel) != expectParallel)
      return op->emitOpError()
             << "loop " << index << " is "
             << (expectParallel ? "a reduction" : "parallel") << ", but a "
             << kind << " has " << parallel << " parallel loops, then "
             << reduction << " reduction loops";
  }
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1)
    return op->emitOpError()
           << "has " << generic.getNumDpsInputs() << " inputs and "
           << generic.getNumDpsInits() << " outputs, but a " << kind
           << " generic reads its filter (or window) and writes one output";
  auto filter = dyn_cast<ShapedType>(generic.getDpsInputs()[0].getType());
  auto output = dyn_cast<ShapedType>(generic.getDpsInits()[0].getType());
  if (!filter || !output || !filter.hasRank() || !output.hasRank())
    return op->emitOpError() << "expects a ranked filter and output";
  // A 2-D convolution's filter may be packed into panels of output
  // channels (`tcc-pack-weight-panels`: F/P x KH x KW x C x P).
  bool panels = conv.getKind() == WindowKind::Conv2dNhwcHwcf &&
                filter.getRank() == 5;
  if (filter.getRank() != conv.getFilterRank() && !panels)
    return op->emitOpError() << "has a filter of rank " << filter.getRank()
                             << ", but a " << kind << " filter has rank "
                             << conv.getFilterRank();
  if (output.getRank() != parallel)
    return op->emitOpError() << "has an output of rank " << output.getRank()
                             << ", but a " << kind << " output has rank "
                             << parallel;
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel boundaries
//===----------------------------------------------------------------------===//

/// Whether `name` can name a kernel in every back end (an OpenCL C, PTX
/// and SPIR-V entry point): a C identifier.
static bool isKernelName(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// The kernel kinds of `config::KernelKind`.
static bool isKernelKind(StringRef kind) {
  return llvm::is_contained({"elementwise", "reduction", "matmul", "softmax",
                             "layer_norm", "convolution", "attention"},
                            kind);
}

LogicalResult TccDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  Attribute value = attribute.getValue();
  if (name == "tcc.conv") {
    auto conv = dyn_cast<ConvAttr>(value);
    if (!conv)
      return op->emitOpError() << "expects tcc.conv to be a #tcc.conv "
                                  "attribute, got "
                               << value;
    return verifyConvGeneric(op, conv);
  }
  if (name == "tcc.kernel") {
    auto kernel = dyn_cast<StringAttr>(value);
    if (!kernel || !isKernelName(kernel.getValue()))
      return op->emitOpError() << "expects tcc.kernel to be a kernel name "
                                  "(a string holding a C identifier), got "
                               << value;
    // A kernel's ops sit side by side in one function body until
    // outlining: an op of one kernel inside an op of another crosses the
    // boundary.
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp())
      if (auto outer = parent->getAttrOfType<StringAttr>("tcc.kernel");
          outer && outer != kernel)
        return op->emitOpError()
               << "of kernel " << kernel << " is nested in an op of kernel "
               << outer;
    return success();
  }
  if (name == "tcc.kind") {
    auto kind = dyn_cast<StringAttr>(value);
    if (!kind || !isKernelKind(kind.getValue()))
      return op->emitOpError()
             << "expects tcc.kind to be one of \"elementwise\", "
                "\"reduction\", \"matmul\", \"softmax\", \"layer_norm\", "
                "\"convolution\", \"attention\", got "
             << value;
    return success();
  }
  return success();
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
