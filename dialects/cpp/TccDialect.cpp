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
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

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

/// Whether `precision` names a GEMM arithmetic.
static bool isPrecision(StringRef precision) {
  return llvm::is_contained({"fp32", "tf32", "fp16", "bf16"}, precision);
}

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
    int64_t tileK, int64_t workM, int64_t workN, int64_t splitK, int64_t kLanes,
    int64_t batch, int64_t m, int64_t n, int64_t k, StringRef precision) {
  for (int64_t size : {tileM, tileN, tileK, workM, workN, splitK, kLanes,
                       batch, m, n, k})
    if (size <= 0)
      return emitError() << "GEMM tiles and shape must be positive";
  if (!isPrecision(precision))
    return emitError() << "precision must be fp32, tf32, fp16 or bf16, got '"
                       << precision << "'";
  if (tileM % workM != 0 || tileN % workN != 0)
    return emitError() << "work_m and work_n must divide tile_m and tile_n";
  if (kLanes > 1 && (workM != tileM || tileK != 1 || splitK != 1))
    return emitError() << "k_lanes above 1 (the few-row form) needs work_m = "
                          "tile_m, tile_k = 1 and split_k = 1";
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
                              int64_t workgroupSize, int64_t rows) {
  if (rows <= 0)
    return emitError() << "rows must be positive, got " << rows;
  if (rows > 1 && (workgroupSize > 32 || workgroupSize * rows > 1024 ||
                   (workgroupSize & (workgroupSize - 1)) != 0))
    return emitError() << "several rows a work-group take a power of two of "
                          "at most 32 work-items a row and at most 1024 in "
                          "all, got "
                       << workgroupSize << " x " << rows;
  return verifyWorkgroupSize(emitError, workgroupSize);
}

LogicalResult
WindowStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t workgroupSize, int64_t columns,
                           int64_t vector, int64_t workItems) {
  if (columns <= 0 || workItems <= 0)
    return emitError() << "columns and work_items must be positive";
  if (vector != 1 && vector != 4 && vector != 8 && vector != 16)
    return emitError() << "vector must be 1, 4, 8 or 16, got " << vector;
  return verifyWorkgroupSize(emitError, workgroupSize);
}

LogicalResult
AttentionStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t blockQ, int64_t blockK,
                              int64_t keyLanes) {
  if (blockQ <= 0 || blockK <= 0)
    return emitError() << "block_q and block_k must be positive, got "
                       << blockQ << " and " << blockK;
  if (keyLanes <= 0 || blockQ * keyLanes > 1024)
    return emitError() << "key_lanes must be positive and block_q x "
                          "key_lanes at most 1024 work-items, got "
                       << keyLanes;
  return success();
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef name, StringRef family,
                                 StringRef arch, StringRef api,
                                 StringRef precision, int64_t vectorWidth,
                                 int64_t maxLocalBytes,
                                 int64_t maxWorkgroupSize) {
  if (name.empty() || family.empty())
    return emitError() << "a target needs a name and a family";
  if (!llvm::is_contained({"opencl", "cuda", "vulkan"}, api))
    return emitError() << "api must be opencl, cuda or vulkan, got '" << api
                       << "'";
  if (!isPrecision(precision))
    return emitError() << "precision must be fp32, tf32, fp16 or bf16, got '"
                       << precision << "'";
  if (vectorWidth <= 0 || maxLocalBytes <= 0 || maxWorkgroupSize <= 0)
    return emitError() << "vector_width, max_local_bytes and "
                          "max_workgroup_size must be positive";
  return success();
}

//===----------------------------------------------------------------------===//
// The symbolic dimensions
//===----------------------------------------------------------------------===//

LogicalResult DimsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayAttr names, DenseI64ArrayAttr min,
                               DenseI64ArrayAttr max) {
  if (!names || !min || !max)
    return emitError() << "#tcc.dims needs names, min and max";
  size_t count = names.size();
  if (static_cast<size_t>(min.size()) != count ||
      static_cast<size_t>(max.size()) != count)
    return emitError() << "#tcc.dims has " << count << " names but "
                       << min.size() << " minimums and " << max.size()
                       << " maximums";
  llvm::StringSet<> seen;
  for (size_t i = 0; i < count; ++i) {
    auto name = dyn_cast<StringAttr>(names[i]);
    if (!name || name.getValue().empty())
      return emitError() << "#tcc.dims: every name must be a non-empty string";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "#tcc.dims names '" << name.getValue()
                         << "' twice";
    int64_t lo = min[i], hi = max[i];
    if (lo < 1 || lo > hi || hi > 2147483647)
      return emitError() << "#tcc.dims: the range of '" << name.getValue()
                         << "' must satisfy 1 <= min <= max <= 2147483647, got "
                         << lo << ".." << hi;
  }
  return success();
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
  // The rows are static; the dimensions before them may be dynamic (a
  // symbolic batch, issue 33).
  if (type.getRank() == 0 || ShapedType::isDynamic(type.getShape().back()))
    return emitOpError("expects an input of rank >= 1 with a static last dimension");
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


//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Writes a shape as `[2, 4, ?]` for diagnostics.
static std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return text;
}

/// Whether two sizes can be equal (either is dynamic or they match).
static bool sameSize(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// The checks tcc.attention and tcc.flash_attention share: query
/// [B, H, Sq, D], key and value [B, Hkv, Skv, D] with Hkv dividing H, one
/// float element type, a mask broadcastable to [B, H, Sq, Skv], a finite
/// scale, and an output of the query's shape.
/// With `widenedKeys` (the kernel op, whose loads widen every element to
/// fp32), the key and the value may each hold f16, bf16 or f32 whatever
/// the query's type: `tcc-fold-attention-casts` lets it read a half cache
/// as it is stored instead of through a widening copy.
static LogicalResult verifyAttention(Operation *op, ShapedType query,
                                     ShapedType key, ShapedType value,
                                     ShapedType mask, ShapedType output,
                                     float scale, bool widenedKeys = false) {
  for (auto [name, type] : {std::pair<StringRef, ShapedType>{"query", query},
                            {"key", key},
                            {"value", value},
                            {"output", output}})
    if (!type.hasRank() || type.getRank() != 4)
      return op->emitOpError() << "expects a rank-4 " << name
                               << " ([batch, heads, sequence, head dim]), got "
                               << Type(type);
  Type element = query.getElementType();
  if (!isa<FloatType>(element))
    return op->emitOpError() << "expects float operands, got " << element;
  for (ShapedType type : {key, value, output}) {
    Type other = type.getElementType();
    bool widened = widenedKeys && type != output &&
                   (other.isF16() || other.isBF16() || other.isF32());
    if (other != element && !widened)
      return op->emitOpError()
             << "expects one element type, got " << element << " and "
             << other;
  }
  ArrayRef<int64_t> q = query.getShape(), k = key.getShape(),
                    v = value.getShape();
  if (!sameSize(k[0], q[0]) || !sameSize(v[0], q[0]))
    return op->emitOpError() << "key " << shapeText(k) << " and value "
                             << shapeText(v) << " must have the query's batch "
                             << shapeText(q);
  if (!sameSize(k[1], v[1]) || !sameSize(k[2], v[2]))
    return op->emitOpError() << "key " << shapeText(k) << " and value "
                             << shapeText(v)
                             << " must have the same heads and sequence";
  if (!sameSize(k[3], q[3]) || !sameSize(v[3], q[3]))
    return op->emitOpError() << "key " << shapeText(k) << " and value "
                             << shapeText(v) << " must have the query's head "
                                                "dimension "
                             << shapeText(q);
  if (!ShapedType::isDynamic(k[1]) && !ShapedType::isDynamic(q[1]) &&
      (k[1] <= 0 || q[1] % k[1] != 0))
    return op->emitOpError() << "query heads (" << q[1]
                             << ") must be a multiple of key/value heads ("
                             << k[1] << ")";
  if (mask) {
    if (!mask.hasRank() || mask.getRank() != 4)
      return op->emitOpError()
             << "expects a rank-4 mask, got " << Type(mask);
    if (mask.getElementType() != element)
      return op->emitOpError() << "expects a mask of element type " << element
                               << ", got " << mask.getElementType();
    SmallVector<int64_t> scores = {q[0], q[1], q[2], k[2]};
    for (int64_t dim = 0; dim < 4; ++dim) {
      int64_t m = mask.getShape()[dim];
      if (m != 1 && !sameSize(m, scores[dim]))
        return op->emitOpError()
               << "mask " << shapeText(mask.getShape())
               << " does not broadcast to the scores " << shapeText(scores);
    }
  }
  if (output.getShape() != query.getShape() &&
      !llvm::all_of(llvm::zip(output.getShape(), q), [](auto pair) {
        return sameSize(std::get<0>(pair), std::get<1>(pair));
      }))
    return op->emitOpError() << "output " << shapeText(output.getShape())
                             << " must have the query's shape " << shapeText(q);
  if (!std::isfinite(scale))
    return op->emitOpError() << "scale must be finite, got " << scale;
  return success();
}

LogicalResult AttentionOp::verify() {
  ShapedType mask =
      getMask() ? cast<ShapedType>(getMask().getType()) : ShapedType();
  return verifyAttention(*this, cast<ShapedType>(getQuery().getType()),
                         cast<ShapedType>(getKey().getType()),
                         cast<ShapedType>(getValue().getType()), mask,
                         cast<ShapedType>(getOutput().getType()),
                         getScale().convertToFloat());
}

LogicalResult FlashAttentionOp::verify() {
  bool tensors = isa<RankedTensorType>(getInit().getType());
  for (Value operand : getOperation()->getOperands())
    if (isa<RankedTensorType>(operand.getType()) != tensors)
      return emitOpError("expects all tensors or all memrefs");
  auto init = cast<ShapedType>(getInit().getType());
  Type element = init.getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return emitOpError("expects f32, f16 or bf16 operands");
  for (Value operand : getOperation()->getOperands())
    if (!cast<ShapedType>(operand.getType()).hasStaticShape())
      return emitOpError("expects statically shaped operands");
  if (tensors != (getNumResults() == 1) ||
      (tensors && getResult()[0].getType() != init))
    return emitOpError(
        "returns init's tensor type on tensors and nothing on memrefs");
  ShapedType mask =
      getMask() ? cast<ShapedType>(getMask().getType()) : ShapedType();
  return verifyAttention(*this, cast<ShapedType>(getQuery().getType()),
                         cast<ShapedType>(getKey().getType()),
                         cast<ShapedType>(getValue().getType()), mask, init,
                         getScale().convertToFloat(), /*widenedKeys=*/true);
}

void FlashAttentionOp::getEffects(
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

/// Bufferizes tcc.flash_attention like a linalg op: the memref form writes
/// the buffer of its init.
struct FlashAttentionBufferization
    : public bufferization::DstBufferizableOpInterfaceExternalModel<
          FlashAttentionBufferization, FlashAttentionOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto attention = cast<FlashAttentionOp>(op);
    SmallVector<Value> buffers;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    Value mask = attention.getMask() ? buffers[3] : Value();
    Value init = buffers.back();
    auto bufferized = FlashAttentionOp::create(
        rewriter, op->getLoc(), TypeRange{}, buffers[0], buffers[1],
        buffers[2], mask, init, attention.getScaleAttr(),
        attention.getCausalAttr());
    bufferized->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    bufferization::replaceOpWithBufferizedValues(rewriter, op, init);
    return success();
  }
};
} // namespace

void tcc::registerBufferizationModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, TccDialect *) {
    LayerNormRowsOp::attachInterface<LayerNormRowsBufferization>(*context);
    FlashAttentionOp::attachInterface<FlashAttentionBufferization>(*context);
    attachConvBufferization(context);
    attachDispatchBufferization(context);
  });
}

#define GET_OP_CLASSES
#include "TccOps.cpp.inc"
