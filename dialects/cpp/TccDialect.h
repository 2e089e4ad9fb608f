//===- TccDialect.h - the tcc dialect (C++ side) ---------------------------===//
#ifndef TCC_DIALECT_H
#define TCC_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TccOpsDialect.h.inc"

#include "TccEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "TccAttrs.h.inc"

#define GET_OP_CLASSES
#include "TccOps.h.inc"

namespace mlir {
class DialectRegistry;
}

namespace tcc {
/// Registers the bufferization model of tcc.layer_norm_rows.
void registerBufferizationModels(mlir::DialectRegistry &registry);
} // namespace tcc

#endif
