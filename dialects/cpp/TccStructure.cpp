//===- TccStructure.cpp - verifiers of tcc's structural attributes --------===//
//
// Other dialects' ops carry the kernel boundary as discardable attributes:
// every op of one kernel carries `tcc.kernel = "<name>"` (its root also
// `tcc.kind`) from `tcc-form-dispatches` until `tcc-outline-kernels` moves
// the group into a `gpu.func`. MLIR hands every `tcc.*` attribute of an op
// to the dialect's `verifyOperationAttribute`, which checks them here, so
// that a pass that breaks one (a kernel name that is no identifier, an op
// of one kernel inside another's) fails at the pass that did it, with the
// op's location. (The convolution is an op, `tcc.conv`: TccConv.cpp.)
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
  if (name == "tcc.conv")
    return op->emitOpError()
           << "carries tcc.conv, but a convolution is the tcc.conv op, not "
              "an attribute";
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
