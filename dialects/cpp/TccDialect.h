//===- TccDialect.h - the tcc dialect (C++ side) ---------------------------===//
#ifndef TCC_DIALECT_H
#define TCC_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TccOpsDialect.h.inc"

#include "TccEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "TccAttrs.h.inc"

namespace tcc {
/// The custom directive of tcc.conv's `iterator_types` (TccConv.cpp).
mlir::ParseResult parseIteratorTypes(mlir::OpAsmParser &parser,
                                     mlir::ArrayAttr &iteratorTypes);
void printIteratorTypes(mlir::OpAsmPrinter &printer, mlir::Operation *op,
                        mlir::ArrayAttr iteratorTypes);
} // namespace tcc

#define GET_OP_CLASSES
#include "TccOps.h.inc"

namespace mlir {
class DialectRegistry;
}

namespace tcc {
/// Registers the bufferization models of tcc.layer_norm_rows,
/// tcc.flash_attention and tcc.conv.
void registerBufferizationModels(mlir::DialectRegistry &registry);
/// Attaches tcc.conv's bufferization model (TccConv.cpp).
void attachConvBufferization(mlir::MLIRContext *context);
/// Attaches the bufferization models of tcc.dispatch and tcc.yield
/// (TccDispatch.cpp).
void attachDispatchBufferization(mlir::MLIRContext *context);
/// Whether `name` can name a kernel in every back end: a C identifier.
bool isKernelName(llvm::StringRef name);
} // namespace tcc

#endif
