//===- Session.h - An artifact's buffers, by name, on a device ---*- C++
//-*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A Session is the same on every device (Device.h): it owns the host copy
// of each persistent buffer (parameters, optimizer state, gradients,
// inputs, outputs, constants, RNG and status words) and does everything by
// name: binding, running entries, reading results, steps, checkpoints,
// initialization, check-numerics and the profile. Where the buffers live
// and the ops run is its Device's.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SESSION_H
#define KILN_RUNTIME_SESSION_H

#include "AlignedMemory.h"
#include "Artifact.h"
#include "Device.h"
#include "GradientOverlap.h"
#include "PlanCollectives.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {

/// Whether `buffer` is mixed precision's low-precision copy of a weight
/// (WeightCopies.cpp): derived from its parameter, not checkpointed.
bool isWeightCopy(const BufferInfo &buffer);
/// Whether `buffer` accumulates a parameter's gradient over micro-batches
/// (`<param>.grad_acc` state, TrainStep.h; Checkpoint.cpp).
bool isGradientAccumulator(const BufferInfo &buffer);

class Session {
public:
  ~Session();
  /// kiln_device_check: whether sessions can run on `device` here.
  static Result checkDevice(const std::string &device);
  struct Options {
    std::string device = "cpu";
    /// Host threads (0: ThreadPool::defaultSize()); 0 on cuda.
    int numThreads = 0;
    int deviceIndex = 0;
    /// cuda: every GEMM on the heuristic's first algorithm, none timed.
    bool deterministic = false;
  };
  /// Creates a session of `artifact` as `options` say.
  static Result create(std::shared_ptr<const Artifact> artifact,
                       const Options &options,
                       std::unique_ptr<Session> &session);

  const Artifact &getArtifact() const { return *artifact_; }
  int getNumThreads() const { return device_->getNumThreads(); }
  const GemmInfo &getGemmInfo() const { return device_->getGemmInfo(); }

  /// Parameters from their initializers with `seed`; state and gradients
  /// zeroed; step 0.
  Result initialize(uint64_t seed);
  Result bindInput(const std::string &name, const void *data, kiln_dtype dtype,
                   const int64_t *shape, int32_t rank);
  /// Runs `entry`. On a device that runs asynchronously (cuda) it returns
  /// once the run is queued, and its failure is reported by the next call
  /// that waits for it (synchronize, a read, another run).
  Result run(const std::string &entry);
  /// Waits for the runs in flight and reports their failure.
  Result synchronize();
  Result readOutput(const std::string &name, kiln_dtype dtype, void *data,
                    size_t sizeBytes);
  Result getBuffer(const std::string &name, void *data, size_t sizeBytes);
  Result setBuffer(const std::string &name, const void *data, size_t sizeBytes);
  Result bufferData(const std::string &name, void *&data);

  uint64_t getStep() const { return step_; }
  void setStep(uint64_t step) {
    step_ = step;
    microBatches_ = 0;
  }
  /// Rank `rank` of `world` data-parallel ranks: accumulate_step's k-th
  /// micro-batch draws dropout as micro-batch k * world + rank.
  void setDataParallel(uint32_t rank, uint32_t world) {
    rank_ = rank;
    world_ = world;
  }
  uint64_t getSeed() const { return seed_; }
  /// Joins this session's rank among the data-parallel ranks on the
  /// device's own collectives (Device::joinRanks).
  Result joinRanks(const void *id, double timeoutSeconds);
  /// Sums persistent f32 buffers `names` over the ranks on the device, or
  /// with `parts` (names x world values) reduces or gathers their runs.
  Result collectOverRanks(const std::vector<std::string> &names,
                          RankCollective::Kind kind,
                          const uint64_t *parts = nullptr);
  /// kiln_session_arm_gradient_sums: arms the next accumulate_step, with
  /// the caller's collectives on the cpu devices, the device's (null) on
  /// cuda.
  Result armGradientSums(const kiln_collectives *collectives);
  /// kiln_session_reduce_in_parts: how the device's own gradient sums
  /// treat accumulator `name` (world values).
  Result reduceInParts(const std::string &name, const uint64_t *parts);
  const kiln_overlap_stats &getOverlapStats() const { return overlapStats_; }
  /// kiln_nccl_unique_id: NCCL's id for a new group of ranks.
  static Result makeNcclUniqueId(void *id, std::string &description);

  /// With `gather` (every rank calls it: kiln_session_save_checkpoint_
  /// gathered), the parts of sharded state come together on the rank that
  /// `writes`; the others only send theirs.
  Result saveCheckpoint(const std::string &path,
                        const std::string &userMetadata,
                        const kiln_gather *gather = nullptr,
                        bool writes = true);
  Result loadCheckpoint(const std::string &path, int32_t flags,
                        std::string *userMetadata);

  void setCheckNumerics(bool enabled) { checkNumerics_ = enabled; }
  void setProfiling(bool enabled);
  size_t getProfileCount() const;
  Result getProfile(size_t index, kiln_op_profile &profile) const;
  /// kiln_session_op_detail: what op `index` is on the device.
  Result getOpDetail(size_t index, const char *&detail);

  /// The last error on this session, for kiln_session_last_error.
  std::string lastError;

private:
  class Checks;
  Session() = default;
  /// The host copy of every persistent buffer, constants filled in.
  Result allocate();
  /// The persistent buffer `name`; `action` words the error message.
  Result findPersistent(const std::string &name, const char *action,
                        int64_t &id) const;
  /// Whether buffer `id` is an output (its kind, or an entry lists it).
  bool isOutput(size_t id) const;
  /// The runs in flight finished and buffer `id`'s (or every persistent
  /// buffer's) host copy current, before the host reads or writes it.
  Result syncToHost(size_t id);
  Result syncAllToHost();
  /// The host copy of `id` (or of every persistent buffer) was written.
  Result hostWrote(size_t id);
  /// Mixed precision's weight copies (WeightCopies.cpp): found once, noted
  /// stale when the host writes their parameter, derived again before a run.
  Result findWeightCopies();
  void noteHostWrote(size_t id);
  Result refreshWeightCopies();
  /// Writes the rng_state words ([seed lo, seed hi, step, `microBatch`])
  /// and clears the status words before a run.
  Result prepareRunBuffers(uint32_t microBatch);
  /// Fails (KILN_ERROR_NUMERICS) if a parameter or optimizer state holds a
  /// NaN or an infinity, naming it, with `purpose` after the message.
  Result checkFiniteState(const std::string &purpose) const;
  /// The messages of the checks made on an op's results (Diagnostics.cpp).
  Result checkNumerics(size_t entry, size_t op, uint32_t id,
                       const void *bytes) const;
  Result checkStatus(size_t entry, size_t op, uint32_t id,
                     const void *bytes) const;
  const plan::Op &getOp(size_t entry, size_t op) const;

  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Checks> checks_;
  std::vector<AlignedMemory> storage_;
  /// The plan's gradient buckets (listPlanBuckets), each of whose buffers
  /// lie in one block of storage_.
  std::vector<PlanBucket> buckets_;
  /// The host copy of every persistent buffer (null for the transients,
  /// which only the device holds).
  std::vector<void *> pointers_;
  /// Each entry's name and per-op profile.
  std::vector<std::string> entryNames_;
  std::vector<EntryProfile> profiles_;
  /// Each op's description by the device, made when first asked for.
  std::vector<std::string> details_;
  /// Inputs bound at least once.
  std::vector<bool> bound_;
  /// (weight copy, its parameter) buffer ids; the parameters the host wrote
  /// since the copies were last derived.
  std::vector<std::pair<size_t, size_t>> weightCopies_;
  std::vector<bool> paramWritten_;
  uint64_t step_ = 0;
  /// accumulate_step runs since the last train_step or apply_step: the
  /// micro-batch index dropout keys the next one by.
  uint32_t microBatches_ = 0;
  uint32_t rank_ = 0;
  uint32_t world_ = 1;
  uint64_t seed_ = 0;
  /// The next accumulate_step's gradient sums, when armed; the last one's
  /// figures.
  std::unique_ptr<GradientOverlap> armedOverlap_;
  /// An armed run of the device's own sums, and its stats.
  bool deviceSumsArmed_ = false;
  kiln_overlap_stats deviceSums_ = {};
  kiln_overlap_stats overlapStats_ = {};
  bool checkNumerics_ = false;
  bool profiling_ = false;
  /// Under fp16 loss scaling (the plan outputs `skipped`), --check-numerics
  /// holds the first non-finite value it finds until the step's update
  /// decides: a skipped step overflowed on purpose and is no failure.
  bool defersNumerics_ = false;
  std::optional<Result> deferredNumerics_;
  /// Reports or drops the deferred finding once the entry that updates
  /// (train_step, apply_step) has run.
  Result resolveDeferredNumerics();
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_SESSION_H
