/*===- test_kernels.c - Kernels for the runtime's unit tests
 *---------------===//
 *
 * Part of Kiln. Hand-written kernels with the cpu kernel ABI that
 * `kiln compile` follows: `void k(void **buffers, int64_t begin, int64_t
 * end)` computes the slice [begin, end) of its outermost parallel dim.
 * RuntimeExecutorTest.cpp builds plans that call them.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdint.h>

#define KILN_TEST_EXPORT __attribute__((visibility("default")))

/* buffers: a f32[n], b f32[n], out f32[n]; one iteration per element. */
KILN_TEST_EXPORT void kiln_test_add(void **buffers, int64_t begin,
                                    int64_t end) {
  const float *a = (const float *)buffers[0];
  const float *b = (const float *)buffers[1];
  float *out = (float *)buffers[2];
  for (int64_t i = begin; i < end; ++i)
    out[i] = a[i] + b[i];
}

/* The signature table a compiled kernels.so exports (kiln/KernelSignatures.h),
 * for plans that record this file's hash (the plan fuzz test): kiln_test_add
 * over 6 floats. Plans without a hash (every other test) are not checked. */
KILN_TEST_EXPORT const char kiln_kernel_signatures[] =
    "kiln_test_add 6 24 24 24\n"
    "kiln_test_gather 5 20 32 20 16\n";

/* buffers: x f32[rows, cols], cols i64[1] (a constant), y f32[rows, cols];
 * one iteration per row. The row sums are reductions inside an iteration,
 * so the result must not depend on how rows are chunked. */
KILN_TEST_EXPORT void kiln_test_row_softmax(void **buffers, int64_t begin,
                                            int64_t end) {
  const float *x = (const float *)buffers[0];
  int64_t cols = *(const int64_t *)buffers[1];
  float *y = (float *)buffers[2];
  for (int64_t row = begin; row < end; ++row) {
    const float *in = x + row * cols;
    float *out = y + row * cols;
    float max = in[0];
    for (int64_t c = 1; c < cols; ++c)
      max = in[c] > max ? in[c] : max;
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      out[c] = expf(in[c] - max);
      sum += out[c];
    }
    for (int64_t c = 0; c < cols; ++c)
      out[c] /= sum;
  }
}

/* buffers: x f32[n], y f32[n]: y = log(x), NaN for negative x. */
KILN_TEST_EXPORT void kiln_test_log(void **buffers, int64_t begin,
                                    int64_t end) {
  const float *x = (const float *)buffers[0];
  float *y = (float *)buffers[1];
  for (int64_t i = begin; i < end; ++i)
    y[i] = logf(x[i]);
}

/* buffers: begins i64[n], ends i64[n]: records, for every iteration, the
 * chunk that computed it, so tests can check how the runtime chunked. */
KILN_TEST_EXPORT void kiln_test_record_chunk(void **buffers, int64_t begin,
                                             int64_t end) {
  int64_t *begins = (int64_t *)buffers[0];
  int64_t *ends = (int64_t *)buffers[1];
  for (int64_t i = begin; i < end; ++i) {
    begins[i] = begin;
    ends[i] = end;
  }
}

/* buffers: w f32[n], g f32[n]: w -= 0.5 * g, an in-place parameter update
 * such as an optimizer's. */
KILN_TEST_EXPORT void kiln_test_sgd(void **buffers, int64_t begin,
                                    int64_t end) {
  float *w = (float *)buffers[0];
  const float *g = (const float *)buffers[1];
  for (int64_t i = begin; i < end; ++i)
    w[i] -= 0.5f * g[i];
}

/* buffers: ids i32[n], table f32[8], out f32[n], status i64[2]: an
 * embedding lookup that reports an id outside [0, 8) as code 1, as
 * generated gathers do, instead of reading out of bounds. */
KILN_TEST_EXPORT void kiln_test_gather(void **buffers, int64_t begin,
                                       int64_t end) {
  const int32_t *ids = (const int32_t *)buffers[0];
  const float *table = (const float *)buffers[1];
  float *out = (float *)buffers[2];
  int64_t *status = (int64_t *)buffers[3];
  for (int64_t i = begin; i < end; ++i) {
    if (ids[i] < 0 || ids[i] >= 8) {
      status[0] = 1;
      status[1] = ids[i];
      out[i] = 0.0f;
      continue;
    }
    out[i] = table[ids[i]];
  }
}

/* buffers: rng i32[4], out i32[4]: copies the rng state the runtime filled. */
KILN_TEST_EXPORT void kiln_test_read_rng(void **buffers, int64_t begin,
                                         int64_t end) {
  const int32_t *rng = (const int32_t *)buffers[0];
  int32_t *out = (int32_t *)buffers[1];
  for (int64_t i = begin; i < end; ++i)
    out[i] = rng[i];
}
