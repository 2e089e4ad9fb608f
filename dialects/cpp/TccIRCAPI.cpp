//===- TccIRCAPI.cpp - typed IR accessors and builders ---------------------===//
//
// The C interface to IR that the upstream C API does not reach: the blob of
// a dense_resource attribute, tcc's kernel-strategy attributes (built and
// read as a struct, never as text), and gpu.launch_func built and extended
// through its typed accessors (so that its operand segments are never
// edited by position).
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"
#include "TccDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/ErrorHandling.h"

#include <mutex>
#include <new>
#include <unistd.h>

using namespace mlir;

//===----------------------------------------------------------------------===//
// Out of memory
//===----------------------------------------------------------------------===//

/* A failed C++ allocation would throw std::bad_alloc through Rust frames,
 * which aborts the process ("Rust cannot catch foreign exceptions", exit
 * 134). Instead: one line on stderr and exit 1. */
[[noreturn]] static void tccOutOfMemory() {
  static const char message[] =
      "error: out of memory: an allocation of MLIR or LLVM failed (a "
      "constant or intermediate too large for this machine: lower "
      "--max-constant-bytes to find it)\n";
  ssize_t ignored = write(2, message, sizeof message - 1);
  (void)ignored;
  _exit(1);
}

extern "C" void tccInstallOutOfMemoryHandlers(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    std::set_new_handler([] { tccOutOfMemory(); });
    llvm::install_bad_alloc_error_handler(
        [](void *, const char *, bool) { tccOutOfMemory(); });
  });
}

extern "C" bool tccDenseResourceBlob(MlirAttribute attr, const void **data,
                                     size_t *size) {
  auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  if (!resource)
    return false;
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return false;
  ArrayRef<char> bytes = blob->getData();
  *data = bytes.data();
  *size = bytes.size();
  return true;
}

extern "C" bool tccDenseResourceKey(MlirAttribute attr, MlirStringRef *key) {
  auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  if (!resource)
    return false;
  StringRef name = resource.getRawHandle().getKey();
  *key = mlirStringRefCreate(name.data(), name.size());
  return true;
}

extern "C" bool tccDenseResourceSetBlob(MlirAttribute attr, const void *data,
                                        size_t size, size_t align,
                                        TccBlobDeleter deleter,
                                        void *userData) {
  auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  if (!resource || !resource.getRawHandle().getResource())
    return false;
  AsmResourceBlob blob = UnmanagedAsmResourceBlob::allocateWithAlign(
      ArrayRef<char>(static_cast<const char *>(data), size), align,
      [deleter, userData](void *, size_t, size_t) {
        if (deleter)
          deleter(userData);
      });
  resource.getRawHandle().getResource()->setBlob(std::move(blob));
  return true;
}

extern "C" MlirAttribute tccDenseResourceReshape(MlirAttribute attr,
                                                 MlirType type) {
  auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  auto shaped = llvm::dyn_cast<ShapedType>(unwrap(type));
  if (!resource || !shaped || !shaped.hasStaticShape() ||
      shaped.getElementType() != resource.getType().getElementType() ||
      shaped.getNumElements() != resource.getType().getNumElements())
    return MlirAttribute{nullptr};
  return wrap(DenseResourceElementsAttr::get(shaped, resource.getRawHandle()));
}

//===----------------------------------------------------------------------===//
// Builders of the ONNX import
//===----------------------------------------------------------------------===//

extern "C" MlirType tccTosaShapeTypeGet(MlirContext context, intptr_t rank) {
  MLIRContext *ctx = unwrap(context);
  ctx->getOrLoadDialect<tosa::TosaDialect>();
  return wrap(tosa::shapeType::get(ctx, rank));
}

extern "C" MlirAttribute tccLinalgIteratorTypeGet(MlirContext context,
                                                  bool reduction) {
  MLIRContext *ctx = unwrap(context);
  ctx->getOrLoadDialect<linalg::LinalgDialect>();
  return wrap(linalg::IteratorTypeAttr::get(
      ctx, reduction ? utils::IteratorType::reduction
                     : utils::IteratorType::parallel));
}

//===----------------------------------------------------------------------===//
// Kernel strategies
//===----------------------------------------------------------------------===//

/* TccPrecision codes and their names in the attributes. */
static const char *const kPrecisions[] = {"fp32", "tf32", "fp16", "bf16"};

static StringRef precisionName(int32_t code) {
  return code >= 0 && code < 4 ? kPrecisions[code] : "invalid";
}

static int32_t precisionCode(StringRef name) {
  for (int32_t code = 0; code < 4; ++code)
    if (name == kPrecisions[code])
      return code;
  return -1;
}

MlirAttribute tccKernelStrategyGet(MlirContext context,
                                   const TccKernelStrategy *s) {
  MLIRContext *ctx = unwrap(context);
  auto emitError = [&]() { return mlir::emitError(UnknownLoc::get(ctx)); };
  Attribute attr;
  switch (s->kind) {
  case TccStrategyLoops:
    attr = tcc::LoopsStrategyAttr::getChecked(emitError, ctx, s->workgroupSize,
                                              s->maxWorkgroups);
    break;
  case TccStrategyGemm:
    attr = tcc::GemmStrategyAttr::getChecked(
        emitError, ctx, s->tileM, s->tileN, s->tileK, s->workM, s->workN,
        s->splitK, s->kLanes, s->batch, s->m, s->n, s->k,
        precisionName(s->precision));
    break;
  case TccStrategyRowReduce:
    attr = tcc::RowReduceStrategyAttr::getChecked(emitError, ctx,
                                                  s->workgroupSize);
    break;
  case TccStrategySoftmax:
    attr = tcc::SoftmaxStrategyAttr::getChecked(emitError, ctx,
                                                s->workgroupSize);
    break;
  case TccStrategyLayerNorm:
    attr = tcc::LayerNormStrategyAttr::getChecked(emitError, ctx,
                                                  s->workgroupSize, s->rows);
    break;
  case TccStrategyWindow:
    attr = tcc::WindowStrategyAttr::getChecked(emitError, ctx,
                                               s->workgroupSize, s->columns,
                                               s->vector, s->workItems);
    break;
  case TccStrategyAttention:
    attr = tcc::AttentionStrategyAttr::getChecked(emitError, ctx, s->blockQ,
                                                  s->blockK, s->keyLanes);
    break;
  default:
    break;
  }
  return wrap(attr);
}

bool tccKernelStrategyRead(MlirAttribute attr, TccKernelStrategy *s) {
  *s = TccKernelStrategy{};
  Attribute a = unwrap(attr);
  if (!a)
    return false;
  if (auto loops = dyn_cast<tcc::LoopsStrategyAttr>(a)) {
    s->kind = TccStrategyLoops;
    s->workgroupSize = loops.getWorkgroupSize();
    s->maxWorkgroups = loops.getMaxWorkgroups();
  } else if (auto gemm = dyn_cast<tcc::GemmStrategyAttr>(a)) {
    s->kind = TccStrategyGemm;
    s->tileM = gemm.getTileM();
    s->tileN = gemm.getTileN();
    s->tileK = gemm.getTileK();
    s->workM = gemm.getWorkM();
    s->workN = gemm.getWorkN();
    s->splitK = gemm.getSplitK();
    s->kLanes = gemm.getKLanes();
    s->batch = gemm.getBatch();
    s->m = gemm.getM();
    s->n = gemm.getN();
    s->k = gemm.getK();
    s->precision = precisionCode(gemm.getPrecision());
  } else if (auto row = dyn_cast<tcc::RowReduceStrategyAttr>(a)) {
    s->kind = TccStrategyRowReduce;
    s->workgroupSize = row.getWorkgroupSize();
  } else if (auto softmax = dyn_cast<tcc::SoftmaxStrategyAttr>(a)) {
    s->kind = TccStrategySoftmax;
    s->workgroupSize = softmax.getWorkgroupSize();
  } else if (auto norm = dyn_cast<tcc::LayerNormStrategyAttr>(a)) {
    s->kind = TccStrategyLayerNorm;
    s->workgroupSize = norm.getWorkgroupSize();
    s->rows = norm.getRows();
  } else if (auto window = dyn_cast<tcc::WindowStrategyAttr>(a)) {
    s->kind = TccStrategyWindow;
    s->workgroupSize = window.getWorkgroupSize();
    s->columns = window.getColumns();
    s->vector = window.getVector();
    s->workItems = window.getWorkItems();
  } else if (auto attention = dyn_cast<tcc::AttentionStrategyAttr>(a)) {
    s->kind = TccStrategyAttention;
    s->blockQ = attention.getBlockQ();
    s->blockK = attention.getBlockK();
    s->keyLanes = attention.getKeyLanes();
  } else {
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

MlirAttribute tccTargetAttrGet(MlirContext context, const TccTargetDesc *t) {
  MLIRContext *ctx = unwrap(context);
  auto emitError = [&]() { return mlir::emitError(UnknownLoc::get(ctx)); };
  return wrap(tcc::TargetAttr::getChecked(
      emitError, ctx, unwrap(t->name), unwrap(t->family), unwrap(t->arch),
      unwrap(t->api), precisionName(t->precision), t->vectorWidth,
      t->maxLocalBytes, t->maxWorkgroupSize));
}

bool tccTargetAttrRead(MlirAttribute attr, TccTargetDesc *t) {
  *t = TccTargetDesc{};
  auto target = dyn_cast_or_null<tcc::TargetAttr>(unwrap(attr));
  if (!target)
    return false;
  auto ref = [](StringRef s) { return mlirStringRefCreate(s.data(), s.size()); };
  t->name = ref(target.getName());
  t->family = ref(target.getFamily());
  t->arch = ref(target.getArch());
  t->api = ref(target.getApi());
  t->precision = precisionCode(target.getPrecision());
  t->vectorWidth = target.getVectorWidth();
  t->maxLocalBytes = target.getMaxLocalBytes();
  t->maxWorkgroupSize = target.getMaxWorkgroupSize();
  return true;
}

//===----------------------------------------------------------------------===//
// The symbolic dimensions
//===----------------------------------------------------------------------===//

MlirAttribute tccDimsAttrGet(MlirContext context, intptr_t count,
                             const MlirStringRef *names, const int64_t *min,
                             const int64_t *max) {
  MLIRContext *ctx = unwrap(context);
  auto emitError = [&]() { return mlir::emitError(UnknownLoc::get(ctx)); };
  SmallVector<Attribute> symbols;
  for (intptr_t i = 0; i < count; ++i)
    symbols.push_back(StringAttr::get(ctx, unwrap(names[i])));
  return wrap(tcc::DimsAttr::getChecked(
      emitError, ctx, ArrayAttr::get(ctx, symbols),
      DenseI64ArrayAttr::get(ctx, ArrayRef<int64_t>(min, count)),
      DenseI64ArrayAttr::get(ctx, ArrayRef<int64_t>(max, count))));
}

bool tccDimsAttrRead(MlirAttribute attr, MlirAttribute *names,
                     MlirAttribute *min, MlirAttribute *max) {
  auto dims = dyn_cast_or_null<tcc::DimsAttr>(unwrap(attr));
  if (!dims)
    return false;
  *names = wrap(Attribute(dims.getNames()));
  *min = wrap(Attribute(dims.getMin()));
  *max = wrap(Attribute(dims.getMax()));
  return true;
}

MlirOperation tccBuildLaunchFunc(MlirOperation before, MlirOperation kernel,
                                 const int64_t grid[3], const int64_t block[3],
                                 intptr_t numOperands, const MlirValue *operands,
                                 MlirLocation location) {
  Operation *anchor = unwrap(before);
  Location loc = unwrap(location);
  OpBuilder builder(anchor);
  auto dim3 = [&](const int64_t sizes[3]) {
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(builder, loc, v);
    };
    Value x = c(sizes[0]), y = c(sizes[1]), z = c(sizes[2]);
    return gpu::KernelDim3{x, y, z};
  };
  gpu::KernelDim3 gridSize = dim3(grid);
  gpu::KernelDim3 blockSize = dim3(block);
  SmallVector<Value> values;
  for (intptr_t i = 0; i < numOperands; ++i)
    values.push_back(unwrap(operands[i]));
  auto launch = gpu::LaunchFuncOp::create(
      builder, loc, cast<gpu::GPUFuncOp>(unwrap(kernel)), gridSize, blockSize,
      Value(), values);
  return wrap(launch.getOperation());
}

bool tccLaunchFuncAppendKernelOperands(MlirOperation launch,
                                       intptr_t numOperands,
                                       const MlirValue *operands) {
  auto op = llvm::dyn_cast<gpu::LaunchFuncOp>(unwrap(launch));
  if (!op)
    return false;
  // Buffers come before a kernel's scalar (index) operands: the new
  // buffers go in front of the first index operand, if any.
  SmallVector<Value> current(op.getKernelOperands().begin(),
                             op.getKernelOperands().end());
  auto firstIndex = llvm::find_if(
      current, [](Value v) { return v.getType().isIndex(); });
  SmallVector<Value> values(current.begin(), firstIndex);
  for (intptr_t i = 0; i < numOperands; ++i)
    values.push_back(unwrap(operands[i]));
  values.append(firstIndex, current.end());
  op.getKernelOperandsMutable().assign(values);
  return true;
}

//===----------------------------------------------------------------------===//
// Kernel deduplication
//===----------------------------------------------------------------------===//

/// Whether two kernels are the same but for their names: equal attributes
/// (the strategy, the work-group size, argument attributes), signature and
/// body, locations aside.
static bool sameButForName(gpu::GPUFuncOp lhs, gpu::GPUFuncOp rhs) {
  if (lhs.getFunctionType() != rhs.getFunctionType() ||
      lhs.getBody().getBlocks().size() != rhs.getBody().getBlocks().size())
    return false;
  StringAttr lhsName = SymbolTable::getSymbolName(lhs);
  StringAttr rhsName = SymbolTable::getSymbolName(rhs);
  SymbolTable::setSymbolName(rhs, lhsName);
  bool same = OperationEquivalence::isEquivalentTo(
      lhs.getOperation(), rhs.getOperation(),
      OperationEquivalence::IgnoreLocations);
  SymbolTable::setSymbolName(rhs, rhsName);
  return same;
}

int64_t tccDedupeKernels(MlirOperation root) {
  Operation *top = unwrap(root);
  // (module, duplicate) -> the first equal kernel's name.
  DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> replacement;
  SmallVector<Operation *> duplicates;
  top->walk([&](gpu::GPUModuleOp module) {
    SmallVector<gpu::GPUFuncOp> kept;
    for (auto kernel : module.getOps<gpu::GPUFuncOp>()) {
      if (!kernel.isKernel())
        continue;
      auto equal = llvm::find_if(
          kept, [&](gpu::GPUFuncOp k) { return sameButForName(k, kernel); });
      if (equal == kept.end()) {
        kept.push_back(kernel);
        continue;
      }
      replacement[{SymbolTable::getSymbolName(module),
                   SymbolTable::getSymbolName(kernel)}] =
          SymbolTable::getSymbolName(*equal);
      duplicates.push_back(kernel.getOperation());
    }
  });
  if (duplicates.empty())
    return 0;
  top->walk([&](gpu::LaunchFuncOp launch) {
    SymbolRefAttr kernel = launch.getKernel();
    auto found = replacement.find(
        {kernel.getRootReference(), kernel.getLeafReference()});
    if (found == replacement.end())
      return;
    launch.setKernelAttr(SymbolRefAttr::get(
        kernel.getRootReference(),
        {FlatSymbolRefAttr::get(found->second)}));
  });
  for (Operation *kernel : duplicates)
    kernel->erase();
  return static_cast<int64_t>(duplicates.size());
}
