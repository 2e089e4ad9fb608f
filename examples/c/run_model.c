/* run_model: runs a tcc-compiled model through the C API.
 *
 *   cc run_model.c -I runtime/include -L target/debug -ltcc_runtime \
 *      -Wl,-rpath,$PWD/target/debug -o run_model
 *   ./run_model model.so [FUNCTION] [--device=SELECTOR]
 *
 * It lists the model's functions with their inputs and outputs, fills the
 * inputs of FUNCTION (default: the first) with a fixed pattern, runs it
 * synchronously, then loads the same model again from memory and runs it
 * through the asynchronous call handle, checks that both give the same
 * bytes, and prints the first values of each output. Exit status 0 on
 * success, 1 with "error: ..." on stderr otherwise.
 */
#include "tcc_runtime.h"
#include "read_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dtype_name(uint32_t dtype) {
  static const char *names[] = {"f32", "f16", "i32", "i64", "i8", "i1"};
  return dtype < 6 ? names[dtype] : "?";
}

static void print_type(const tcc_tensor_info *t) {
  for (uint32_t d = 0; d < t->rank; d++) printf("%lldx", (long long)t->shape[d]);
  printf("%s", dtype_name(t->dtype));
}

#define CHECK(call)                                                          \
  do {                                                                       \
    tcc_status status_ = (call);                                             \
    if (status_ != TCC_OK) {                                                 \
      fprintf(stderr, "error: %s: %s (%s)\n", #call, tcc_last_error(),       \
              tcc_status_name(status_));                                     \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

/* Prints function `f`'s inputs (or outputs) as "name: type, ...". */
static void print_tensors(tcc_model *model, size_t f, size_t count, int outputs) {
  for (size_t i = 0; i < count; i++) {
    tcc_tensor_info info;
    CHECK(outputs ? tcc_model_output(model, f, i, &info) : tcc_model_input(model, f, i, &info));
    printf("%s%s%s", i ? ", " : "", info.name, *info.name ? ": " : "");
    print_type(&info);
  }
}

/* Fills `bytes` of a tensor of `dtype` with a small repeating pattern. */
static void fill(void *data, uint64_t bytes, uint32_t dtype) {
  unsigned char *p = data;
  switch (dtype) {
  case TCC_DTYPE_F32:
    for (uint64_t i = 0; i < bytes / 4; i++) ((float *)data)[i] = (float)((int)(i % 13) - 6) * 0.125f;
    break;
  case TCC_DTYPE_I32:
    for (uint64_t i = 0; i < bytes / 4; i++) ((int32_t *)data)[i] = (int32_t)(i % 7);
    break;
  case TCC_DTYPE_I64:
    for (uint64_t i = 0; i < bytes / 8; i++) ((int64_t *)data)[i] = (int64_t)(i % 7);
    break;
  default: /* f16 zeros, i8 and bool 0/1 */
    for (uint64_t i = 0; i < bytes; i++) p[i] = dtype == TCC_DTYPE_F16 ? 0 : (unsigned char)(i % 2);
  }
}

/* The tensors of one call: inputs filled, outputs zeroed. */
typedef struct {
  size_t n_in, n_out;
  tcc_tensor *in, *out;
} call_buffers;

static call_buffers make_buffers(tcc_model *model, size_t f, size_t n_in, size_t n_out) {
  call_buffers b = {n_in, n_out, calloc(n_in + 1, sizeof(tcc_tensor)), calloc(n_out + 1, sizeof(tcc_tensor))};
  for (size_t i = 0; i < n_in + n_out; i++) {
    tcc_tensor_info info;
    int is_in = i < n_in;
    CHECK(is_in ? tcc_model_input(model, f, i, &info) : tcc_model_output(model, f, i - n_in, &info));
    tcc_tensor *t = is_in ? &b.in[i] : &b.out[i - n_in];
    t->data = calloc(info.bytes ? info.bytes : 1, 1);
    t->bytes = info.bytes;
    t->dtype = info.dtype;
    t->rank = info.rank;
    t->shape = info.shape; /* valid while the model lives */
    if (is_in) fill(t->data, t->bytes, t->dtype);
  }
  return b;
}

static void free_buffers(call_buffers *b) {
  for (size_t i = 0; i < b->n_in; i++) free(b->in[i].data);
  for (size_t i = 0; i < b->n_out; i++) free(b->out[i].data);
  free(b->in);
  free(b->out);
}

int main(int argc, char **argv) {
  const char *path = NULL, *function = NULL, *device = NULL;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--device=", 9) == 0) device = argv[i] + 9;
    else if (!path) path = argv[i];
    else if (!function) function = argv[i];
    else {
      fprintf(stderr, "error: unexpected argument %s\nusage: run_model MODEL.so [FUNCTION] [--device=SELECTOR]\n", argv[i]);
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "usage: run_model MODEL.so [FUNCTION] [--device=SELECTOR]\n");
    return 2;
  }
  if (tcc_api_version() / 100 != TCC_RUNTIME_API_VERSION / 100) {
    fprintf(stderr, "error: libtcc_runtime has API version %u, this program was built for %u\n",
            tcc_api_version(), TCC_RUNTIME_API_VERSION);
    return 1;
  }
  printf("%s\n", tcc_version());

  tcc_runtime *rt;
  const char *device_name;
  CHECK(tcc_runtime_create(device, &rt));
  CHECK(tcc_runtime_device(rt, &device_name));
  printf("device: %s\n", device_name);

  tcc_model *model;
  CHECK(tcc_model_load_file(path, &model));
  const char *producer;
  CHECK(tcc_model_producer(model, &producer));
  size_t count;
  CHECK(tcc_model_function_count(model, &count));
  printf("%s: %zu function%s, made by %s\n", path, count, count == 1 ? "" : "s", producer);
  for (size_t f = 0; f < count; f++) {
    const char *name;
    size_t n_in, n_out;
    CHECK(tcc_model_function(model, f, &name, &n_in, &n_out));
    printf("  @%s(", name);
    print_tensors(model, f, n_in, 0);
    printf(") -> (");
    print_tensors(model, f, n_out, 1);
    printf(")\n");
  }

  size_t f = 0;
  if (function) CHECK(tcc_model_find_function(model, function, &f));
  const char *name;
  size_t n_in, n_out;
  CHECK(tcc_model_function(model, f, &name, &n_in, &n_out));

  /* Synchronously, on the model loaded from the file. */
  tcc_session *session;
  CHECK(tcc_session_create(rt, model, &session));
  call_buffers sync = make_buffers(model, f, n_in, n_out);
  CHECK(tcc_session_run(session, name, sync.in, n_in, sync.out, n_out));

  /* The same model from memory, through a completion handle. */
  size_t size = 0;
  unsigned char *bytes = read_file(path, &size);
  if (!bytes) {
    fprintf(stderr, "error: cannot read %s\n", path);
    return 1;
  }
  tcc_model *in_memory;
  CHECK(tcc_model_load_memory(bytes, size, "model in memory", &in_memory));
  free(bytes); /* the library copied what it needs */
  tcc_session *session2;
  CHECK(tcc_session_create(rt, in_memory, &session2));
  call_buffers async = make_buffers(in_memory, f, n_in, n_out);
  tcc_call *call;
  CHECK(tcc_session_run_async(session2, name, async.in, n_in, async.out, n_out, &call));
  CHECK(tcc_call_wait(call));

  for (size_t i = 0; i < n_out; i++) {
    if (memcmp(sync.out[i].data, async.out[i].data, sync.out[i].bytes) != 0) {
      fprintf(stderr, "error: output %zu differs between the file and the in-memory model\n", i);
      return 1;
    }
    printf("result[%zu]:", i);
    uint64_t shown = sync.out[i].dtype == TCC_DTYPE_F32 ? sync.out[i].bytes / 4 : 0;
    for (uint64_t k = 0; k < shown && k < 8; k++) printf(" %g", ((float *)sync.out[i].data)[k]);
    printf("%s\n", shown > 8 ? " ..." : "");
  }
  printf("ok: @%s from a file and from memory agree\n", name);

  free_buffers(&sync);
  free_buffers(&async);
  CHECK(tcc_session_free(session));
  CHECK(tcc_session_free(session2));
  CHECK(tcc_model_free(model));
  CHECK(tcc_model_free(in_memory));
  CHECK(tcc_runtime_free(rt));
  return 0;
}
