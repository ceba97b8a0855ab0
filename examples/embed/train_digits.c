/* train_digits.c - train mlp.kiln on the bundled digits through the C API.
 *
 * The embedded equivalent of `kiln train`: runs the artifact's `train_step`
 * (forward, backward and AdamW update, compiled ahead of time) until the
 * step counter reaches STEPS, printing the loss, then saves a checkpoint.
 * If CHECKPOINT already exists, training resumes from it: parameters, Adam
 * moments and step, so that 150 + 150 steps give the same bytes as 300.
 * Build and run (see README.md):
 *
 *   kiln compile examples/mlp.kiln --target=cpu --train -o mlp.kiln.d
 *   cc -std=c11 -I mlp.kiln.d -I runtime/include \
 *      examples/embed/train_digits.c -o train_digits \
 *      -L build/lib -lkiln_runtime -Wl,-rpath,"$PWD/build/lib"
 *   ./train_digits mlp.kiln.d examples/data/digits 300 digits.safetensors
 */
#include <kiln/runtime.h>

#include "model.h" /* generated into the artifact directory by kiln compile */
#include "npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KILN_MLP_ENTRY_TRAIN_STEP
#error "the artifact has no train_step: compile it with `kiln compile --train`"
#endif

/* The seed of the initializers (a fresh run only). */
#define INIT_SEED 42
/* Print the loss every this many steps. */
#define LOG_EVERY 50

/* Every runtime call returns a status; on failure, print the runtime's
 * message (it names the call and the problem) and clean up. */
#define CHECK(call)                                                            \
  do {                                                                         \
    kiln_status status_ = (call);                                              \
    if (status_ != KILN_OK) {                                                  \
      fprintf(stderr, "train_digits: %s (status %d)\n", kiln_last_error(),    \
              (int)status_);                                                   \
      goto done;                                                               \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: %s ARTIFACT.kiln.d DIGITS_DIR STEPS "
                    "CHECKPOINT.safetensors [DEVICE]\n"
                    "DEVICE: cpu (the default) for an artifact compiled for "
                    "the cpu, cuda for one compiled with --target=cuda\n",
            argv[0]);
    return 2;
  }
  const char *device = argc == 6 ? argv[5] : "cpu";
  const long long steps = strtoll(argv[3], NULL, 10);
  const char *checkpoint = argv[4];
  int exit_code = 1;
  kiln_artifact *artifact = NULL;
  kiln_session *session = NULL;
  float *images = NULL;
  int32_t *labels = NULL;

  /* One batch: x f32[B, F], y i32[B], with the shapes of model.h. */
  static const int64_t x_shape[KILN_MLP_INPUT_x_RANK] = KILN_MLP_INPUT_x_SHAPE;
  static const int64_t y_shape[KILN_MLP_INPUT_y_RANK] = KILN_MLP_INPUT_y_SHAPE;
  const int64_t batch = x_shape[0], features = x_shape[1];
  static KILN_MLP_INPUT_x_t x[KILN_MLP_INPUT_x_NUMEL];
  static KILN_MLP_INPUT_y_t y[KILN_MLP_INPUT_y_NUMEL];

  /* The training set: images f32[N, F] and labels i32[N]. */
  char path[4096];
  int64_t n, cols, label_count, one;
  snprintf(path, sizeof path, "%s/train_x.npy", argv[2]);
  if (!(images = npy_load(path, "<f4", &n, &cols)))
    goto done;
  snprintf(path, sizeof path, "%s/train_y.npy", argv[2]);
  if (!(labels = npy_load(path, "<i4", &label_count, &one)))
    goto done;
  if (cols != features || label_count != n || n == 0) {
    fprintf(stderr, "train_digits: expected %lld features and one label "
                    "per image\n", (long long)features);
    goto done;
  }

  CHECK(kiln_artifact_open(argv[1], &artifact));
  CHECK(kiln_session_create(artifact, device, 0, &session));

  /* Resume from the checkpoint if there is one (everything: parameters,
   * optimizer state, step and seed), else start from the initializers. */
  FILE *existing = fopen(checkpoint, "rb");
  if (existing) {
    fclose(existing);
    CHECK(kiln_session_load_checkpoint(session, checkpoint, KILN_LOAD_ALL,
                                       NULL));
  } else {
    CHECK(kiln_session_initialize(session, INIT_SEED));
  }
  uint64_t step;
  CHECK(kiln_session_get_step(session, &step));
  printf("training from step %llu to %lld\n", (unsigned long long)step, steps);

  /* The data order is a function of the step, so a resumed run sees the
   * batches the uninterrupted one would: step s takes rows s*B .. s*B+B-1,
   * wrapping around the training set. */
  while ((long long)step < steps) {
    for (int64_t i = 0; i < batch; ++i) {
      int64_t row = (int64_t)((step * (uint64_t)batch + (uint64_t)i) %
                              (uint64_t)n);
      memcpy(x + i * features, images + row * features,
             (size_t)features * sizeof *x);
      y[i] = labels[row];
    }
    CHECK(kiln_session_bind_input(session, KILN_MLP_INPUT_x_NAME, x, KILN_F32,
                                  x_shape, KILN_MLP_INPUT_x_RANK));
    CHECK(kiln_session_bind_input(session, KILN_MLP_INPUT_y_NAME, y, KILN_I32,
                                  y_shape, KILN_MLP_INPUT_y_RANK));
    /* One optimizer step; it advances the session's step counter. */
    CHECK(kiln_session_run(session, KILN_MLP_ENTRY_TRAIN_STEP));
    CHECK(kiln_session_get_step(session, &step));

    float loss, lr;
    CHECK(kiln_session_read_output(session, KILN_MLP_OUTPUT_loss_NAME,
                                   KILN_F32, &loss, sizeof loss));
    CHECK(kiln_session_read_output(session, KILN_MLP_OUTPUT_lr_NAME, KILN_F32,
                                   &lr, sizeof lr));
    if (!isfinite(loss)) {
      fprintf(stderr, "train_digits: the loss is %f at step %llu\n", loss,
              (unsigned long long)step);
      goto done;
    }
    if (step % LOG_EVERY == 0 || (long long)step == steps)
      printf("step %4llu  loss %.4f  lr %.2e\n", (unsigned long long)step,
             loss, lr);
  }

  /* Saved atomically: an interrupted save keeps the previous file whole. */
  CHECK(kiln_session_save_checkpoint(session, checkpoint,
                                     "{\"trained_by\": \"train_digits\"}"));
  printf("saved %s at step %llu\n", checkpoint, (unsigned long long)step);
  exit_code = 0;

done:
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
  free(images);
  free(labels);
  return exit_code;
}
