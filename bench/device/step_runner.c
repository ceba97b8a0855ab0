/*===- step_runner.c - Train steps of an artifact on a device, as JSON ----===
 *
 * Part of Kiln's device bench (bench/device/run.sh). Plain C11 over the
 * runtime's C API, built on the GPU machine against the runtime built there:
 *
 *   step_runner ARTIFACT DEVICE STEPS OUT.json [--deterministic]
 *
 * Initializes the parameters with seed 0, binds every input to a fixed
 * synthetic batch (floats sin(0.37 e), integers (7 e + e / 13) mod 10: valid
 * ids and classes for the bench's models), runs train_step STEPS times (0:
 * none, the session is only created) and writes each step's loss, the
 * median step time (a step: the run and reading its loss back), the time
 * the session took to create (on cuda: loading the module, describing and
 * timing the GEMMs), the parameter count, the tokens a step takes (the
 * input "tokens", if any) and a hash of the final parameters.
 * --deterministic: kiln_session_options.deterministic (no GEMM timed).
 * Exit code 2 when the device cannot run (no driver or GPU).
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include "kiln/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *call, kiln_status status) {
  fprintf(stderr, "step_runner: %s: %s (status %d)\n", call, kiln_last_error(),
          (int)status);
  return status == KILN_ERROR_DEVICE ? 2 : 1;
}

static size_t elementBytes(kiln_dtype dtype) {
  switch (dtype) {
  case KILN_F64:
  case KILN_I64:
    return 8;
  case KILN_F16:
  case KILN_BF16:
    return 2;
  case KILN_I1:
  case KILN_U8:
    return 1;
  default:
    return 4;
  }
}

/* The synthetic batch of one input. */
static void fill(void *data, kiln_dtype dtype, size_t count) {
  for (size_t e = 0; e < count; ++e) {
    double real = sin(0.37 * (double)e);
    long integer = (long)((e * 7 + e / 13) % 10);
    switch (dtype) {
    case KILN_F32:
      ((float *)data)[e] = (float)real;
      break;
    case KILN_F64:
      ((double *)data)[e] = real;
      break;
    case KILN_I32:
      ((int *)data)[e] = (int)integer;
      break;
    case KILN_I64:
      ((long long *)data)[e] = integer;
      break;
    default:
      ((unsigned char *)data)[e * elementBytes(dtype)] = 0;
      break;
    }
  }
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int deterministic = argc == 6 && strcmp(argv[5], "--deterministic") == 0;
  if (argc != 5 && !deterministic) {
    fprintf(stderr, "usage: step_runner ARTIFACT DEVICE STEPS OUT.json "
                    "[--deterministic]\n");
    return 1;
  }
  int steps = atoi(argv[3]);
  kiln_status status;
  kiln_artifact *artifact = NULL;
  kiln_session *session = NULL;
  if ((status = kiln_device_check(argv[2])) != KILN_OK)
    return fail("kiln_device_check", status);
  if ((status = kiln_artifact_open(argv[1], &artifact)) != KILN_OK)
    return fail("kiln_artifact_open", status);
  kiln_session_options options;
  kiln_session_options_init(&options);
  options.device = argv[2];
  options.deterministic = deterministic;
  struct timespec created, ready;
  clock_gettime(CLOCK_MONOTONIC, &created);
  if ((status = kiln_session_create_with_options(artifact, &options,
                                                 &session)) != KILN_OK)
    return fail("kiln_session_create_with_options", status);
  clock_gettime(CLOCK_MONOTONIC, &ready);
  double createMs = (double)(ready.tv_sec - created.tv_sec) * 1e3 +
                    (double)(ready.tv_nsec - created.tv_nsec) / 1e6;
  if ((status = kiln_session_initialize(session, 0)) != KILN_OK)
    return fail("kiln_session_initialize", status);
  size_t count = 0;
  long long parameters = 0, tokens = 0;
  kiln_artifact_buffer_count(artifact, &count);
  for (size_t i = 0; i < count; ++i) {
    kiln_buffer_info info;
    kiln_artifact_buffer_info(artifact, i, &info);
    long long elements = 1;
    for (int32_t d = 0; d < info.rank; ++d)
      elements *= info.shape[d];
    if (info.kind == KILN_BUFFER_PARAM)
      parameters += elements;
    if (info.kind != KILN_BUFFER_INPUT)
      continue;
    if (strcmp(info.name, "tokens") == 0)
      tokens = elements;
    void *data = calloc((size_t)info.size_bytes + 1, 1);
    fill(data, info.dtype, (size_t)info.size_bytes / elementBytes(info.dtype));
    status = kiln_session_bind_input(session, info.name, data, info.dtype,
                                     info.shape, info.rank);
    free(data);
    if (status != KILN_OK)
      return fail("kiln_session_bind_input", status);
  }
  double *losses = calloc((size_t)steps + 1, sizeof(double));
  double *times = calloc((size_t)steps + 1, sizeof(double));
  for (int s = 0; s < steps; ++s) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if ((status = kiln_session_run(session, "train_step")) != KILN_OK)
      return fail("kiln_session_run", status);
    float loss = 0;
    if ((status = kiln_session_read_output(session, "loss", KILN_F32, &loss,
                                           sizeof loss)) != KILN_OK)
      return fail("kiln_session_read_output", status);
    clock_gettime(CLOCK_MONOTONIC, &end);
    losses[s] = loss;
    times[s] = (double)(end.tv_sec - start.tv_sec) * 1e3 +
               (double)(end.tv_nsec - start.tv_nsec) / 1e6;
  }
  /* FNV-1a over every parameter's bytes, in the plan's order. */
  unsigned long long hash = 1469598103934665603ull;
  for (size_t i = 0; i < count; ++i) {
    kiln_buffer_info info;
    kiln_artifact_buffer_info(artifact, i, &info);
    if (info.kind != KILN_BUFFER_PARAM)
      continue;
    unsigned char *bytes = malloc((size_t)info.size_bytes + 1);
    if ((status = kiln_session_get_buffer(session, info.name, bytes,
                                          (size_t)info.size_bytes)) != KILN_OK)
      return fail("kiln_session_get_buffer", status);
    for (int64_t b = 0; b < info.size_bytes; ++b)
      hash = (hash ^ bytes[b]) * 1099511628211ull;
    free(bytes);
  }
  qsort(times, (size_t)steps, sizeof(double), compareDoubles);
  FILE *out = fopen(argv[4], "w");
  if (!out) {
    perror(argv[4]);
    return 1;
  }
  fprintf(out, "{\"artifact\": \"%s\", \"device\": \"%s\", \"steps\": %d, ",
          argv[1], argv[2], steps);
  fprintf(out,
          "\"median_ms\": %.4f, \"create_ms\": %.1f, \"parameters\": %lld, "
          "\"tokens_per_step\": %lld, \"params_hash\": \"%016llx\", "
          "\"losses\": [",
          steps ? times[steps / 2] : 0.0, createMs, parameters, tokens, hash);
  for (int s = 0; s < steps; ++s)
    fprintf(out, "%s%.9g", s ? ", " : "", losses[s]);
  fprintf(out, "]}\n");
  fclose(out);
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
  free(losses);
  free(times);
  return 0;
}
