//===- TccDialect.cpp - verifiers of the tcc dialect ----------------------===//
//
// The op classes come from TccOps.td through mlir-tblgen (run by build.rs);
// this file holds the dialect initialisation and the hand-written verifiers
// that ODS constraints cannot express (axis ranges, shape relations), of the
// ops and of the kernel-strategy attributes (TccAttrs.td).
//
//===----------------------------------------------------------------------===//

#include "TccDialect.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace tcc;

#include "TccOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "TccAttrs.cpp.inc"

void TccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TccOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "TccAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Kernel strategies
//===----------------------------------------------------------------------===//

/// Checks that a work-group size is positive.
static LogicalResult
verifyWorkgroupSize(function_ref<InFlightDiagnostic()> emitError,
                    int64_t workgroupSize) {
  if (workgroupSize <= 0)
    return emitError() << "workgroup_size must be positive, got "
                       << workgroupSize;
  return success();
}

LogicalResult
LoopsStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t workgroupSize, int64_t maxWorkgroups) {
  if (maxWorkgroups < 0)
    return emitError() << "max_workgroups must be 0 (no limit) or positive, "
                          "got "
                       << maxWorkgroups;
  return verifyWorkgroupSize(emitError, workgroupSize);
}

LogicalResult GemmStrategyAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t tileM, int64_t tileN,
    int64_t tileK, int64_t workM, int64_t workN, int64_t splitK, int64_t batch,
    int64_t m, int64_t n, int64_t k) {
  for (int64_t size : {tileM, tileN, tileK, workM, workN, splitK, batch, m, n,
                       k})
    if (size <= 0)
      return emitError() << "GEMM tiles and shape must be positive";
  if (tileM % workM != 0 || tileN % workN != 0)
    return emitError() << "work_m and work_n must divide tile_m and tile_n";
  return success();
}

LogicalResult
RowReduceStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t workgroupSize) {
  return verifyWorkgroupSize(emitError, workgroupSize);
}

LogicalResult
SoftmaxStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t workgroupSize) {
  return verifyWorkgroupSize(emitError, workgroupSize);
}

LogicalResult
LayerNormStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t workgroupSize) {
  return verifyWorkgroupSize(emitError, workgroupSize);
}

LogicalResult
WindowStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t workgroupSize, int64_t columns,
                           int64_t vector, int64_t workItems) {
  if (columns <= 0 || workItems <= 0)
    return emitError() << "columns and work_items must be positive";
  if (vector != 1 && vector != 4)
    return emitError() << "vector must be 1 or 4, got " << vector;
  return verifyWorkgroupSize(emitError, workgroupSize);
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

LogicalResult LayerNormRowsOp::verify() {
  auto type = dyn_cast<ShapedType>(getInput().getType());
  auto initType = dyn_cast<ShapedType>(getInit().getType());
  auto scaleType = dyn_cast<ShapedType>(getScale().getType());
  auto biasType = dyn_cast<ShapedType>(getBias().getType());
  if (!type.hasRank() || !initType.hasRank() || !scaleType.hasRank() ||
      !biasType.hasRank())
    return emitOpError("expects ranked operands");
  bool tensors = isa<RankedTensorType>(type);
  for (Type other : {initType, scaleType, biasType})
    if (isa<RankedTensorType>(other) != tensors)
      return emitOpError("expects all tensors or all memrefs");
  if (!type.getElementType().isF32() || initType.getElementType() !=
      type.getElementType() || scaleType.getElementType() != type.getElementType()
      || biasType.getElementType() != type.getElementType())
    return emitOpError("expects f32 operands");
  if (type.getRank() == 0 || !type.hasStaticShape())
    return emitOpError("expects a statically shaped input of rank >= 1");
  if (initType.getShape() != type.getShape())
    return emitOpError("init must have the input's shape");
  ArrayRef<int64_t> row = type.getShape().take_back();
  if (scaleType.getShape() != row || biasType.getShape() != row)
    return emitOpError() << "scale and bias must have the shape of a row ["
                         << row.front() << "]";
  if (tensors != (getNumResults() == 1) || (tensors && getResult()[0].getType() != initType))
    return emitOpError("returns init's tensor type on tensors and nothing on memrefs");
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError() << "epsilon must be positive, got "
                         << getEpsilon().convertToFloat();
  return success();
}

void LayerNormRowsOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (&operand == &getInitMutable())
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

namespace {
/// Bufferizes tcc.layer_norm_rows like a linalg op: the memref form writes
/// the buffer of its init.
struct LayerNormRowsBufferization
    : public bufferization::DstBufferizableOpInterfaceExternalModel<
          LayerNormRowsBufferization, LayerNormRowsOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto rows = cast<LayerNormRowsOp>(op);
    SmallVector<Value> buffers;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    auto bufferized = LayerNormRowsOp::create(
        rewriter, op->getLoc(), TypeRange{}, buffers[0], buffers[1],
        buffers[2], buffers[3], rows.getEpsilonAttr());
    bufferized->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    bufferization::replaceOpWithBufferizedValues(rewriter, op, buffers[3]);
    return success();
  }
};
} // namespace

void tcc::registerBufferizationModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, TccDialect *) {
    LayerNormRowsOp::attachInterface<LayerNormRowsBufferization>(*context);
  });
}

#define GET_OP_CLASSES
#include "TccOps.cpp.inc"
