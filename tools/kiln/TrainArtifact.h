//===- TrainArtifact.h - Compiling a model for training, cached -*- C++ -*-===//
//
// Part of Kiln. `kiln train` compiles a model into an artifact directory
// (plan.kpl, kernels.so, model.h) once and reuses it: the cache key hashes
// the model file, the options that change the compiled step, and the
// compiler's version, so a second run starts at once.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_TRAINARTIFACT_H
#define KILN_TOOLS_KILN_TRAINARTIFACT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "kiln/runtime.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kiln::cli {

/// What changes the compiled training step besides the model file.
struct TrainCompileOptions {
  /// Overrides the train block's `steps` (the schedule's length).
  std::optional<int64_t> steps;
  /// Overrides the train block's `accumulate`.
  std::optional<int64_t> accumulate;
  /// "cpu".
  std::string device = "cpu";
  /// The x86-64 CPU that kernels.so is generated for. `kiln train` runs
  /// what it compiles on the machine that compiles it, so it defaults to
  /// this machine's CPU and features (AVX2/AVX-512 where present); the
  /// cache key holds the resolved CPU, so a cache shared between machines
  /// never hands one an artifact built for another.
  std::string cpu = "native";
  /// The bytes the training step's peak_bytes must fit in (overrides the
  /// train block's `memory`); over it, compilation fails.
  std::optional<int64_t> memoryBudget;
  /// No progress lines on a long compile (--quiet).
  bool quiet = false;
  /// Fuse (--graph-fuse, --kernel-merge-launches); `--no-fuse` clears it,
  /// for measuring what fusion buys.
  bool fuse = true;
  /// Overrides the train block's `precision` (empty: keep it).
  std::string precision;
  /// Keep the optimizer-written 16-bit weight copies (CompileOptions).
  bool weightCopies = true;
  /// Compile only the inference entries (predict, eval_step), for sampling
  /// from a checkpoint: no training step, no optimizer state.
  bool inferenceOnly = false;
  /// Data-parallel ranks: the artifact of one rank, whose batch dim is the
  /// model's divided by `world` (each rank takes its slice of every batch)
  /// and whose apply_step takes the mean over the ranks' summed
  /// accumulators.
  int64_t world = 1;
  /// ZeRO-1 (zero = 1): the artifact of rank `rank`, which keeps the
  /// optimizer state of its part of each parameter only.
  int64_t zero = 0;
  int64_t rank = 0;
  /// A data-parallel step's gradient sums, placed in the plan
  /// (--kernel-insert-collectives): buckets of
  /// `bucketBytes`, started during the backward with `overlapCollectives`.
  int64_t bucketBytes = 1 << 20;
  bool overlapCollectives = true;
};

/// Closes an artifact handle of the C API.
struct ArtifactCloser {
  void operator()(kiln_artifact *artifact) const {
    kiln_artifact_close(artifact);
  }
};
using ArtifactHandle = std::unique_ptr<kiln_artifact, ArtifactCloser>;

/// The result of compiling (or finding in the cache).
struct TrainArtifact {
  std::string directory;
  /// The artifact, open: the cache entry as it was validated, or the one
  /// just written (TrainSession::open takes it).
  ArtifactHandle opened;
  bool fromCache = false;
  double compileSeconds = 0;
  /// The train block's settings after overrides.
  int64_t steps = 0;
  /// Set when --steps is within the warmup of a decaying schedule: the run
  /// takes this many steps of the train block's schedule (of `steps`).
  std::optional<int64_t> stopAfter;
  int64_t accumulate = 1;
  /// With world > 1: the model's batch dim, its value (the global batch)
  /// and the rank's share of it (the artifact's).
  std::string batchDim;
  int64_t globalBatch = 0, rankBatch = 0;
  std::optional<int64_t> batchSeed, evalEvery;
  /// The train block's `seed`: of the initializers and dropout.
  std::optional<int64_t> seed;
};

/// The directory of Kiln's compiled-artifact cache: $KILN_CACHE_DIR, else
/// $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
std::string getCacheDirectory();

/// Compiles `modelPath` for training, or finds the artifact in the cache.
/// Front-end errors are printed (located) and returned as a plain failure.
llvm::Expected<TrainArtifact>
compileForTraining(llvm::StringRef modelPath,
                   const TrainCompileOptions &options);

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_TRAINARTIFACT_H
