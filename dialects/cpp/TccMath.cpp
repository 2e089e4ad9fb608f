//===- TccMath.cpp - upstream math rewrites a Rust pass applies -----------===//
//
// Upstream's algebraic simplification of the math dialect (powf by a
// constant exponent as multiplications, sqrt and rsqrt, ...) has patterns
// but no registered pass; tcc's `tcc-simplify-math` applies them through
// this entry point, with one pattern of tcc's own: a negative exponent
// whose magnitude upstream reduces (2, 3, 0.75: x^-0.75 is an LRN's) is
// the reciprocal of that power. It keeps pow's infinities and signs at
// zero: x^-2 at -0 is 1/(+0), x^-3 at -0 is 1/(-0), x^-0.75 at -0 is
// 1/(sqrt(-0) * sqrt(sqrt(-0))) = 1/(+0).
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {
/// powf(x, -c) -> 1 / powf(x, c) for c in {2, 3, 0.75}; upstream's
/// patterns then reduce powf(x, c).
struct ReciprocalOfReduciblePower : public OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::PowFOp op,
                                PatternRewriter &rewriter) const override {
    FloatAttr exponent;
    if (!matchPattern(op.getRhs(), m_Constant(&exponent)) ||
        !isa<FloatType>(op.getType()))
      return failure();
    double value = exponent.getValueAsDouble();
    if (value != -2.0 && value != -3.0 && value != -0.75)
      return failure();
    Location location = op.getLoc();
    Type type = op.getType();
    Value positive = arith::ConstantOp::create(
        rewriter, location, rewriter.getFloatAttr(type, -value));
    Value power =
        math::PowFOp::create(rewriter, location, op.getLhs(), positive);
    Value one = arith::ConstantOp::create(rewriter, location,
                                          rewriter.getFloatAttr(type, 1.0));
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, one, power);
    return success();
  }
};
} // namespace

extern "C" bool tccSimplifyMath(MlirOperation cRoot) {
  Operation *root = unwrap(cRoot);
  RewritePatternSet patterns(root->getContext());
  populateMathAlgebraicSimplificationPatterns(patterns);
  patterns.add<ReciprocalOfReduciblePower>(root->getContext());
  return succeeded(applyPatternsGreedily(root, std::move(patterns)));
}
