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

// Collapses each run of consecutive dimensions of one iterator type of a
// contraction generic that every operand indexes contiguously and in
// order (as upstream's reshape propagation leaves a flatten folded into
// the matmul after it: a K of C x H x W; or rows of 1 x 1 before a
// classifier) into one dimension, then rewrites the generic as the named
// op it now is (a batch_matmul) where it is one.
// Returns 1 when the op was replaced, 0 when it is not such a contraction
// or nothing collapses, -1 on failure.
extern "C" int tccLinalgCollapseContraction(MlirOperation cOp) {
  Operation *op = unwrap(cOp);
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      !linalg::isaContractionOpInterface(generic))
    return 0;
  SmallVector<utils::IteratorType> iterators =
      generic.getIteratorTypesArray();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices run;
  auto flush = [&]() {
    if (run.size() > 1)
      groups.push_back(run);
    run.clear();
  };
  // Runs of one iterator type: reduction dimensions (a flattened K) and,
  // in a float contraction, parallel ones (the unit rows of a 1x1 feature
  // map's classifier, 1 x 1 x C before the matmul), each run extended
  // while every operand indexes it contiguously and in order. An integer
  // classifier (int8 after `tcc-quantize-int8`) keeps its rows: as a
  // generic it takes the row-reduction template, while an int8
  // batch_matmul of one row would run as a loop nest.
  bool floats = isa<FloatType>(
      getElementTypeOrSelf(generic.getDpsInits()[0].getType()));
  for (auto [index, type] : llvm::enumerate(iterators)) {
    ReassociationIndices candidate = run;
    candidate.push_back(index);
    bool mergeable = type == utils::IteratorType::reduction || floats;
    if (!mergeable) {
      flush();
      continue;
    }
    if (run.empty()) {
      run = candidate;
    } else if (iterators[run.front()] == type &&
               linalg::areDimSequencesPreserved(maps, candidate)) {
      run = candidate;
    } else {
      flush();
      run.push_back(index);
    }
  }
  flush();
  if (groups.empty())
    return 0;
  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::CollapseResult> collapsed =
      linalg::collapseOpIterationDims(generic, groups, rewriter);
  if (failed(collapsed))
    return -1;
  rewriter.replaceOp(op, collapsed->results);
  // Named only when it is exactly a batch_matmul (row-major A and B): the
  // GEMM template matches that form, and upstream's specialization of a
  // transposed operand gives a batch_matmul its verifier rejects.
  auto result =
      dyn_cast<linalg::GenericOp>(collapsed->collapsedOp.getOperation());
  if (result && result.getNumDpsInputs() == 2 &&
      result.getNumLoops() == 4) {
    MLIRContext *context = op->getContext();
    AffineExpr b, m, n, k;
    bindDims(context, b, m, n, k);
    SmallVector<AffineMap> batchMatmul = {
        AffineMap::get(4, 0, {b, m, k}, context),
        AffineMap::get(4, 0, {b, k, n}, context),
        AffineMap::get(4, 0, {b, m, n}, context)};
    if (result.getIndexingMapsArray() == batchMatmul) {
      rewriter.setInsertionPoint(result);
      (void)linalg::specializeGenericOp(rewriter, result);
    }
  }
  return 1;
}
