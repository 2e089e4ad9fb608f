/* two_models: two models linked into one program.
 *
 *   tcc compile test/models/mlp.mlir --emit=staticlib --name=mlp -o libmlp.a
 *   tcc compile test/models/cnn.mlir --emit=staticlib --name=cnn -o libcnn.a
 *   cc two_models.c -I runtime/include libmlp.a libcnn.a \
 *      -L target/debug -ltcc_runtime -o two_models
 *   ./two_models [mlp.so cnn.so]
 *
 * Each model's symbols carry its name (mlp_tcc_artifact_v1, ...), so both
 * link into one binary and load without any file. Given the same models as
 * shared libraries, it checks that the linked-in ones compute the same
 * bytes.
 */
#include "tcc_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TCC_DECLARE_LINKED_MODEL(mlp);
TCC_DECLARE_LINKED_MODEL(cnn);

#define CHECK(call)                                                          \
  do {                                                                       \
    tcc_status status_ = (call);                                             \
    if (status_ != TCC_OK) {                                                 \
      fprintf(stderr, "error: %s: %s\n", #call, tcc_last_error());           \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

/* Runs the model's only function on a fixed f32 pattern; returns the
 * output's bytes (malloc'ed) and size. */
static float *run_once(tcc_runtime *rt, tcc_model *model, uint64_t *bytes) {
  tcc_tensor_info in_info, out_info;
  const char *name;
  CHECK(tcc_model_function(model, 0, &name, NULL, NULL));
  CHECK(tcc_model_input(model, 0, 0, &in_info));
  CHECK(tcc_model_output(model, 0, 0, &out_info));
  float *x = malloc(in_info.bytes), *y = malloc(out_info.bytes);
  for (uint64_t i = 0; i < in_info.bytes / 4; i++) x[i] = (float)((int)(i % 9) - 4) * 0.1f;
  tcc_tensor in = {x, in_info.bytes, in_info.dtype, in_info.rank, in_info.shape};
  tcc_tensor out = {y, out_info.bytes, out_info.dtype, out_info.rank, out_info.shape};
  tcc_session *session;
  CHECK(tcc_session_create(rt, model, &session));
  CHECK(tcc_session_run(session, NULL, &in, 1, &out, 1));
  CHECK(tcc_session_free(session));
  free(x);
  *bytes = out_info.bytes;
  printf("@%s:", name);
  for (uint64_t i = 0; i < out_info.bytes / 4 && i < 6; i++) printf(" %.6f", y[i]);
  printf("\n");
  return y;
}

int main(int argc, char **argv) {
  if (argc != 1 && argc != 3) {
    fprintf(stderr, "usage: two_models [mlp.so cnn.so]\n");
    return 2;
  }
  tcc_runtime *rt;
  CHECK(tcc_runtime_create(NULL, &rt));
  tcc_model *linked[2];
  CHECK(tcc_model_load_linked(TCC_LINKED_MODEL(mlp), &linked[0]));
  CHECK(tcc_model_load_linked(TCC_LINKED_MODEL(cnn), &linked[1]));
  for (int m = 0; m < 2; m++) {
    const char *producer;
    CHECK(tcc_model_producer(linked[m], &producer));
    printf("linked model %d made by %s\n", m, producer);
    uint64_t bytes;
    float *y = run_once(rt, linked[m], &bytes);
    if (argc == 3) {
      tcc_model *from_file;
      CHECK(tcc_model_load_file(argv[1 + m], &from_file));
      uint64_t bytes2;
      float *y2 = run_once(rt, from_file, &bytes2);
      if (bytes != bytes2 || memcmp(y, y2, bytes) != 0) {
        fprintf(stderr, "error: the linked-in model and %s disagree\n", argv[1 + m]);
        return 1;
      }
      CHECK(tcc_model_free(from_file));
      free(y2);
    }
    free(y);
    CHECK(tcc_model_free(linked[m]));
  }
  CHECK(tcc_runtime_free(rt));
  printf("ok\n");
  return 0;
}
