//===- TccFusion.cpp - elementwise fusion with a size cap -----------------===//
//
// Upstream's elementwise fusion (the patterns `linalg-fuse-elementwise-ops`
// applies: producer-consumer fusion of generics, reshape propagation by
// expansion, fill/splat folding, linalg constant folding and the
// canonicalizations it runs with) under one more rule: two generics are
// not fused when the fused body would hold more than `maxOps` operations.
// An unbounded chain becomes one kernel whose first driver build grows
// faster than linearly with its length (PoCL: 48 s at 500 ops, over 300 s
// at 3000), while a few kernels of bounded size build in linear time.
// And one more: the int8 operands of a reduction (the quantize step in
// front of a `tcc-quantize-int8` matmul) stay a kernel of their own, since
// the GEMM template's int8 form reads plain bytes; fused, the quantize
// turned the classifier of ResNet-50 into a loop nest (0.55 ms at batch 1
// on the H100 against a few microseconds). Likewise no producer fuses
// into a contraction (a matmul generalized by reshape propagation), whose
// body must stay a multiply-add for `tcc-collapse-contractions`.
// Without `recomputeBroadcastMath` (CPUs), a producer whose body computes
// transcendental math (exp, tanh, erf, a division...) is not fused into a
// consumer that reads it broadcast over at least `kMinBroadcastFactor` times
// its own iterations: fused, the consumer recomputes the math for every
// element it broadcasts to (a squeeze-and-excitation gate's sigmoid, once
// per pixel of the image it scales), which on a CPU costs more than the
// small kernel and buffer it saves.
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <limits>

using namespace mlir;

/// Operations in a generic's body, its terminator excluded.
static int64_t bodySize(linalg::GenericOp op) {
  int64_t count = 0;
  op.getRegion().walk([&](Operation *inner) {
    if (!isa<linalg::YieldOp>(inner))
      ++count;
  });
  return count;
}

/// The fewest times a consumer's iterations must outnumber its producer's
/// for the producer's math to count as recomputed by fusion.
static constexpr int64_t kMinBroadcastFactor = 16;

/// Whether a generic's body computes math that costs far more than a load:
/// transcendental functions, square roots, powers, divisions.
static bool hasCostlyMath(linalg::GenericOp op) {
  bool costly = false;
  op.getRegion().walk([&](Operation *inner) {
    StringRef name = inner->getName().getStringRef();
    if (name.starts_with("math.") && name != "math.absf" &&
        name != "math.absi" && name != "math.fma" &&
        name != "math.copysign" && name != "math.floor" &&
        name != "math.ceil" && name != "math.round" &&
        name != "math.roundeven" && name != "math.trunc")
      costly = true;
    if (isa<arith::DivFOp, arith::RemFOp>(inner))
      costly = true;
  });
  return costly;
}

/// The product of a generic's static loop ranges (a dynamic range counts
/// as large).
static int64_t iterations(linalg::GenericOp op) {
  int64_t count = 1;
  for (int64_t range : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return std::numeric_limits<int64_t>::max() / 2;
    count = count > std::numeric_limits<int64_t>::max() / std::max<int64_t>(range, 1)
                ? std::numeric_limits<int64_t>::max() / 2
                : count * std::max<int64_t>(range, 1);
  }
  return count;
}

/// Whether fusing `fused`'s producer into its consumer would recompute
/// the producer's costly math for each element the consumer broadcasts it
/// to.
static bool recomputesBroadcastMath(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (!producer || !consumer)
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(fused);
  if (map.isPermutation() || !hasCostlyMath(producer))
    return false;
  return iterations(consumer) >= kMinBroadcastFactor * iterations(producer);
}

extern "C" bool tccFuseElementwise(MlirOperation cRoot, int64_t maxOps,
                                   bool recomputeBroadcastMath) {
  Operation *root = unwrap(cRoot);
  MLIRContext *context = root->getContext();
  RewritePatternSet patterns(context);
  // Upstream's rule: fuse a producer only into its single user.
  linalg::ControlFusionFn singleUse = [](OpOperand *fused) {
    Operation *producer = fused->get().getDefiningOp();
    return producer && producer->hasOneUse();
  };
  // Whether `fused` is an int8 operand of a generic that reduces.
  auto int8ReductionOperand = [](OpOperand *fused) {
    auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
    if (!consumer || consumer.getNumReductionLoops() == 0)
      return false;
    auto type = dyn_cast<ShapedType>(fused->get().getType());
    return type && type.getElementType().isInteger(8);
  };
  // Whether `fused` is an operand of a contraction (a reduction whose
  // body is a multiply-accumulate, as reshape propagation leaves a
  // batch_matmul): fused in, a producer makes its body more than a
  // multiply-add, and `tcc-collapse-contractions` can no longer give it
  // back its named form for the GEMM template (ResNet-50's classifier,
  // with the average pool's division fused into it, ran as a reduction
  // loop nest: 2.7 ms per call on 2 CPU cores).
  auto contractionOperand = [](OpOperand *fused) {
    auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
    return consumer && consumer.getNumReductionLoops() > 0 &&
           linalg::isaContractionOpInterface(consumer);
  };
  // And tcc's: not past `maxOps` operations in one body (0: no cap), not
  // into an int8 operand of a reduction, nor into a contraction.
  linalg::ControlFusionFn bounded = [singleUse, int8ReductionOperand,
                                     contractionOperand, maxOps,
                                     recomputeBroadcastMath](OpOperand *fused) {
    if (!singleUse(fused) || int8ReductionOperand(fused) ||
        contractionOperand(fused))
      return false;
    if (!recomputeBroadcastMath && recomputesBroadcastMath(fused))
      return false;
    if (maxOps <= 0)
      return true;
    auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
    auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
    if (!producer || !consumer)
      return true;
    return bodySize(producer) + bodySize(consumer) <= maxOps;
  };
  linalg::populateElementwiseOpsFusionPatterns(patterns, bounded);
  linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, singleUse);
  tensor::populateBubbleUpExpandShapePatterns(patterns);
  affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
  linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
  context->getLoadedDialect<linalg::LinalgDialect>()
      ->getCanonicalizationPatterns(patterns);
  linalg::populateConstantFoldLinalgOperations(patterns, singleUse);
  // Top-down, as upstream does, for compile time.
  GreedyRewriteConfig config;
  config.setUseTopDownTraversal(true);
  return succeeded(applyPatternsGreedily(root, std::move(patterns), config));
}
