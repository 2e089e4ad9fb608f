/*===- tcc_runtime.h - the C API of the tcc runtime ------------------------===*
 *
 * Runs models compiled by tcc (`tcc compile model.mlir -o model.so`) from C
 * or C++. Link with -ltcc_runtime (libtcc_runtime.so, or libtcc_runtime.a
 * plus -lpthread -ldl -lm). OpenCL is opened at run time through the ICD
 * loader (libOpenCL.so.1); nothing else is needed.
 *
 *   tcc_runtime *rt;  tcc_model *model;  tcc_session *session;
 *   if (tcc_runtime_create(NULL, &rt) ||               // default device
 *       tcc_model_load_file("mlp.so", &model) ||
 *       tcc_session_create(rt, model, &session))
 *     fprintf(stderr, "error: %s\n", tcc_last_error());
 *   tcc_tensor in = {x, sizeof x, TCC_DTYPE_F32, 3, x_shape};
 *   tcc_tensor out = {y, sizeof y, TCC_DTYPE_F32, 3, y_shape};
 *   tcc_session_run(session, "mlp", &in, 1, &out, 1);
 *   tcc_session_free(session); tcc_model_free(model); tcc_runtime_free(rt);
 *
 * Conventions:
 * - Every function returns a tcc_status: TCC_OK (0) or an error code. On
 *   error, tcc_last_error() returns a message for the calling thread
 *   (valid until that thread's next failing call).
 * - Handles are opaque values, not pointers to memory: a handle used after
 *   it was freed, freed twice, of the wrong kind, or made up gives
 *   TCC_ERROR_INVALID_HANDLE, never a crash. NULL arguments give
 *   TCC_ERROR_NULL_ARGUMENT.
 * - No error unwinds into C: an internal failure is TCC_ERROR_INTERNAL.
 * - Every handle may be used from any thread. Calls on one session are
 *   serialized (a second caller waits); use one session per thread to run
 *   in parallel. Runtimes and models may be shared.
 * - A session keeps its runtime and model alive: freeing them first is
 *   allowed; they go when the last session using them does. A device
 *   tensor keeps its device memory alive, not its session: freeing the
 *   session first is allowed too (the tensor can still be read and freed).
 *===----------------------------------------------------------------------===*/
#ifndef TCC_RUNTIME_H
#define TCC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* The element type codes (enum tcc_dtype) are the artifact ABI's. */
#include "tcc_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API (the header). tcc_api_version() returns the
 * library's; they must agree in the major part (the value / 100). */
#define TCC_RUNTIME_API_VERSION 100u

typedef enum tcc_status {
  TCC_OK = 0,
  TCC_ERROR_INVALID_ARGUMENT = 1, /* wrong count, dtype, shape, size, name */
  TCC_ERROR_NULL_ARGUMENT = 2,    /* a required pointer was NULL */
  TCC_ERROR_INVALID_HANDLE = 3,   /* freed, wrong kind, or never made */
  TCC_ERROR_LOAD = 4,             /* the model could not be loaded */
  TCC_ERROR_DEVICE = 5,           /* no such device, OpenCL failure */
  TCC_ERROR_RUN = 6,              /* kernel build or a call failed */
  TCC_ERROR_NOT_FOUND = 7,        /* no such function or index */
  TCC_ERROR_INTERNAL = 8,         /* a bug in tcc (reported, not crashed) */
} tcc_status;

/* Element types: tcc_abi.h's enum tcc_dtype (TCC_DTYPE_F32, ...). */
typedef enum tcc_dtype tcc_dtype;

typedef struct tcc_runtime tcc_runtime; /* a device, its queue and caches */
typedef struct tcc_model tcc_model;     /* a loaded artifact */
typedef struct tcc_session tcc_session; /* a model built for a runtime */
typedef struct tcc_call tcc_call;       /* a call in flight */
typedef struct tcc_device_tensor tcc_device_tensor; /* in device memory */

/* A tensor in host memory, C order. For inputs `data` is only read. */
typedef struct tcc_tensor {
  void *data;
  uint64_t bytes;       /* size of `data`; must equal the tensor's size */
  uint32_t dtype;       /* enum tcc_dtype */
  uint32_t rank;
  const int64_t *shape; /* `rank` entries; may be NULL when rank is 0 */
} tcc_tensor;

/* A description of a function's input or output. Pointers stay valid until
 * the model is freed. */
typedef struct tcc_tensor_info {
  const char *name; /* "" when the model has none */
  uint32_t dtype;
  uint32_t rank;
  /* -1 for a symbolic extent (a model compiled with `--dim NAME=MIN..MAX`):
   * a call takes any extent in the range, the inputs naming a dimension
   * agreeing, and its outputs have the shapes that follow from them. */
  const int64_t *shape;
  uint64_t bytes; /* a symbolic extent counted at its declared maximum */
} tcc_tensor_info;

/* The calling thread's last error message ("" if none). */
const char *tcc_last_error(void);
/* A static name for a status ("TCC_ERROR_LOAD"). */
const char *tcc_status_name(tcc_status status);
/* TCC_RUNTIME_API_VERSION of the library; "tcc 0.1.0 (githash)". */
uint32_t tcc_api_version(void);
const char *tcc_version(void);
/* The artifact ABI versions (tcc_abi.h) the library loads. */
void tcc_artifact_abi_range(uint32_t *min, uint32_t *max);

/* Devices: every OpenCL device of every platform, in a fixed order. */
tcc_status tcc_device_count(size_t *count);
/* Copies device `index`'s name ("NAME (PLATFORM)") into `buffer` (always
 * NUL-terminated when `size` > 0); `*needed` (may be NULL) gets the length
 * including the NUL. */
tcc_status tcc_device_name(size_t index, char *buffer, size_t size,
                           size_t *needed);

/* A runtime on a device: `device` is NULL or "" for the default (TCC_DEVICE,
 * else the first GPU, else the first CPU device), a decimal index, or a
 * case-insensitive substring of the device or platform name. */
tcc_status tcc_runtime_create(const char *device, tcc_runtime **out);
tcc_status tcc_runtime_create_by_index(size_t index, tcc_runtime **out);
/* A runtime on CUDA device `ordinal` through NVIDIA's driver (libcuda.so.1,
 * or the library TCC_LIBCUDA names), for artifacts with PTX (`tcc compile
 * --target=nvidia`). Its sessions take the same calls; their calls in
 * flight (tcc_session_set_max_in_flight) are that many sessions on CUDA
 * streams of their own; tcc_session_set_compute_queues is OpenCL only.
 * TCC_ERROR_DEVICE without the driver or the device. */
tcc_status tcc_runtime_create_cuda(size_t ordinal, tcc_runtime **out);
/* A runtime on Vulkan device `index` (libvulkan.so.1, or the loader
 * TCC_VULKAN_LOADER names), for artifacts of `tcc compile --target=vulkan`
 * (Shader SPIR-V). Its sessions take the same calls, calls in flight as
 * on CUDA (that many sessions); tcc_session_set_compute_queues is OpenCL
 * only. TCC_ERROR_DEVICE without a loader, a driver or the device. */
tcc_status tcc_runtime_create_vulkan(size_t index, tcc_runtime **out);
/* The device's name; valid until the runtime is freed. */
tcc_status tcc_runtime_device(const tcc_runtime *runtime, const char **name);
tcc_status tcc_runtime_free(tcc_runtime *runtime);

/* Models. From a file; from memory (the bytes of a model.so, copied; no
 * file is written: an in-memory file is used); or linked into the program
 * (tcc compile --emit=staticlib --name=NAME, then TCC_LINKED_MODEL). */
tcc_status tcc_model_load_file(const char *path, tcc_model **out);
tcc_status tcc_model_load_memory(const void *data, size_t bytes,
                                 const char *label, tcc_model **out);

/* The symbols of a model compiled with --name=NAME. */
typedef struct tcc_linked_model {
  const char *name;
  const void *(*artifact)(void);       /* NAME_tcc_artifact_v1 */
  const char *(*kernel_ptx)(void);     /* NAME_tcc_kernel_ptx_v1 */
  const char *(*metadata)(void);       /* NAME_tcc_metadata_v1 */
} tcc_linked_model;
tcc_status tcc_model_load_linked(const tcc_linked_model *model,
                                 tcc_model **out);

/* At file scope: TCC_DECLARE_LINKED_MODEL(mlp);
 * then: tcc_model_load_linked(TCC_LINKED_MODEL(mlp), &model); */
#define TCC_DECLARE_LINKED_MODEL(NAME)                                        \
  extern const void *NAME##_tcc_artifact_v1(void);                            \
  extern const char *NAME##_tcc_kernel_ptx_v1(void);                          \
  extern const char *NAME##_tcc_metadata_v1(void)
#define TCC_LINKED_MODEL(NAME)                                                \
  (&(const tcc_linked_model){#NAME, NAME##_tcc_artifact_v1,                   \
                             NAME##_tcc_kernel_ptx_v1, NAME##_tcc_metadata_v1})

tcc_status tcc_model_free(tcc_model *model);
/* "tcc 0.1.0": the compiler that made it. Valid until the model is freed. */
tcc_status tcc_model_producer(const tcc_model *model, const char **producer);
/* Hashes the model's constants and compares them with the checksum its
 * compiler stored (its tables are checked at load): TCC_ERROR_LOAD, with
 * the reason in tcc_last_error(), for a damaged artifact or one without a
 * checksummed description. One pass over the weights. */
tcc_status tcc_model_verify(const tcc_model *model);
tcc_status tcc_model_function_count(const tcc_model *model, size_t *count);
/* Function `index`'s name and number of inputs and outputs (any of the out
 * pointers may be NULL). */
tcc_status tcc_model_function(const tcc_model *model, size_t index,
                              const char **name, size_t *num_inputs,
                              size_t *num_outputs);
/* The index of the function called `name` (a leading '@' is accepted). */
tcc_status tcc_model_find_function(const tcc_model *model, const char *name,
                                   size_t *index);
tcc_status tcc_model_input(const tcc_model *model, size_t function,
                           size_t index, tcc_tensor_info *info);
tcc_status tcc_model_output(const tcc_model *model, size_t function,
                            size_t index, tcc_tensor_info *info);

/* Sessions: builds the model's kernels for the runtime's device (cached on
 * disk in TCC_CACHE_DIR, default ~/.cache/tcc). The first build may take
 * seconds to minutes. */
tcc_status tcc_session_create(tcc_runtime *runtime, tcc_model *model,
                              tcc_session **out);
tcc_status tcc_session_free(tcc_session *session);

/* A session whose functions are placed on several devices: runtimes[i] is
 * device i of `placement`, "FUNCTION=I[,FUNCTION=I...]" (e.g.
 * "encoder=0,decoder=1"; functions not named run on runtimes[0]); the model
 * is opened on each device named. tcc_session_run runs a function on its
 * device; tcc_session_run_async runs it at once (tcc_call_wait returns
 * it); tcc_session_set_max_in_flight and _set_compute_queues are refused.
 * TCC_ERROR_INVALID_ARGUMENT for a malformed placement, a device past
 * num_runtimes or a function placed twice; TCC_ERROR_NOT_FOUND for an
 * unknown function. */
tcc_status tcc_session_create_placed(tcc_runtime *const *runtimes,
                                     size_t num_runtimes, tcc_model *model,
                                     const char *placement, tcc_session **out);
/* On a placed session: runs `functions` ("a,b,c") in order, each on its
 * device, the outputs of one the inputs of the next; inputs are the first
 * function's, outputs the last one's. The values between them stay in
 * device memory, copied device to device where two functions run on
 * different devices (CUDA: peer to peer; OpenCL: through the host). */
tcc_status tcc_session_run_pipeline(tcc_session *session, const char *functions,
                                    const tcc_tensor *inputs, size_t num_inputs,
                                    const tcc_tensor *outputs, size_t num_outputs);

/* Runs `function` (NULL when the model has only one). Inputs and outputs
 * must match its signature exactly: count, dtype, shape and bytes. Outputs
 * are written into the caller's buffers. Blocks until done. */
tcc_status tcc_session_run(tcc_session *session, const char *function,
                           const tcc_tensor *inputs, size_t num_inputs,
                           const tcc_tensor *outputs, size_t num_outputs);

/* As tcc_session_run, but returns at once with a completion handle. The
 * arguments are checked and the call enqueued (Session::submit) before it
 * returns; tcc_call_wait writes the outputs. The tensors' data (and the
 * arrays themselves) must stay valid until tcc_call_wait returns. A
 * session keeps up to 4 calls in flight, on compute queues of its own on
 * a GPU (docs/runtime.md); a fifth waits for the oldest's device work. */
tcc_status tcc_session_run_async(tcc_session *session, const char *function,
                                 const tcc_tensor *inputs, size_t num_inputs,
                                 const tcc_tensor *outputs, size_t num_outputs,
                                 tcc_call **call);
/* How many of the session's tcc_session_run_async calls may be in flight
 * at once (default 4; at least 1, else TCC_ERROR_INVALID_ARGUMENT). One
 * beyond it first waits for the oldest call's device work. On a CUDA
 * runtime: default 1, and that many sessions of the model, each on a
 * stream of its own (calls beyond them queue in turn). */
tcc_status tcc_session_set_max_in_flight(tcc_session *session, size_t depth);
/* Which compute queues the session's asynchronous calls use: "auto" (the
 * default: on a GPU one queue of the session's own per call in flight, on
 * a CPU the runtime's queue), "shared" (the runtime's queue) or a count of
 * own queues ("1", "4"); anything else is TCC_ERROR_INVALID_ARGUMENT.
 * Calls already in flight finish first. Outputs are the same either way. */
tcc_status tcc_session_set_compute_queues(tcc_session *session,
                                          const char *setting);
/* Whether the call has finished (*done = 1) without waiting. */
tcc_status tcc_call_done(const tcc_call *call, int *done);
/* Waits for the call, returns its status (and sets tcc_last_error on
 * failure), and frees the handle. */
tcc_status tcc_call_wait(tcc_call *call);

/* Device tensors (ONNX Runtime's IOBinding): tensors that stay in a
 * session's device memory between calls. A tensor uploaded once, or the
 * outputs of one call, are the inputs of the next call without a copy to
 * or from the host; tcc_device_tensor_download reads one back.
 *
 *   tcc_device_tensor *x, *h, *y;
 *   tcc_device_tensor_upload(session, &in, &x);
 *   tcc_session_run_device(session, "encode", &x, 1, &h, 1);
 *   tcc_session_run_device(session, "decode", &h, 1, &y, 1);
 *   tcc_device_tensor_download(y, out_buffer, out_bytes);
 *   tcc_device_tensor_free(y); tcc_device_tensor_free(h);
 *   tcc_device_tensor_free(x);
 *
 * A device tensor belongs to the session that made it: only that
 * session's calls take it (TCC_ERROR_INVALID_ARGUMENT for another
 * session's, even on the same device). Each must be freed; it keeps its
 * device memory and device alive (not its session: the session may be
 * freed first). OpenCL and CUDA runtimes; a Vulkan session (whose calls
 * copy through host-visible buffers) and a placed session refuse with
 * TCC_ERROR_INVALID_ARGUMENT. */

/* A copy of a host tensor (any dtype and shape; `bytes` must be its size)
 * in `session`'s device memory. Waits for the copy. */
tcc_status tcc_device_tensor_upload(tcc_session *session,
                                    const tcc_tensor *tensor,
                                    tcc_device_tensor **out);
/* Runs `function` (NULL when the model has only one) on device tensors of
 * `session`: `num_inputs` and `num_outputs` must be the function's counts,
 * each input of its dtype and shape (a symbolic dimension of a `--dim`
 * model: any extent in its range, the inputs agreeing). outputs[i] gets a
 * new device tensor of the session, of the shape this call gives (NULL in
 * every slot on failure). Returns when the outputs are complete; no input
 * or output crosses to the host. */
tcc_status tcc_session_run_device(tcc_session *session, const char *function,
                                  tcc_device_tensor *const *inputs,
                                  size_t num_inputs,
                                  tcc_device_tensor **outputs,
                                  size_t num_outputs);
/* Copies the tensor into `data`, `bytes` bytes (its size exactly, else
 * TCC_ERROR_INVALID_ARGUMENT), C order. */
tcc_status tcc_device_tensor_download(const tcc_device_tensor *tensor,
                                      void *data, uint64_t bytes);
/* The tensor's dtype, rank, shape and size; `name` is the function
 * output's it came from ("" for an upload or an unnamed output). The
 * pointers stay valid until the tensor is freed. */
tcc_status tcc_device_tensor_info(const tcc_device_tensor *tensor,
                                  tcc_tensor_info *info);
tcc_status tcc_device_tensor_free(tcc_device_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* TCC_RUNTIME_H */
