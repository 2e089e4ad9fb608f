//===- TccDialect.cpp - verifiers of the tcc dialect ----------------------===//
//
// The op classes come from TccOps.td through mlir-tblgen (run by build.rs);
// this file holds the dialect initialisation and the hand-written verifiers
// that ODS constraints cannot express (axis ranges, shape relations).
//
//===----------------------------------------------------------------------===//

#include "TccDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace tcc;

#include "TccOpsDialect.cpp.inc"

void TccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TccOps.cpp.inc"
      >();
}

/// Checks that `axis` names a dimension of a tensor of rank `rank`
/// (negative values count from the back).
static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return op->emitOpError() << "axis " << axis
                             << " is out of range for a tensor of rank "
                             << rank << " (expected " << -rank
                             << " <= axis < " << rank << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type.getRank() == 0)
    return emitOpError("expects an input of rank >= 1");
  return verifyAxis(*this, static_cast<int64_t>(getAxis()), type.getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type.getRank() == 0)
    return emitOpError("expects an input of rank >= 1");
  return verifyAxis(*this, static_cast<int64_t>(getAxis()), type.getRank());
}

LogicalResult LayerNormOp::verify() {
  auto type = cast<RankedTensorType>(getInput().getType());
  auto scaleType = cast<RankedTensorType>(getScale().getType());
  int64_t rank = type.getRank();
  if (rank == 0)
    return emitOpError("expects an input of rank >= 1");
  // I64Attr accessors return uint64_t: read the axis back as signed.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (failed(verifyAxis(*this, axis, rank)))
    return failure();
  if (scaleType.getElementType() != type.getElementType())
    return emitOpError() << "scale element type " << scaleType.getElementType()
                         << " does not match input element type "
                         << type.getElementType();
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  if (scaleType.getShape() != normalized) {
    std::string expected;
    llvm::raw_string_ostream os(expected);
    llvm::interleave(normalized, os, "x");
    return emitOpError() << "scale and bias must have the shape of the "
                            "normalized dimensions ["
                         << expected << "], got " << scaleType;
  }
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError() << "epsilon must be positive, got "
                         << getEpsilon().convertToFloat();
  return success();
}

LogicalResult GeluOp::verify() {
  StringRef mode = getApproximate();
  if (mode != "none" && mode != "tanh")
    return emitOpError() << "approximate must be \"none\" or \"tanh\", got \""
                         << mode << "\"";
  return success();
}

#define GET_OP_CLASSES
#include "TccOps.cpp.inc"
