/* read_file.h: the examples' one helper outside the C API: reads a whole
 * file into memory (a model for tcc_model_load_memory). Returns NULL when
 * the file cannot be opened; the caller frees the buffer. */
#ifndef TCC_EXAMPLE_READ_FILE_H
#define TCC_EXAMPLE_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
  *size = fread(data, 1, n > 0 ? (size_t)n : 0, f);
  fclose(f);
  return data;
}

#endif
