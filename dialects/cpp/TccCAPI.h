/*===- TccCAPI.h - C interface between tcc's Rust code and MLIR's C++ -----===*
 *
 * What the MLIR C API lacks and tcc needs: registering the tcc dialect and
 * every upstream dialect/extension/pass, registering passes written in Rust
 * under a name in the pass registry (so textual pipelines and --tcc-* flags
 * reach them), and the mlir-opt driver.
 *===----------------------------------------------------------------------===*/
#ifndef TCC_CAPI_H
#define TCC_CAPI_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Checks a pass option string; on failure calls `error` with a message. */
typedef MlirLogicalResult (*TccRustPassCheckOptions)(
    const void *pass, MlirStringRef options, MlirStringCallback error,
    void *errorUserData);
/* Runs the pass on `op` with its option string. */
typedef MlirLogicalResult (*TccRustPassRun)(const void *pass,
                                            MlirStringRef options,
                                            MlirOperation op);
/* Splits an option string the way the Rust passes read it, calling `pair`
 * with each key and value (a bare key's value is "true"). */
typedef void (*TccRustPassOptionPair)(MlirStringRef key, MlirStringRef value,
                                      void *userData);
typedef MlirLogicalResult (*TccRustPassSplitOptions)(
    MlirStringRef options, TccRustPassOptionPair pair, void *userData);

typedef struct {
  const char *argument; /* e.g. "tcc-decompose-composites" */
  const char *summary;  /* one line */
  const char *anchor;   /* op name the pass runs on, or NULL for any op */
  const char *dependentDialects; /* comma-separated dialects it creates ops of */
  /* The pass's options, one per line: "name\tkind\tdefault\tdescription",
   * kind one of bool, int, string. Shown by --help and printed (with their
   * values) in textual pipelines. */
  const char *options;
  const void *pass;     /* opaque, 'static on the Rust side */
  TccRustPassCheckOptions checkOptions;
  TccRustPassRun run;
  TccRustPassSplitOptions splitOptions;
} TccRustPassInfo;

/* Adds every upstream dialect and extension, the LLVM IR translations and
 * the tcc dialect to `registry`. */
void tccRegisterAllDialects(MlirDialectRegistry registry);
/* Registers every upstream pass once per process (idempotent). */
void tccRegisterAllPasses(void);
/* Registers a pass implemented in Rust; the strings are copied. Returns
 * false if a dependent dialect name is unknown. */
bool tccRegisterRustPass(const TccRustPassInfo *info);
/* Registers a named pass pipeline (tcc-opt --NAME, and NAME in textual
 * pipelines) that expands to `pipeline` (textual, nested under the op the
 * pipeline is anchored on). */
void tccRegisterPassPipeline(const char *argument, const char *summary,
                             const char *pipeline);
/* Moves a linalg op's parallel iteration dimensions before its reduction
 * dimensions (generalizing a named op when needed). Returns 1 if it
 * changed the op, 0 if they already were, -1 if it is not possible. */
int tccLinalgHoistParallelDims(MlirOperation op);
/* Rewrites a named linalg op as the equivalent linalg.generic, keeping its
 * discardable attributes. Returns false (and leaves the op) for a generic
 * or an op that cannot be generalized. */
bool tccLinalgGeneralize(MlirOperation op);

/* Collapses the runs of consecutive reduction dimensions of a contraction
 * generic that every operand indexes contiguously into one, and rewrites
 * the result as a named op where it is one (a batch_matmul). Returns 1
 * when `op` was replaced, 0 when it was left alone, -1 on failure. */
int tccLinalgCollapseContraction(MlirOperation op);
/* Applies upstream's algebraic simplification of math ops (powf by
 * constant exponents, ...) to everything under `root`. Returns false if
 * the rewrite did not converge. */
bool tccSimplifyMath(MlirOperation root);
/* Rewrites, under `root`, what Vulkan's Shader SPIR-V has no exact
 * instruction for: f32 math.erf as a rational function, and
 * arith.minimumf/maximumf as selects that keep signed zeros, f32 math.log
 * of subnormals through a scaling. Returns false
 * if the rewrite did not converge. */
bool tccLowerMathForShader(MlirOperation root);
/* Upstream's elementwise fusion patterns (linalg-fuse-elementwise-ops)
 * under `root`, except that two generics whose fused body would hold more
 * than `maxOps` operations are not fused (0: no cap). Returns false if
 * the rewrite did not converge. */
bool tccFuseElementwise(MlirOperation root, int64_t maxOps,
                        bool recomputeBroadcastMath);
/* Replaces a linalg op on buffers by its scf.parallel/scf.for loop nest.
 * Returns false (and leaves the op) if that is not possible. */
bool tccLinalgLowerToParallelLoops(MlirOperation op);

/* The deepest bracket nesting ({ ( [ <) that tcc and tcc-opt parse: MLIR's
 * parser recurses once per level, and a few thousand levels overflow the
 * stack. Real models nest a few dozen levels. */
#define TCC_MAX_NESTING_DEPTH 1000

/* Checks that `source` nests brackets at most `limit` deep; if not,
 * returns false with the 1-based line and column of the first opener past
 * the limit. */
bool tccCheckNestingDepth(MlirStringRef source, unsigned limit,
                          unsigned *line, unsigned *column);

/* Parses `source` (named `name` in locations) into a module, wrapping
 * top-level ops that are not a module in an implicit one, as mlir-opt does.
 * Input nested deeper than TCC_MAX_NESTING_DEPTH is refused with a located
 * error before MLIR parses it. Returns a null module (after emitting
 * diagnostics) on failure. */
MlirModule tccParseModule(MlirContext context, MlirStringRef source,
                          MlirStringRef name);

/* The bytes of a dense_resource elements attribute's blob. Returns false
 * when `attr` is not a dense_resource attribute or its blob is missing
 * (a key with no entry in the file's resource section); otherwise sets
 * `*data` and `*size` (in bytes, without the alignment prefix). */
bool tccDenseResourceBlob(MlirAttribute attr, const void **data,
                          size_t *size);

/* Makes a failed C++ allocation (MLIR, LLVM) print one line and exit 1
 * instead of throwing std::bad_alloc through Rust, which aborts. */
void tccInstallOutOfMemoryHandlers(void);

/* The key of a dense_resource elements attribute's resource (as the
 * context holds it: the parser may have added a `_N` suffix to the key the
 * text gave). Returns false when `attr` is not a dense_resource attribute. */
bool tccDenseResourceKey(MlirAttribute attr, MlirStringRef *key);

/* Called with its user data when a blob given to tccDenseResourceSetBlob is
 * no longer used (when the context is destroyed or the blob replaced). */
typedef void (*TccBlobDeleter)(void *userData);

/* Makes `data` (`size` bytes, aligned to `align`) the blob of the resource
 * a dense_resource attribute names, without copying it: the caller keeps
 * the bytes alive until `deleter(userData)` is called. Returns false when
 * `attr` is not a dense_resource attribute. */
bool tccDenseResourceSetBlob(MlirAttribute attr, const void *data,
                             size_t size, size_t align,
                             TccBlobDeleter deleter, void *userData);

/* The dense_resource attribute `attr` seen as `type` (a static shape with
 * the same element type and element count): the same resource and blob,
 * so a reshaped weight costs no copy. A null attribute when `attr` is not
 * a dense_resource attribute or the types do not agree. */
MlirAttribute tccDenseResourceReshape(MlirAttribute attr, MlirType type);

/* Types and attributes the ONNX importer's builder needs and the C API
 * lacks: TOSA's `!tosa.shape<rank>` and linalg's iterator type
 * (`#linalg.iterator_type<parallel>` or `<reduction>`). */
MlirType tccTosaShapeTypeGet(MlirContext context, intptr_t rank);
MlirAttribute tccLinalgIteratorTypeGet(MlirContext context, bool reduction);

/* The kernel strategies of TccAttrs.td (`#tcc.loops<...>`, ...). */
typedef enum {
  TccStrategyNone = 0, /* not a strategy attribute */
  TccStrategyLoops = 1,
  TccStrategyGemm = 2,
  TccStrategyRowReduce = 3,
  TccStrategySoftmax = 4,
  TccStrategyLayerNorm = 5,
  TccStrategyWindow = 6,
  TccStrategyAttention = 7,
} TccStrategyKind;

/* Every strategy's parameters, flat: the fields a kind does not have are
 * zero. */
typedef struct {
  int32_t kind;          /* a TccStrategyKind */
  int64_t workgroupSize; /* loops and the row templates */
  int64_t maxWorkgroups; /* loops; 0: no limit */
  int64_t tileM, tileN, tileK, workM, workN, splitK, kLanes; /* gemm */
  int64_t batch, m, n, k;                            /* gemm */
  int64_t columns, vector, workItems;                /* window */
  int64_t blockQ, blockK, keyLanes;                  /* attention */
  int32_t precision; /* gemm: a TccPrecision */
  int64_t rows;      /* layer_norm: rows a work-group */
} TccKernelStrategy;

/* The GEMMs' arithmetic (`precision` of `#tcc.gemm` and `#tcc.target`). */
typedef enum {
  TccPrecisionFp32 = 0,
  TccPrecisionTf32 = 1,
  TccPrecisionFp16 = 2,
  TccPrecisionBf16 = 3,
} TccPrecision;

/* The parameters of `#tcc.target<...>` (TccAttrs.td). Strings read from an
 * attribute live as long as its context. */
typedef struct {
  MlirStringRef name, family, arch, api;
  int32_t precision; /* a TccPrecision */
  int64_t vectorWidth, maxLocalBytes, maxWorkgroupSize;
} TccTargetDesc;

/* The `#tcc.target` attribute `target` describes; a null attribute when its
 * parameters fail the verifier (which reports through the context). */
MlirAttribute tccTargetAttrGet(MlirContext context, const TccTargetDesc *target);
/* Reads a `#tcc.target` attribute into `*target`; false for any other
 * attribute. */
bool tccTargetAttrRead(MlirAttribute attr, TccTargetDesc *target);

/* The `#tcc.dims` attribute of `count` symbolic dimensions (TccAttrs.td);
 * a null attribute when they fail the verifier (which reports through the
 * context). */
MlirAttribute tccDimsAttrGet(MlirContext context, intptr_t count,
                             const MlirStringRef *names, const int64_t *min,
                             const int64_t *max);
/* Reads a `#tcc.dims` attribute: its `names` (an array of strings) and its
 * `min` and `max` (dense i64 arrays); false for any other attribute. */
bool tccDimsAttrRead(MlirAttribute attr, MlirAttribute *names,
                     MlirAttribute *min, MlirAttribute *max);

/* The strategy attribute `strategy` describes. Returns a null attribute
 * if its kind is unknown or its parameters fail the attribute's verifier
 * (which then reports through the context's diagnostics). */
MlirAttribute tccKernelStrategyGet(MlirContext context,
                                   const TccKernelStrategy *strategy);
/* Reads a strategy attribute's kind and parameters into `*strategy`.
 * Returns false (kind TccStrategyNone) for any other attribute. */
bool tccKernelStrategyRead(MlirAttribute attr, TccKernelStrategy *strategy);

/* `#tcc.conv<kind, strides = [sh, sw], dilations = [dh, dw]>` (TccConv.td);
 * `kind` is a `tcc::WindowKind` (0 conv_2d_nhwc_hwcf,
 * 1 depthwise_conv_2d_nhwc_hwcm, 2 depthwise_conv_2d_nhwc_hwc,
 * 3 pooling_nhwc_max, 4 pooling_nhwc_sum). Returns a null attribute for
 * an unknown kind or parameters that fail the attribute's verifier. */
MlirAttribute tccConvAttrGet(MlirContext context, int32_t kind,
                             const int64_t strides[2],
                             const int64_t dilations[2]);
/* Reads a `#tcc.conv` attribute. Returns false for any other attribute. */
bool tccConvAttrRead(MlirAttribute attr, int32_t *kind, int64_t strides[2],
                     int64_t dilations[2]);

/* The window (`#tcc.conv`) of a `tcc.conv` op; a null attribute for any
 * other op. */
MlirAttribute tccConvOpGetWindow(MlirOperation op);

/* Inserts a gpu.launch_func of `kernel` (a gpu.func inside a gpu.module)
 * before `before`: `grid` work-groups of `block` work-items (as index
 * constants inserted there too), passing `operands`. Returns the launch. */
MlirOperation tccBuildLaunchFunc(MlirOperation before, MlirOperation kernel,
                                 const int64_t grid[3], const int64_t block[3],
                                 intptr_t numOperands, const MlirValue *operands,
                                 MlirLocation location);
/* Adds `operands` to a gpu.launch_func's kernel operands through the
 * op's typed accessor (which keeps its operand segments right), after its
 * buffers and before its index (scalar) operands, if any. Returns
 * false (and leaves the op) when `launch` is not a gpu.launch_func. */
bool tccLaunchFuncAppendKernelOperands(MlirOperation launch,
                                       intptr_t numOperands,
                                       const MlirValue *operands);

/* Merges kernels that are equal but for their names: in every gpu.module
 * under `root`, a kernel equal to an earlier one (attributes, signature
 * and body, locations aside) is erased and its launches launch the earlier
 * one. Returns how many kernels were erased. */
int64_t tccDedupeKernels(MlirOperation root);

/* Runs the mlir-opt driver with every dialect and every registered pass,
 * refusing input nested deeper than TCC_MAX_NESTING_DEPTH with a located
 * error. Returns the process exit code. */
int tccOptMain(int argc, char **argv, const char *version);

#ifdef __cplusplus
}
#endif

#endif
