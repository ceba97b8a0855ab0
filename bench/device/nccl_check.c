/*===- nccl_check.c - A one-GPU NCCL group through the runtime, as JSON ---===
 *
 * Part of Kiln's device bench (bench/device/run.sh). Plain C11 over the
 * runtime's C API:
 *
 *   nccl_check ARTIFACT OUT.json [REPEATS]
 *
 * Makes a cuda session on ARTIFACT (parameters from seed 0), makes an NCCL
 * group id (kiln_nccl_unique_id), joins it as rank 0 of 1 and sums every
 * f32 parameter over that group of one REPEATS times (default 20): the
 * path of a data-parallel step's gradient all-reduce (its own stream, the
 * compute stream waiting for it, the watch) on one GPU. A sum over one
 * rank is the values themselves: the parameters must come back bit for
 * bit. Writes which NCCL ran, the bytes summed, the median time of one
 * sum and whether the bytes stayed equal.
 * Exit code 3 when NCCL does not load (the stage is skipped, saying so),
 * 2 when the device cannot run, 1 on any other failure.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include "kiln/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *call, kiln_status status) {
  fprintf(stderr, "nccl_check: %s: %s (status %d)\n", call, kiln_last_error(),
          (int)status);
  return status == KILN_ERROR_DEVICE ? 2 : 1;
}

static double nowMs(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: nccl_check ARTIFACT OUT.json [REPEATS]\n");
    return 1;
  }
  int repeats = argc > 3 ? atoi(argv[3]) : 20;
  if (repeats < 1)
    repeats = 1;
  unsigned char id[KILN_NCCL_UNIQUE_ID_BYTES];
  char *nccl = NULL;
  kiln_status status = kiln_nccl_unique_id(id, sizeof id, &nccl);
  if (status != KILN_OK) {
    fprintf(stderr, "nccl_check: skipped: %s\n", kiln_last_error());
    return 3;
  }
  kiln_artifact *artifact = NULL;
  if ((status = kiln_artifact_open(argv[1], &artifact)) != KILN_OK)
    return fail("kiln_artifact_open", status);
  kiln_session *session = NULL;
  if ((status = kiln_session_create(artifact, "cuda", 0, &session)) != KILN_OK)
    return fail("kiln_session_create", status);
  if ((status = kiln_session_initialize(session, 0)) != KILN_OK)
    return fail("kiln_session_initialize", status);

  /* Every f32 parameter, and a copy of its bytes. */
  size_t count = 0, bytes = 0, names = 0;
  kiln_artifact_buffer_count(artifact, &count);
  const char **params = calloc(count, sizeof *params);
  void **before = calloc(count, sizeof *before);
  size_t *sizes = calloc(count, sizeof *sizes);
  for (size_t i = 0; i < count; ++i) {
    kiln_buffer_info info;
    if ((status = kiln_artifact_buffer_info(artifact, i, &info)) != KILN_OK)
      return fail("kiln_artifact_buffer_info", status);
    if (info.kind != KILN_BUFFER_PARAM || info.dtype != KILN_F32)
      continue;
    params[names] = info.name;
    sizes[names] = (size_t)info.size_bytes;
    before[names] = malloc(sizes[names]);
    if ((status = kiln_session_get_buffer(session, info.name, before[names],
                                          sizes[names])) != KILN_OK)
      return fail("kiln_session_get_buffer", status);
    bytes += sizes[names++];
  }

  if ((status = kiln_session_set_data_parallel(session, 0, 1)) != KILN_OK)
    return fail("kiln_session_set_data_parallel", status);
  if ((status = kiln_session_join_nccl(session, id, sizeof id, 60)) != KILN_OK)
    return fail("kiln_session_join_nccl", status);
  double *times = calloc((size_t)repeats, sizeof *times);
  for (int r = 0; r < repeats; ++r) {
    double start = nowMs();
    if ((status = kiln_session_sum_over_ranks(session, params, names)) !=
        KILN_OK)
      return fail("kiln_session_sum_over_ranks", status);
    times[r] = nowMs() - start;
  }
  qsort(times, (size_t)repeats, sizeof *times, compareDoubles);

  int equal = 1;
  for (size_t p = 0; p < names; ++p) {
    void *after = malloc(sizes[p]);
    if ((status = kiln_session_get_buffer(session, params[p], after,
                                          sizes[p])) != KILN_OK)
      return fail("kiln_session_get_buffer", status);
    equal = equal && memcmp(after, before[p], sizes[p]) == 0;
    free(after);
  }

  FILE *out = fopen(argv[2], "w");
  if (!out) {
    perror(argv[2]);
    return 1;
  }
  fprintf(out,
          "{\"nccl\": \"%s\", \"buffers\": %zu, \"bytes\": %zu, "
          "\"repeats\": %d, \"median_ms\": %.4f, \"equal\": %s}\n",
          nccl, names, bytes, repeats, times[repeats / 2],
          equal ? "true" : "false");
  fclose(out);
  kiln_string_free(nccl);
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
  return equal ? 0 : 1;
}
