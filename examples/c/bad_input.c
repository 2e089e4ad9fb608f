/* bad_input: drives the C API with the bad input of issue 11 and checks
 * that each gives the documented status and a message, never a crash.
 *
 *   ./bad_input model.so FUNCTION
 *
 * FUNCTION must take one f32 input and return one f32 output (the tests use
 * @axpb of the runtime's test fixture, or @mlp of test/models/mlp.mlir).
 * Prints one line per check and exits 0 only if every check passed. Built
 * with -fsanitize=address,undefined by the test suite, where available.
 */
#include "tcc_runtime.h"
#include "read_file.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

/* Checks that `got` is `want` and that the message contains `needle`. */
static void expect(const char *what, tcc_status got, tcc_status want, const char *needle) {
  const char *message = got == TCC_OK ? "" : tcc_last_error();
  int ok = got == want && (!needle || strstr(message, needle));
  printf("%s %s: %s%s%s\n", ok ? "ok  " : "FAIL", what, tcc_status_name(got), *message ? ": " : "", message);
  if (!ok) {
    printf("     expected %s%s%s\n", tcc_status_name(want), needle ? " mentioning " : "", needle ? needle : "");
    failures++;
  }
}

/* The one-input one-output function under test. */
static const char *function;
static tcc_tensor_info in_info, out_info;

struct worker {
  tcc_session *session;
  const float *x;
  const float *expected;
  int runs;
  int bad; /* calls that failed or gave wrong results */
  int invalid_handle; /* calls refused because the session was freed */
};

static void *run_many(void *arg) {
  struct worker *w = arg;
  float *y = malloc(out_info.bytes);
  for (int i = 0; i < w->runs; i++) {
    tcc_tensor in = {(void *)w->x, in_info.bytes, in_info.dtype, in_info.rank, in_info.shape};
    tcc_tensor out = {y, out_info.bytes, out_info.dtype, out_info.rank, out_info.shape};
    tcc_status s = tcc_session_run(w->session, function, &in, 1, &out, 1);
    if (s == TCC_ERROR_INVALID_HANDLE) w->invalid_handle++;
    else if (s != TCC_OK || memcmp(y, w->expected, out_info.bytes) != 0) w->bad++;
  }
  free(y);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bad_input MODEL.so FUNCTION\n");
    return 2;
  }
  const char *path = argv[1];
  function = argv[2];
  tcc_runtime *rt = NULL;
  tcc_model *model = NULL;
  tcc_session *session = NULL;

  /* Null pointers. */
  expect("runtime_create(out=NULL)", tcc_runtime_create(NULL, NULL), TCC_ERROR_NULL_ARGUMENT, "out");
  expect("model_load_file(path=NULL)", tcc_model_load_file(NULL, &model), TCC_ERROR_NULL_ARGUMENT, "path");
  expect("model_load_memory(data=NULL)", tcc_model_load_memory(NULL, 10, NULL, &model), TCC_ERROR_NULL_ARGUMENT, "data");
  expect("model_load_linked(NULL)", tcc_model_load_linked(NULL, &model), TCC_ERROR_NULL_ARGUMENT, NULL);
  expect("session_free(NULL)", tcc_session_free(NULL), TCC_ERROR_NULL_ARGUMENT, NULL);
  expect("no such device", tcc_runtime_create("no-such-device-anywhere", &rt), TCC_ERROR_DEVICE, "no OpenCL device matches");
  expect("device index out of range", tcc_runtime_create_by_index(100000, &rt), TCC_ERROR_DEVICE, NULL);
  expect("missing file", tcc_model_load_file("/nonexistent/model.so", &model), TCC_ERROR_LOAD, "cannot load artifact");

  /* Truncated and foreign artifacts in memory. */
  size_t size = 0;
  unsigned char *bytes = read_file(path, &size);
  if (!bytes) {
    fprintf(stderr, "error: cannot read %s\n", path);
    return 1;
  }
  expect("foreign bytes in memory", tcc_model_load_memory("hello, world", 12, "hello", &model), TCC_ERROR_LOAD, "not an ELF file");
  expect("truncated header in memory", tcc_model_load_memory(bytes, 40, "cut", &model), TCC_ERROR_LOAD, "truncated");
  expect("truncated artifact in memory", tcc_model_load_memory(bytes, size / 2, "half", &model), TCC_ERROR_LOAD, "truncated");
  expect("empty artifact in memory", tcc_model_load_memory(bytes, 0, "empty", &model), TCC_ERROR_LOAD, NULL);

  /* A good model, from memory. */
  expect("load from memory", tcc_model_load_memory(bytes, size, "in memory", &model), TCC_OK, NULL);
  free(bytes);
  expect("runtime_create", tcc_runtime_create(NULL, &rt), TCC_OK, NULL);
  expect("session_create", tcc_session_create(rt, model, &session), TCC_OK, NULL);
  size_t f = 0;
  expect("find_function", tcc_model_find_function(model, function, &f), TCC_OK, NULL);
  expect("unknown function", tcc_model_find_function(model, "nope", &f), TCC_ERROR_NOT_FOUND, "available functions");
  expect("function index out of range", tcc_model_function(model, 999, NULL, NULL, NULL), TCC_ERROR_NOT_FOUND, NULL);
  expect("input info", tcc_model_input(model, f, 0, &in_info), TCC_OK, NULL);
  expect("output info", tcc_model_output(model, f, 0, &out_info), TCC_OK, NULL);
  expect("input index out of range", tcc_model_input(model, f, 7, &in_info), TCC_ERROR_NOT_FOUND, NULL);
  if (in_info.dtype != TCC_DTYPE_F32 || out_info.dtype != TCC_DTYPE_F32) {
    fprintf(stderr, "error: @%s must take and return f32\n", function);
    return 1;
  }

  size_t n = in_info.bytes / 4;
  float *x = malloc(in_info.bytes), *y = malloc(out_info.bytes), *expected = malloc(out_info.bytes);
  for (size_t i = 0; i < n; i++) x[i] = (float)(i % 11) * 0.25f - 1.0f;
  tcc_tensor in = {x, in_info.bytes, TCC_DTYPE_F32, in_info.rank, in_info.shape};
  tcc_tensor out = {expected, out_info.bytes, TCC_DTYPE_F32, out_info.rank, out_info.shape};
  expect("a good call", tcc_session_run(session, function, &in, 1, &out, 1), TCC_OK, NULL);
  out.data = y;

  /* Wrong number, dtype, shape and size of buffers. */
  expect("no inputs", tcc_session_run(session, function, NULL, 0, &out, 1), TCC_ERROR_INVALID_ARGUMENT, "input");
  expect("inputs array NULL", tcc_session_run(session, function, NULL, 1, &out, 1), TCC_ERROR_NULL_ARGUMENT, NULL);
  tcc_tensor two[2] = {in, in};
  expect("two inputs", tcc_session_run(session, function, two, 2, &out, 1), TCC_ERROR_INVALID_ARGUMENT, "got 2");
  expect("no outputs", tcc_session_run(session, function, &in, 1, NULL, 0), TCC_ERROR_INVALID_ARGUMENT, "output");
  tcc_tensor bad = in;
  bad.dtype = TCC_DTYPE_I32;
  expect("wrong dtype", tcc_session_run(session, function, &bad, 1, &out, 1), TCC_ERROR_INVALID_ARGUMENT, "xi32");
  bad = in;
  bad.dtype = 99;
  expect("unknown dtype", tcc_session_run(session, function, &bad, 1, &out, 1), TCC_ERROR_INVALID_ARGUMENT, "dtype");
  int64_t wrong_shape[8] = {0};
  memcpy(wrong_shape, in_info.shape, in_info.rank * sizeof(int64_t));
  wrong_shape[0] += 1;
  bad = in;
  bad.shape = wrong_shape;
  expect("wrong shape", tcc_session_run(session, function, &bad, 1, &out, 1), TCC_ERROR_INVALID_ARGUMENT, "expects");
  bad = in;
  bad.shape = NULL;
  expect("shape NULL", tcc_session_run(session, function, &bad, 1, &out, 1), TCC_ERROR_NULL_ARGUMENT, "shape");
  bad = in;
  bad.bytes -= 4;
  expect("wrong byte count", tcc_session_run(session, function, &bad, 1, &out, 1), TCC_ERROR_INVALID_ARGUMENT, "bytes");
  bad = in;
  bad.data = NULL;
  expect("input data NULL", tcc_session_run(session, function, &bad, 1, &out, 1), TCC_ERROR_NULL_ARGUMENT, "data");
  tcc_tensor bad_out = out;
  bad_out.data = NULL;
  expect("output data NULL", tcc_session_run(session, function, &in, 1, &bad_out, 1), TCC_ERROR_NULL_ARGUMENT, "data");
  expect("unknown function in run", tcc_session_run(session, "nope", &in, 1, &out, 1), TCC_ERROR_NOT_FOUND, NULL);
  tcc_call *call = (tcc_call *)1;
  expect("async with bad input", tcc_session_run_async(session, function, &bad, 1, &out, 1, &call), TCC_ERROR_NULL_ARGUMENT, NULL);
  if (call != NULL) { printf("FAIL async left *call set\n"); failures++; }

  /* Handles of the wrong kind, made up, used after free. */
  expect("a model passed as a session", tcc_session_run(session ? (tcc_session *)model : NULL, function, &in, 1, &out, 1), TCC_ERROR_INVALID_HANDLE, "model handle");
  expect("a made-up handle", tcc_model_free((tcc_model *)0x1234), TCC_ERROR_INVALID_HANDLE, NULL);
  tcc_runtime *rt2;
  expect("second runtime", tcc_runtime_create(NULL, &rt2), TCC_OK, NULL);
  expect("free it", tcc_runtime_free(rt2), TCC_OK, NULL);
  expect("free it again", tcc_runtime_free(rt2), TCC_ERROR_INVALID_HANDLE, "already freed");
  const char *name;
  expect("use it after free", tcc_runtime_device(rt2, &name), TCC_ERROR_INVALID_HANDLE, "already freed");

  /* The session keeps its model and runtime: free them first. */
  expect("free the model under a session", tcc_model_free(model), TCC_OK, NULL);
  expect("model after free", tcc_model_function_count(model, &n), TCC_ERROR_INVALID_HANDLE, NULL);
  expect("the session still runs", tcc_session_run(session, function, &in, 1, &out, 1), TCC_OK, NULL);
  if (memcmp(y, expected, out_info.bytes) != 0) { printf("FAIL different result\n"); failures++; }

  /* An asynchronous call, polled and waited for; waiting twice. */
  expect("async call", tcc_session_run_async(session, function, &in, 1, &out, 1, &call), TCC_OK, NULL);
  int done = 0;
  expect("poll", tcc_call_done(call, &done), TCC_OK, NULL);
  expect("wait", tcc_call_wait(call), TCC_OK, NULL);
  expect("wait again", tcc_call_wait(call), TCC_ERROR_INVALID_HANDLE, NULL);
  if (memcmp(y, expected, out_info.bytes) != 0) { printf("FAIL async result differs\n"); failures++; }

  /* The in-flight depth and compute queues: bad settings are refused, then
   * three calls go in flight at once on two queues of the session's own. */
  expect("in-flight depth 0", tcc_session_set_max_in_flight(session, 0), TCC_ERROR_INVALID_ARGUMENT, "at least 1");
  expect("compute queues \"many\"", tcc_session_set_compute_queues(session, "many"), TCC_ERROR_INVALID_ARGUMENT, "auto, shared");
  expect("compute queues NULL", tcc_session_set_compute_queues(session, NULL), TCC_ERROR_NULL_ARGUMENT, NULL);
  expect("compute queues of a made-up handle", tcc_session_set_compute_queues((tcc_session *)0x1234, "2"), TCC_ERROR_INVALID_HANDLE, NULL);
  expect("in-flight depth 2", tcc_session_set_max_in_flight(session, 2), TCC_OK, NULL);
  expect("compute queues 2", tcc_session_set_compute_queues(session, "2"), TCC_OK, NULL);
  {
    enum { CALLS = 3 };
    float *ys[CALLS];
    tcc_call *calls[CALLS];
    for (int c = 0; c < CALLS; c++) {
      ys[c] = calloc(1, out_info.bytes);
      calls[c] = NULL;
      tcc_tensor own_out = out;
      own_out.data = ys[c];
      expect("async call on own queues", tcc_session_run_async(session, function, &in, 1, &own_out, 1, &calls[c]), TCC_OK, NULL);
    }
    for (int c = 0; c < CALLS; c++) {
      expect("wait on own queues", tcc_call_wait(calls[c]), TCC_OK, NULL);
      if (memcmp(ys[c], expected, out_info.bytes) != 0) { printf("FAIL own-queue result differs\n"); failures++; }
      free(ys[c]);
    }
  }
  expect("compute queues shared again", tcc_session_set_compute_queues(session, "shared"), TCC_OK, NULL);

  /* Several threads on one session, then on sessions of their own. */
  enum { THREADS = 6, RUNS = 15 };
  pthread_t threads[THREADS];
  struct worker workers[THREADS];
  for (int t = 0; t < THREADS; t++) {
    workers[t] = (struct worker){session, x, expected, RUNS, 0, 0};
    pthread_create(&threads[t], NULL, run_many, &workers[t]);
  }
  int bad_calls = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(threads[t], NULL);
    bad_calls += workers[t].bad + workers[t].invalid_handle;
  }
  expect("6 threads x 15 calls on one session", bad_calls ? TCC_ERROR_RUN : TCC_OK, TCC_OK, NULL);

  /* Threads still calling while another frees the session: each call either
   * runs or is refused; none crashes. */
  for (int t = 0; t < THREADS; t++) {
    workers[t] = (struct worker){session, x, expected, RUNS, 0, 0};
    pthread_create(&threads[t], NULL, run_many, &workers[t]);
  }
  expect("free the session while threads call it", tcc_session_free(session), TCC_OK, NULL);
  int wrong = 0, refused = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(threads[t], NULL);
    wrong += workers[t].bad;
    refused += workers[t].invalid_handle;
  }
  printf("     (%d of %d calls refused after the free)\n", refused, THREADS * RUNS);
  expect("calls during the free ran or were refused", wrong ? TCC_ERROR_RUN : TCC_OK, TCC_OK, NULL);
  expect("session after free", tcc_session_run(session, function, &in, 1, &out, 1), TCC_ERROR_INVALID_HANDLE, "already freed");
  expect("free the runtime", tcc_runtime_free(rt), TCC_OK, NULL);

  free(x);
  free(y);
  free(expected);
  printf("%d failure%s\n", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
