//===- TccLinalg.cpp - linalg transformations tcc applies op by op --------===//
//
// Upstream linalg transformations that the C API does not expose, applied to
// one op chosen by a Rust pass: moving parallel iteration dimensions
// outermost (so a loop nest maps every output dimension onto work-items),
// rewriting a named op as a linalg.generic, and lowering an op to a
// parallel loop nest.
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

extern "C" int tccLinalgHoistParallelDims(MlirOperation cOp) {
  Operation *op = unwrap(cOp);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return -1;
  SmallVector<utils::IteratorType> iterators =
      linalgOp.getIteratorTypesArray();
  SmallVector<unsigned> permutation;
  for (auto [index, type] : llvm::enumerate(iterators))
    if (type == utils::IteratorType::parallel)
      permutation.push_back(index);
  for (auto [index, type] : llvm::enumerate(iterators))
    if (type != utils::IteratorType::parallel)
      permutation.push_back(index);
  bool identity = true;
  for (auto [position, dim] : llvm::enumerate(permutation))
    identity &= position == dim;
  if (identity)
    return 0;

  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  SmallVector<NamedAttribute> discardable(op->getDiscardableAttrs());
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic) {
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, linalgOp);
    if (failed(generalized))
      return -1;
    generic = *generalized;
    for (NamedAttribute attribute : discardable)
      generic->setAttr(attribute.getName(), attribute.getValue());
  }
  if (failed(linalg::interchangeGenericOp(rewriter, generic, permutation)))
    return -1;
  return 1;
}

extern "C" bool tccLinalgGeneralize(MlirOperation cOp) {
  Operation *op = unwrap(cOp);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || isa<linalg::GenericOp>(op))
    return false;
  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  SmallVector<NamedAttribute> discardable(op->getDiscardableAttrs());
  FailureOr<linalg::GenericOp> generic =
      linalg::generalizeNamedOp(rewriter, linalgOp);
  if (failed(generic))
    return false;
  for (NamedAttribute attribute : discardable)
    (*generic)->setAttr(attribute.getName(), attribute.getValue());
  return true;
}

extern "C" bool tccLinalgLowerToParallelLoops(MlirOperation cOp) {
  Operation *op = unwrap(cOp);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics())
    return false;
  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  if (failed(linalg::linalgOpToParallelLoops(rewriter, linalgOp)))
    return false;
  rewriter.eraseOp(op);
  return true;
}
