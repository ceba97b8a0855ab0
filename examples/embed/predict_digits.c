/* predict_digits.c - classify the digits test set with a compiled mlp.kiln.
 *
 * Opens an artifact of examples/mlp.kiln, loads its weights from a checkpoint
 * (or initializes them with a seed), runs `predict` over the test set batch
 * by batch and prints the accuracy. Build and run (see README.md):
 *
 *   kiln compile examples/mlp.kiln --target=cpu -o mlp.kiln.d
 *   cc -std=c11 -I mlp.kiln.d -I runtime/include \
 *      examples/embed/predict_digits.c -o predict_digits \
 *      -L build/lib -lkiln_runtime -Wl,-rpath,"$PWD/build/lib"
 *   ./predict_digits mlp.kiln.d examples/data/digits [CHECKPOINT.safetensors]
 */
#include <kiln/runtime.h>

#include "model.h" /* generated into the artifact directory by kiln compile */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The seed of the initializers when no checkpoint is given. */
#define INIT_SEED 42

/* Every runtime call returns a status; on failure, print the runtime's
 * message (it names the call and the problem) and clean up. */
#define CHECK(call)                                                            \
  do {                                                                         \
    kiln_status status_ = (call);                                              \
    if (status_ != KILN_OK) {                                                  \
      fprintf(stderr, "predict_digits: %s (status %d)\n", kiln_last_error(),  \
              (int)status_);                                                   \
      goto done;                                                               \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s ARTIFACT.kiln.d DIGITS_DIR "
                    "[CHECKPOINT.safetensors]\n", argv[0]);
    return 2;
  }
  int exit_code = 1;
  kiln_artifact *artifact = NULL;
  kiln_session *session = NULL;
  float *images = NULL;
  int32_t *labels = NULL;

  /* Shapes come from model.h: x is f32[B, F], logits f32[B, C]. */
  static const int64_t x_shape[KILN_MLP_INPUT_x_RANK] = KILN_MLP_INPUT_x_SHAPE;
  static const int64_t logits_shape[] = KILN_MLP_OUTPUT_logits_SHAPE;
  const int64_t batch = x_shape[0], features = x_shape[1];
  const int64_t classes = logits_shape[1];
  static KILN_MLP_INPUT_x_t x[KILN_MLP_INPUT_x_NUMEL];
  static KILN_MLP_OUTPUT_logits_t logits[KILN_MLP_OUTPUT_logits_NUMEL];

  /* The test set: images f32[N, F] and labels i32[N]. */
  char path[4096];
  int64_t n, cols, label_count, one;
  snprintf(path, sizeof path, "%s/test_x.npy", argv[2]);
  if (!(images = npy_load(path, "<f4", &n, &cols)))
    goto done;
  snprintf(path, sizeof path, "%s/test_y.npy", argv[2]);
  if (!(labels = npy_load(path, "<i4", &label_count, &one)))
    goto done;
  if (cols != features || label_count != n) {
    fprintf(stderr, "predict_digits: expected %lld features and one label "
                    "per image\n", (long long)features);
    goto done;
  }

  /* Open the artifact and create a session on the cpu (0 threads: the
   * KILN_NUM_THREADS environment variable, or every core). */
  CHECK(kiln_artifact_open(argv[1], &artifact));
  const char *model, *target;
  CHECK(kiln_artifact_model(artifact, &model, &target));
  if (strcmp(model, KILN_MLP_MODEL) != 0) {
    fprintf(stderr, "predict_digits: %s holds model '%s', not '%s'\n",
            argv[1], model, KILN_MLP_MODEL);
    goto done;
  }
  CHECK(kiln_session_create(artifact, "cpu", 0, &session));
  /* The session keeps the artifact alive: our reference can go now. */
  CHECK(kiln_artifact_close(artifact));
  artifact = NULL;

  /* Weights: parameters only (predicting needs no optimizer state), or the
   * model's initializers, which draw the same numbers for the same seed on
   * every machine. */
  if (argc == 4) {
    CHECK(kiln_session_load_checkpoint(session, argv[3],
                                       KILN_LOAD_PARAMS_ONLY, NULL));
    printf("weights: %s\n", argv[3]);
  } else {
    CHECK(kiln_session_initialize(session, INIT_SEED));
    printf("weights: initialized with seed %d\n", INIT_SEED);
  }

  /* The batch size is fixed at compile time: the last, partial batch is
   * padded with zeros and only its real rows are counted. */
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += batch) {
    int64_t rows = n - start < batch ? n - start : batch;
    memset(x, 0, sizeof x);
    memcpy(x, images + start * features,
           (size_t)(rows * features) * sizeof *x);
    /* bind_input copies: x may be refilled as soon as it returns. */
    CHECK(kiln_session_bind_input(session, KILN_MLP_INPUT_x_NAME, x, KILN_F32,
                                  x_shape, KILN_MLP_INPUT_x_RANK));
    CHECK(kiln_session_run(session, KILN_MLP_ENTRY_PREDICT));
    CHECK(kiln_session_read_output(session, KILN_MLP_OUTPUT_logits_NAME,
                                   KILN_F32, logits, sizeof logits));
    for (int64_t row = 0; row < rows; ++row) {
      const float *scores = logits + row * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (scores[c] > scores[best])
          best = c;
      correct += best == labels[start + row];
    }
  }
  printf("accuracy: %.2f%% (%lld of %lld test images)\n",
         100.0 * (double)correct / (double)n, (long long)correct,
         (long long)n);
  exit_code = 0;

done:
  /* Both accept null, so cleanup needs no bookkeeping. */
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
  free(images);
  free(labels);
  return exit_code;
}
