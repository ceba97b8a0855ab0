/* npy.h - a minimal reader of NumPy .npy files for the embedding examples.
 *
 * Reads a C-order array of one expected dtype ("<f4" for float32, "<i4" for
 * int32) into malloc'ed memory. Enough for the bundled data sets; a real
 * program would use its own data pipeline. Assumes a little-endian host, as
 * Kiln's runtime does.
 */
#ifndef KILN_EXAMPLES_NPY_H
#define KILN_EXAMPLES_NPY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loads `path`, whose dtype must be `descr`. Returns the data (free() it) and
 * sets *rows to the first dim and *cols to the product of the others (1 for
 * a vector); prints why and returns NULL on failure. */
static void *npy_load(const char *path, const char *descr, int64_t *rows,
                      int64_t *cols) {
  unsigned char prefix[12];
  char header[4096], want[32];
  void *data = NULL;
  FILE *file = fopen(path, "rb");
  if (!file) {
    perror(path);
    return NULL;
  }
  /* "\x93NUMPY", version, then the header's length: 2 bytes in version 1,
   * 4 bytes in versions 2 and 3. */
  size_t length = 0, got = fread(prefix, 1, 10, file);
  if (got == 10 && memcmp(prefix, "\x93NUMPY", 6) == 0) {
    length = prefix[8] | (size_t)prefix[9] << 8;
    if (prefix[6] >= 2 && fread(prefix + 10, 1, 2, file) == 2)
      length |= (size_t)prefix[10] << 16 | (size_t)prefix[11] << 24;
  }
  snprintf(want, sizeof want, "'descr': '%s'", descr);
  const char *shape = NULL;
  if (length > 0 && length < sizeof header &&
      fread(header, 1, length, file) == length) {
    header[length] = '\0';
    if (strstr(header, want) && strstr(header, "'fortran_order': False"))
      shape = strstr(header, "'shape': (");
  }
  /* The shape, e.g. "(359, 64)": rows, then the product of the rest. */
  int64_t count[2] = {1, 1};
  if (shape)
    shape += strlen("'shape': (");
  for (int dim = 0; shape && *shape != ')'; ++dim) {
    char *end;
    long long n = strtoll(shape, &end, 10);
    if (end == shape || n < 0) {
      shape = NULL;
      break;
    }
    count[dim > 0] *= n;
    for (shape = end; *shape == ',' || *shape == ' ';)
      ++shape;
  }
  size_t bytes = (size_t)(count[0] * count[1]) * (size_t)(descr[2] - '0');
  if (shape && (data = malloc(bytes ? bytes : 1)) &&
      fread(data, 1, bytes, file) != bytes) {
    free(data);
    data = NULL;
  }
  if (!data)
    fprintf(stderr, "%s: not a C-order .npy array of %s\n", path, descr);
  fclose(file);
  *rows = count[0];
  *cols = count[1];
  return data;
}

#endif /* KILN_EXAMPLES_NPY_H */
