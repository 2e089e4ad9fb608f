/*===- tcc_abi.h - the contract between a tcc artifact and the runtime ----===*
 *
 * A compiled model (`model.so`) is host code + kernels + weights. It never
 * touches device memory: it calls back into the runtime through the
 * function table below, and describes itself through `tcc_artifact_v1()`.
 * Every struct is plain C with fixed-width fields; all pointers in the
 * artifact's tables point into the artifact's own read-only data.
 *
 * ABI version 4. Version 4 added the call's shapes (`tcc_runtime_api.
 * shapes`) for functions with a symbolic dimension (`tcc compile --dim`);
 * an artifact without one declares version 3 and reads nothing of them.
 * Version 3 gave each kernel a launch record. Version 2 added the static memory plan: each function
 * declares the size of its arena (`tcc_function_desc.arena_bytes`) and its
 * host code takes planned buffers as views of that arena (`view`). The
 * runtime also loads version 1 artifacts (function descriptors without the
 * arena fields, `tcc_function_desc_v1`) and refuses any other version.
 *
 * The layout is declared once, in the tcc-abi crate (abi/src/lib.rs); a test
 * there compiles offsetof/sizeof assertions generated from it against this
 * header and compares each struct's field names.
 *===----------------------------------------------------------------------===*/
#ifndef TCC_ABI_H
#define TCC_ABI_H

#include <stdint.h>

#define TCC_ABI_VERSION 4u
/* The oldest version the runtime still loads (older artifacts, without
 * launch records, must be rebuilt). */
#define TCC_ABI_VERSION_MIN 3u

/* Element types of tensors crossing the ABI. */
enum tcc_dtype {
  TCC_DTYPE_F32 = 0,
  TCC_DTYPE_F16 = 1,
  TCC_DTYPE_I32 = 2,
  TCC_DTYPE_I64 = 3,
  TCC_DTYPE_I8 = 4,
  TCC_DTYPE_BOOL = 5, /* one byte per element, 0 or 1 */
  TCC_DTYPE_BF16 = 6, /* bfloat16: the top 16 bits of an IEEE float */
  TCC_DTYPE_F64 = 7,
  TCC_DTYPE_I16 = 8,
  TCC_DTYPE_U8 = 9,
  TCC_DTYPE_U16 = 10,
  TCC_DTYPE_U32 = 11,
  TCC_DTYPE_U64 = 12,
  /* The minifloats: one byte an element (ONNX float8 e4m3fn, e4m3fnuz,
   * e5m2, e5m2fnuz; float4e2m1 in the low 4 bits). */
  TCC_DTYPE_F8E4M3FN = 13,
  TCC_DTYPE_F8E4M3FNUZ = 14,
  TCC_DTYPE_F8E5M2 = 15,
  TCC_DTYPE_F8E5M2FNUZ = 16,
  TCC_DTYPE_F4E2M1 = 17,
};

/* Kernel source formats. */
enum tcc_source_kind {
  TCC_SOURCE_OPENCL_C = 0,
  TCC_SOURCE_SPIRV = 1,
  TCC_SOURCE_PTX = 2,
};

/* Runtime-owned device buffer; opaque to the artifact. */
typedef struct tcc_buffer tcc_buffer;

/* One kernel argument. */
enum tcc_arg_kind {
  TCC_ARG_BUFFER = 0,
  TCC_ARG_I32 = 1,
  TCC_ARG_I64 = 2,
  TCC_ARG_F32 = 3,
};
/* tcc_kernel_arg.flags: the kernel writes the buffer. */
#define TCC_ARG_WRITTEN 1u
typedef struct {
  uint32_t kind; /* enum tcc_arg_kind */
  uint32_t reserved;
  union {
    tcc_buffer *buffer;
    int32_t i32;
    int64_t i64;
    float f32;
  } value;
} tcc_arg; /* 16 bytes */

/* What the runtime offers the artifact's host code. Every call that can fail
 * returns 0 on success; on failure the runtime records the error in `ctx`
 * and the host code returns the non-zero status to its caller. */
typedef struct {
  uint32_t abi_version; /* TCC_ABI_VERSION */
  uint32_t reserved;
  void *ctx;
  /* A device buffer of at least `bytes` bytes (from the buffer pool). */
  int32_t (*alloc)(void *ctx, uint64_t bytes, tcc_buffer **out);
  /* Returns a buffer from `alloc` to the pool once the kernels queued so far
   * are done. NULL is ignored; constants, inputs and outputs are not
   * released (the runtime reports that as an error). */
  void (*release)(void *ctx, tcc_buffer *buffer);
  /* The device copy of constant `index` (uploaded on first use, cached). */
  int32_t (*constant)(void *ctx, uint32_t index, tcc_buffer **out);
  /* Enqueues kernel `kernel` (index into tcc_artifact.kernels) over an
   * NDRange of `global` work-items in work-groups of `local`, without
   * waiting for it. `dims` is 1, 2 or 3. `local` may be NULL (or all zero)
   * to let the driver choose. `num_args` must equal the kernel's parameter
   * count. */
  int32_t (*launch)(void *ctx, uint32_t kernel, uint32_t dims,
                    const uint64_t *global, const uint64_t *local,
                    uint32_t num_args, const tcc_arg *args);
  /* Device-to-device copy, enqueued in order; ranges are checked against
   * the sizes the buffers were requested with. */
  int32_t (*copy)(void *ctx, tcc_buffer *dst, uint64_t dst_offset,
                  tcc_buffer *src, uint64_t src_offset, uint64_t bytes);
  /* (ABI 2) Bytes [offset, offset + bytes) of the calling function's arena
   * as a buffer. The arena belongs to the session: it is allocated once
   * and reused by every call, so its contents do not survive a call. Views
   * are not released. `offset` must be a multiple of the function's
   * `arena_alignment` and the range must lie inside `arena_bytes`. */
  int32_t (*view)(void *ctx, uint64_t offset, uint64_t bytes,
                  tcc_buffer **out);
  /* (ABI 4) The call's shapes: every input's extents, then every
   * output's, concatenated (each tensor's rank entries). The entry of a
   * function with a symbolic dimension (a -1 extent in its tensor
   * descriptors) reads its extents from here; the runtime has checked
   * them against the declared ranges (the description's `dims`) and
   * sized the outputs from them. NULL when the artifact declares ABI 3. */
  const int64_t *shapes;
} tcc_runtime_api;

typedef struct {
  const char *name;     /* ONNX/argument name, or "" */
  uint32_t dtype;       /* enum tcc_dtype */
  uint32_t rank;
  const int64_t *shape; /* rank entries; -1 for a symbolic extent (ABI 4) */
} tcc_tensor_desc;

/* int32_t entry(const tcc_runtime_api *rt, tcc_buffer *const *inputs,
 *               tcc_buffer *const *outputs)
 * Inputs and outputs are device buffers of the described sizes, allocated
 * by the caller; the entry enqueues the whole computation and returns 0, or
 * the first non-zero status a runtime call returned. */
typedef int32_t (*tcc_entry_fn)(const tcc_runtime_api *rt,
                                tcc_buffer *const *inputs,
                                tcc_buffer *const *outputs);

typedef struct {
  const char *name; /* the MLIR function's name */
  tcc_entry_fn entry;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const tcc_tensor_desc *inputs;
  const tcc_tensor_desc *outputs;
  /* (ABI 2) Size of the function's arena (its static memory plan); 0 when
   * the function takes no views. */
  uint64_t arena_bytes;
  /* (ABI 2) Every view offset is a multiple of this (a power of two). */
  uint64_t arena_alignment;
} tcc_function_desc;

/* A function descriptor of ABI version 1 (no arena), for reading old
 * artifacts. */
typedef struct {
  const char *name;
  tcc_entry_fn entry;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const tcc_tensor_desc *inputs;
  const tcc_tensor_desc *outputs;
} tcc_function_desc_v1;

typedef struct {
  const void *data;
  uint64_t bytes;
} tcc_constant_desc;

/* One argument of a kernel, as its launch record states it. */
typedef struct {
  uint32_t kind;  /* enum tcc_arg_kind */
  uint32_t dtype; /* enum tcc_dtype of the elements as the buffer stores them */
  uint64_t elements;
  uint32_t flags; /* TCC_ARG_WRITTEN */
  uint32_t reserved;
} tcc_kernel_arg;

/* One kernel's launch record: everything launching it takes. */
typedef struct {
  const char *name; /* the kernel's name in the program */
  uint64_t flops;   /* floating-point operations per launch; 0: not counted */
  uint32_t workgroup_x;
  uint32_t workgroup_y;
  uint32_t workgroup_z;
  uint32_t dynamic_local_bytes; /* CUDA dynamic shared memory; 0: none */
  uint32_t num_args;
  uint32_t reserved;
  const tcc_kernel_arg *args;
} tcc_kernel_desc;

typedef struct {
  uint32_t abi_version; /* TCC_ABI_VERSION */
  uint32_t source_kind; /* enum tcc_source_kind */
  const char *source;   /* kernel program (text for OpenCL C/PTX) */
  uint64_t source_bytes;
  const char *build_options; /* for clBuildProgram */
  uint32_t num_kernels;
  uint32_t num_functions;
  const tcc_kernel_desc *kernels; /* num_kernels launch records */
  const tcc_function_desc *functions;
  uint32_t num_constants;
  uint32_t reserved;
  const tcc_constant_desc *constants;
  const char *producer; /* "tcc <version>" */
} tcc_artifact;

/* Every artifact exports this symbol. */
const tcc_artifact *tcc_artifact_v1(void);

/* Optional: the same kernels (same names) as NUL-terminated PTX text, for
 * NVIDIA drivers, which load it with clCreateProgramWithBinary instead of
 * compiling the OpenCL C. Artifacts compiled with --ptx=on export it. */
const char *tcc_kernel_ptx_v1(void);

/* Optional: a NUL-terminated JSON object describing the artifact for tools
 * (`tcc inspect`): target, kernels (name, kind, work-group size, flops),
 * tcc version and git hash. Keys may be added; the runtime never needs it.
 *
 * `tcc compile --emit=obj|staticlib --name=NAME` prefixes every one of
 * these symbols with `NAME_` (`NAME_tcc_artifact_v1`, ...) so that several
 * models link into one program; such an object always defines all three
 * (the optional ones returning NULL when empty). */
const char *tcc_metadata_v1(void);

#endif /* TCC_ABI_H */
