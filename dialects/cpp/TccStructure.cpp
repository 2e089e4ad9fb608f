//===- TccStructure.cpp - verifiers of tcc's structural attributes --------===//
//
// A kernel's root op (and its `gpu.func` after outlining) carries what the
// kernel computes as `tcc.kind`. MLIR hands every `tcc.*` attribute of an
// op to the dialect's `verifyOperationAttribute`, which checks them here,
// so that a pass that writes a wrong one fails at that pass, with the op's
// location. The kernel boundary and the convolution are ops
// (`tcc.dispatch`: TccDispatch.cpp; `tcc.conv`: TccConv.cpp), so their
// old attributes are refused.
//
//===----------------------------------------------------------------------===//

#include "TccDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace tcc;

#include "TccEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Kernel boundaries
//===----------------------------------------------------------------------===//

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
  if (name == "tcc.conv")
    return op->emitOpError()
           << "carries tcc.conv, but a convolution is the tcc.conv op, not "
              "an attribute";
  if (name == "tcc.kernel")
    return op->emitOpError()
           << "carries tcc.kernel, but a kernel is the tcc.dispatch op that "
              "holds its ops, not an attribute";
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
