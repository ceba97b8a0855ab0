//===- TrainSession.h - A runtime session fed by data loaders ---*- C++ -*-===//
//
// Part of Kiln. The pieces of `kiln train` between the runtime's C API and
// the data loaders: opening the artifact, matching datasets to the plan's
// inputs (shapes and dtypes checked, errors naming the input and the file),
// running steps and evaluations, checkpoints with the data position.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_TRAINSESSION_H
#define KILN_TOOLS_KILN_TRAINSESSION_H

#include "TrainArtifact.h"

#include "kiln/DataLoader.h"
#include "kiln/runtime.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cli {

class Communicator;

/// Where training or evaluation data comes from: `.npy` arrays by input
/// name, or one token file for a language model's `tokens`/`targets`.
struct DataSource {
  std::vector<std::pair<std::string, std::string>> arrays;
  std::string tokenFile;
  bool empty() const { return arrays.empty() && tokenFile.empty(); }
};

/// An input of the plan: its name, dtype and shape.
struct PlanInput {
  std::string name;
  kiln_dtype dtype;
  std::vector<int64_t> shape;
};

/// A persistent state buffer of the plan (optimizer state, accumulators).
struct StateBuffer {
  std::string name;
  uint64_t bytes = 0;
  uint64_t elements = 0;
};

/// Averages of one evaluation pass.
struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;
  int64_t examples = 0;
};

/// A runtime session with its artifact, owning both.
class TrainSession {
public:
  ~TrainSession();

  /// Takes the open `artifact` and creates a session on `device`.
  static llvm::Expected<std::unique_ptr<TrainSession>>
  open(ArtifactHandle artifact, const std::string &device, int32_t numThreads,
       bool deterministic = false, int32_t deviceIndex = 0);

  /// Opens a dataset for the inputs of `entry`: shuffled with `seed` for
  /// training, sequential for evaluation (`evalBatches` windows of a token
  /// file; 0: as many as fit).
  llvm::Expected<std::unique_ptr<data::Dataset>>
  openDataset(const DataSource &source, bool training, uint64_t seed,
              int64_t evalBatches = 0);

  /// Makes this session `communicator`'s rank among its data-parallel
  /// ranks: its training datasets yield whole batches (world x the plan's
  /// batch), of which bind() takes the rank's contiguous slice, and dropout
  /// draws the rank's part of the whole batch's masks. On cuda the ranks
  /// join an NCCL group (its id broadcast from rank 0), which sums the
  /// gradients on the GPUs; elsewhere MPI sums the host buffers.
  llvm::Error setDataParallel(Communicator &communicator);
  /// What sums the gradients: "Open MPI v4.1.4", "NCCL 2.28.9 (...)".
  const std::string &describeCollectives() const { return collectives; }
  /// Whether the device sums over the ranks itself (cuda: NCCL) rather
  /// than through the host's MPI.
  bool sumsOnDevice() const { return device == "cuda"; }
  /// Binds one batch to the plan's inputs of the same names (the rank's
  /// slice of a whole batch).
  llvm::Error bind(const data::Batch &batch);
  /// The next accumulate_step (a step's last micro-batch) runs
  /// the plan's gradient sums (placed by the compiler): through
  /// `communicator` on the cpu devices, NCCL on cuda
  /// (kiln_session_arm_gradient_sums).
  llvm::Error armGradientSums(Communicator &communicator);
  /// The gradient accumulators a data-parallel step sums (`*.grad_acc`):
  /// name and f32 count (after setDataParallel).
  const std::vector<std::pair<std::string, size_t>> &
  gradientAccumulators() const {
    return accumulators;
  }
  /// The plan's optimizer state buffers.
  std::vector<StateBuffer> optimizerState() const;
  /// ZeRO-1 (after setDataParallel): the step's gradient sums reduce
  /// `accumulator`'s runs (one per rank, `counts` values each) onto their
  /// ranks instead of summing it whole (NCCL on cuda, MPI elsewhere).
  llvm::Error reduceInParts(const std::string &accumulator,
                            std::vector<int> counts);
  /// ZeRO-1: every rank's run of each of `names` (tiled as `counts[i]`) to
  /// every rank.
  llvm::Error gatherParts(const std::vector<std::string> &names,
                          const std::vector<std::vector<int>> &counts);
  /// Binds the scalar input `name` (f32 or f64, as the plan has it).
  llvm::Error bindScalar(llvm::StringRef name, double value);
  /// The last overlapped run's buckets and times.
  kiln_overlap_stats overlapStats() const;
  /// Runs an entry point.
  /// Queues `entry` (on cuda it may still run when this returns).
  llvm::Error run(const char *entry);
  /// Waits for the runs in flight; their failure, as `entry`'s.
  llvm::Error finish(const char *entry);
  /// Reads a scalar f32/f64 output, or nullopt if the entry has none of that
  /// name.
  std::optional<double> readScalar(const char *name);
  /// Copies an f32 output (after a run) into `values`.
  llvm::Error readOutput(const char *name, std::vector<float> &values);
  /// The dtype and shape of an output, if the plan has it.
  const std::pair<kiln_dtype, std::vector<int64_t>> *
  findOutput(llvm::StringRef name) const;
  /// Evaluates `eval_step` over one pass of `dataset`.
  llvm::Expected<EvalResult> evaluate(data::Dataset &dataset);

  llvm::Error initialize(uint64_t seed);
  llvm::Error loadParameters(const std::string &path);
  /// Loads a full checkpoint and returns its metadata string.
  llvm::Expected<std::string> resume(const std::string &path);
  llvm::Error save(const std::string &path, const std::string &metadata);
  /// Saves a checkpoint whose sharded state (ZeRO-1) every rank of
  /// `communicator` sends to rank 0, which writes it: every rank calls it.
  llvm::Error saveGathered(const std::string &path, const std::string &metadata,
                           Communicator &communicator);
  uint64_t step() const;
  /// "2 threads; GEMMs: oneDNN 2.6.3 (avx512_core_amx)", and in `warning`
  /// what the runtime says when a GEMM library runs generic kernels.
  std::string describeDevice(std::string &warning) const;
  /// Times every op from now on.
  llvm::Error enableProfiling();
  /// Prints the time per op kind and model line, most expensive first.
  void printProfile(llvm::raw_ostream &os, size_t limit) const;
  /// Stop at the first NaN or infinity, naming the op's model line.
  llvm::Error setCheckNumerics(bool enabled);
  bool hasEntry(llvm::StringRef name) const;
  const std::vector<PlanInput> &inputs() const { return planInputs; }

  /// The error of the last failing runtime call on this session.
  llvm::Error lastError(llvm::StringRef what) const;

private:
  TrainSession() = default;
  const PlanInput *findInput(llvm::StringRef name) const;
  /// The host memory of the persistent buffer `name` (the cpu devices).
  llvm::Expected<void *> bufferData(llvm::StringRef name);

  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
  /// The device the session runs on ("cpu", "cuda", "cuda-emulator").
  std::string device;
  std::vector<PlanInput> planInputs;
  int rank = 0, world = 1;
  /// The ranks' communicator (setDataParallel).
  Communicator *ranks = nullptr;
  std::string collectives;
  /// The communicator the armed run's collectives go through, and the
  /// message of the last one that failed.
  Communicator *overlapping = nullptr;
  std::string collectiveError;
  /// A kiln_collectives result: null, or `error`'s message, kept here.
  static const char *reportCollective(void *user, llvm::Error error);
  /// The gradient accumulators a data-parallel step sums: name, f32 count.
  std::vector<std::pair<std::string, size_t>> accumulators;
  std::vector<std::string> entries;
  llvm::StringMap<std::pair<kiln_dtype, std::vector<int64_t>>> outputs;
};

/// Parses `NAME=FILE` pairs.
llvm::Expected<std::vector<std::pair<std::string, std::string>>>
parseNamedFiles(llvm::ArrayRef<std::string> specs, llvm::StringRef option);

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_TRAINSESSION_H
