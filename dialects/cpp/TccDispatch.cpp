//===- TccDispatch.cpp - the kernel boundary op of the tcc dialect --------===//
//
// `tcc.dispatch` (TccOps.td) holds the ops of one kernel in its region,
// from `tcc-form-dispatches` until `tcc-outline-kernels` moves them into a
// `gpu.func`. This file holds its verifier (a kernel name every back end
// can use as an entry point, yields matching the results, no kernel
// inside another) and its bufferization model: on tensors the results
// are the values the region yields, so the model lets one-shot
// bufferization see through the op (each result the same buffer as the
// value yielded for it, as upstream does for `scf.execute_region`); the
// memref form has no results: the buffers it writes, allocations
// included, live outside it.
//
//===----------------------------------------------------------------------===//

#include "TccDialect.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace tcc;

/// Whether `name` can name a kernel in every back end (an OpenCL C, PTX
/// and SPIR-V entry point): a C identifier.
bool tcc::isKernelName(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

YieldOp DispatchOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult DispatchOp::verify() {
  if (!isKernelName(getKernel()))
    return emitOpError() << "expects its kernel name to be a C identifier, "
                            "got \""
                         << getKernel() << "\"";
  Block &body = getBody().front();
  if (body.empty() || !isa<YieldOp>(body.back()))
    return emitOpError() << "expects its region to end in tcc.yield";
  TypeRange yielded = getYield().getValues().getTypes();
  if (yielded != getResultTypes())
    return emitOpError() << "yields " << yielded.size()
                         << " values of types (" << yielded
                         << ") for results of types (" << getResultTypes()
                         << ")";
  WalkResult nested = getBody().walk([&](DispatchOp inner) {
    inner.emitOpError() << "of kernel \"" << inner.getKernel()
                        << "\" is nested in kernel \"" << getKernel()
                        << "\": a kernel is one launch";
    return WalkResult::interrupt();
  });
  if (nested.wasInterrupted())
    return failure();
  return success();
}

namespace {
/// One-shot bufferization of `tcc.dispatch`: the op has no operands, and
/// each tensor result is the buffer of the value its yield gives back
/// (equivalent, so that a kernel writing in place stays in place); the
/// memref form takes the region over, whose yield then gives buffers.
struct DispatchBufferization
    : public bufferization::BufferizableOpInterface::ExternalModel<
          DispatchBufferization, DispatchOp> {
  bufferization::AliasingOpOperandList
  getAliasingOpOperands(Operation *op, Value value,
                        const bufferization::AnalysisState &) const {
    auto dispatch = cast<DispatchOp>(op);
    unsigned index = cast<OpResult>(value).getResultNumber();
    return {{&dispatch.getYield()->getOpOperand(index),
             bufferization::BufferRelation::Equivalent,
             /*isDefinite=*/true}};
  }

  bool isWritable(Operation *, Value, const bufferization::AnalysisState &) const {
    return true;
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &,
                          bufferization::BufferizationState &) const {
    auto dispatch = cast<DispatchOp>(op);
    Block &body = dispatch.getBody().front();
    // The allocations bufferization made inside (copies of what a kernel
    // may not overwrite, buffers of its results) move out in front of the
    // op, with whatever computes their sizes: on memrefs a kernel only
    // writes buffers that live outside it.
    for (Operation &inner : llvm::make_early_inc_range(body.without_terminator()))
      if (isa<memref::AllocOp, memref::AllocaOp>(inner))
        if (failed(hoistBefore(&inner, op)))
          return inner.emitOpError()
                 << "sizes a buffer of kernel \"" << dispatch.getKernel()
                 << "\" from values computed inside it";
    // The yield, nested, was bufferized first: it gives the buffers.
    auto yield = dispatch.getYield();
    SmallVector<Value> buffers(yield.getValues());
    for (Value buffer : buffers)
      if (Operation *def = buffer.getDefiningOp();
          def && def->getParentOp() == op && failed(hoistBefore(def, op)))
        return def->emitOpError()
               << "makes a buffer that kernel \"" << dispatch.getKernel()
               << "\" returns, but not as an allocation or a view of one "
                  "that can live outside it";
    rewriter.setInsertionPoint(yield);
    rewriter.replaceOpWithNewOp<YieldOp>(yield, ValueRange{});
    rewriter.setInsertionPoint(op);
    auto bufferized = DispatchOp::create(rewriter, op->getLoc(), TypeRange{},
                                         dispatch.getKernel());
    bufferized->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    bufferized.getBody().takeBody(dispatch.getBody());
    bufferization::replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }

private:
  /// Moves `inner` (an op in `dispatch`'s block) in front of `dispatch`,
  /// after the ops of that block it reads; fails where one of those has
  /// effects other than allocating (so it must stay in the kernel).
  static LogicalResult hoistBefore(Operation *inner, Operation *dispatch) {
    if (inner->getParentOp() != dispatch)
      return success();
    if (!isa<memref::AllocOp, memref::AllocaOp>(inner) && !isPure(inner))
      return failure();
    for (Value operand : inner->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && failed(hoistBefore(def, dispatch)))
        return failure();
    inner->moveBefore(dispatch);
    return success();
  }
};

/// One-shot bufferization of `tcc.yield`: it reads what it yields, in
/// place (the dispatch's result is that buffer).
struct YieldBufferization
    : public bufferization::BufferizableOpInterface::ExternalModel<
          YieldBufferization, YieldOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const bufferization::AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const bufferization::AnalysisState &) const {
    return false;
  }
  bufferization::AliasingValueList
  getAliasingValues(Operation *op, OpOperand &operand,
                    const bufferization::AnalysisState &) const {
    return {{op->getParentOp()->getResult(operand.getOperandNumber()),
             bufferization::BufferRelation::Equivalent,
             /*isDefinite=*/true}};
  }
  bool mustBufferizeInPlace(Operation *, OpOperand &,
                            const bufferization::AnalysisState &) const {
    return true;
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    SmallVector<Value> values;
    for (Value value : op->getOperands()) {
      if (!isa<TensorType>(value.getType())) {
        values.push_back(value);
        continue;
      }
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, value, options, state);
      if (failed(buffer))
        return failure();
      values.push_back(*buffer);
    }
    bufferization::replaceOpWithNewBufferizedOp<YieldOp>(rewriter, op, values);
    return success();
  }
};
} // namespace

void tcc::attachDispatchBufferization(MLIRContext *context) {
  DispatchOp::attachInterface<DispatchBufferization>(*context);
  YieldOp::attachInterface<YieldBufferization>(*context);
}
