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
// `tccLowerMathForShader` rewrites what Vulkan's SPIR-V cannot express
// exactly before the GPU-to-SPIR-V conversion: `math.erf` (GLSL.std.450 has
// no erf) as the rational function the OpenCL C prelude's `tcc_erf` uses,
// and `arith.minimumf`/`maximumf` as compares and selects that keep IEEE
// 754-2019's signed zeros (GLSL's FMin/FMax leave min(-0, +0) undefined,
// and upstream's expansion returns +0 there), and f32 `math.log` of a
// subnormal as the log of it scaled by 2^24 less 24 ln 2 (lavapipe's Log
// reads a subnormal's exponent as -127).
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
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
/// A float constant of `type` (a scalar or a vector splat).
Value floatConstant(PatternRewriter &rewriter, Location location, Type type,
                    double value) {
  Type element = getElementTypeOrSelf(type);
  FloatAttr scalar = rewriter.getFloatAttr(element, value);
  if (auto vector = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(
        rewriter, location, DenseElementsAttr::get(vector, Attribute(scalar)));
  return arith::ConstantOp::create(rewriter, location, scalar);
}

/// erf(x) for f32 as the odd/even rational function of x clamped to
/// [-4, 4] (the single-precision fit Eigen and XLA use; within 4.2e-7 of
/// the exact value; the OpenCL C prelude's `tcc_erf`). NaN compares false
/// on both clamps and stays NaN through the arithmetic.
struct RationalErf : public OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location location = op.getLoc();
    auto constant = [&](double value) {
      return floatConstant(rewriter, location, type, value);
    };
    Value a = op.getOperand();
    Value low = constant(-4.0), high = constant(4.0);
    Value below = arith::CmpFOp::create(rewriter, location,
                                        arith::CmpFPredicate::OLT, a, low);
    Value x = arith::SelectOp::create(rewriter, location, below, low, a);
    Value above = arith::CmpFOp::create(rewriter, location,
                                        arith::CmpFPredicate::OGT, x, high);
    x = arith::SelectOp::create(rewriter, location, above, high, x);
    Value x2 = arith::MulFOp::create(rewriter, location, x, x);
    auto horner = [&](std::initializer_list<double> coefficients) {
      auto it = coefficients.begin();
      Value acc = constant(*it++);
      for (; it != coefficients.end(); ++it)
        acc = math::FmaOp::create(rewriter, location, x2, acc, constant(*it));
      return acc;
    };
    Value p = horner({-2.72614225801306e-10, 2.77068142495902e-08,
                      -2.10102402082508e-06, -5.69250639462346e-05,
                      -7.34990630326855e-04, -2.95459980854025e-03,
                      -1.60960333262415e-02});
    Value q = horner({-1.45660718464996e-05, -2.13374055278905e-04,
                      -1.68282697438203e-03, -7.37332916720468e-03,
                      -1.42647390514189e-02});
    Value numerator = arith::MulFOp::create(rewriter, location, x, p);
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, numerator, q);
    return success();
  }
};

/// minimumf/maximumf as compares and selects: the smaller (larger) operand
/// where they compare unequal, NaN where either is NaN, and for equal
/// operands the bitwise or (and) of the two, so min(-0, +0) is -0 and
/// max(-0, +0) is +0 (equal nonzero operands have equal bits).
template <typename Op, bool isMin>
struct SignedZeroMinMax : public OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    auto element = dyn_cast<FloatType>(getElementTypeOrSelf(type));
    if (!element)
      return failure();
    Location location = op.getLoc();
    Type bitsElement = rewriter.getIntegerType(element.getWidth());
    Type bits = bitsElement;
    if (auto vector = dyn_cast<VectorType>(type))
      bits = vector.clone(bitsElement);
    Value a = op.getLhs(), b = op.getRhs();
    Value aBits = arith::BitcastOp::create(rewriter, location, bits, a);
    Value bBits = arith::BitcastOp::create(rewriter, location, bits, b);
    Value joined =
        isMin ? Value(arith::OrIOp::create(rewriter, location, aBits, bBits))
              : Value(arith::AndIOp::create(rewriter, location, aBits, bBits));
    Value equal = arith::BitcastOp::create(rewriter, location, type, joined);
    Value nan = arith::AddFOp::create(rewriter, location, a, b);
    Value unordered = arith::CmpFOp::create(
        rewriter, location, arith::CmpFPredicate::UNO, a, b);
    Value result =
        arith::SelectOp::create(rewriter, location, unordered, nan, equal);
    Value aFirst = arith::CmpFOp::create(
        rewriter, location,
        isMin ? arith::CmpFPredicate::OLT : arith::CmpFPredicate::OGT, a, b);
    Value bFirst = arith::CmpFOp::create(
        rewriter, location,
        isMin ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, a, b);
    result = arith::SelectOp::create(rewriter, location, bFirst, b, result);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, aFirst, a, result);
    return success();
  }
};
/// log(x) for f32 as log(x * 2^24) - 24 ln 2 where x is below the smallest
/// normal float (the scaling is exact for subnormals; zero, negatives and
/// NaN keep their -inf and NaN), log(x) elsewhere. The log it builds is
/// marked so that the pattern leaves it alone.
struct SubnormalLog : public OpRewritePattern<math::LogOp> {
  using OpRewritePattern::OpRewritePattern;
  static constexpr llvm::StringLiteral marker = "tcc.subnormal_scaled";

  LogicalResult matchAndRewrite(math::LogOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32() || op->hasAttr(marker))
      return failure();
    Location location = op.getLoc();
    auto constant = [&](double value) {
      return floatConstant(rewriter, location, type, value);
    };
    Value x = op.getOperand();
    Value small = arith::CmpFOp::create(rewriter, location,
                                        arith::CmpFPredicate::OLT, x,
                                        constant(0x1p-126));
    Value scaled = arith::MulFOp::create(rewriter, location, x,
                                         constant(0x1p24));
    Value input =
        arith::SelectOp::create(rewriter, location, small, scaled, x);
    auto log = math::LogOp::create(rewriter, location, input);
    log->setAttr(marker, rewriter.getUnitAttr());
    Value offset = arith::SelectOp::create(
        rewriter, location, small, constant(24.0 * 0.69314718055994530942),
        constant(0.0));
    rewriter.replaceOpWithNewOp<arith::SubFOp>(op, log, offset);
    return success();
  }
};
} // namespace

extern "C" bool tccLowerMathForShader(MlirOperation cRoot) {
  Operation *root = unwrap(cRoot);
  RewritePatternSet patterns(root->getContext());
  patterns.add<RationalErf, SubnormalLog,
               SignedZeroMinMax<arith::MinimumFOp, true>,
               SignedZeroMinMax<arith::MaximumFOp, false>>(root->getContext());
  return succeeded(applyPatternsGreedily(root, std::move(patterns)));
}

extern "C" bool tccSimplifyMath(MlirOperation cRoot) {
  Operation *root = unwrap(cRoot);
  RewritePatternSet patterns(root->getContext());
  populateMathAlgebraicSimplificationPatterns(patterns);
  patterns.add<ReciprocalOfReduciblePower>(root->getContext());
  return succeeded(applyPatternsGreedily(root, std::move(patterns)));
}
