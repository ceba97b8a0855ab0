//===- Distributed.h - The ranks of a data-parallel kiln train --*- C++ -*-===//
//
// Part of Kiln. `mpirun -np N kiln train ...` (or srun) starts N ranks of
// one data-parallel run: MPI is the bootstrap and the CPU transport. This
// is the CLI's only contact with MPI, which is optional at build time
// (KILN_HAVE_MPI): without it, or when no launcher started the process, a
// run is rank 0 of 1.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_DISTRIBUTED_H
#define KILN_TOOLS_KILN_DISTRIBUTED_H

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln::cli {

class Communicator {
public:
  /// Joins the ranks a launcher started (MPI_Init), or makes rank 0 of 1
  /// when none did. Fails when a launcher started this process and Kiln
  /// was built without MPI.
  static llvm::Expected<Communicator> join();
  Communicator(Communicator &&other) noexcept;
  Communicator &operator=(Communicator &&) = delete;
  /// Leaves the ranks (MPI_Finalize) if this one joined them.
  ~Communicator();

  int rank() const { return rank_; }
  /// The GPU this rank binds: the one CUDA_VISIBLE_DEVICES leaves it when
  /// it names a single GPU (a launcher that gives each rank its own, as
  /// `srun --gpus-per-task=1` does), else its index among the ranks on its
  /// machine (0 for one rank).
  int gpu() const;
  int world() const { return world_; }
  bool isLeader() const { return rank_ == 0; }

  /// How long a collective may wait for the other ranks before this one
  /// gives up naming those that did not answer (0: forever).
  void setTimeout(double seconds) { timeoutSeconds_ = seconds; }
  double getTimeout() const { return timeoutSeconds_; }

  /// Tells every other rank that this one reached `step`, and waits (within
  /// the timeout) until each has said the same; past the timeout, the
  /// error names the ranks that did not.
  llvm::Error heartbeat(int64_t step);
  /// Sums `count` values over the ranks, in place, every rank getting the
  /// same bits (a no-op for one rank). Past the timeout, the ranks that no
  /// longer answer a probe are named.
  /// T: float or double.
  template <typename T> llvm::Error sumInPlace(T *values, size_t count);
  /// Sums in pieces that overlap the caller's work: starts summing `count`
  /// f32 buffers (`data[i]`, `counts[i]` values) in place as `bucket`,
  /// lets every started bucket progress, and waits for one (within the
  /// timeout, naming the ranks that no longer answer past it).
  llvm::Error startSum(uint32_t bucket, float *const *data,
                       const size_t *counts, size_t count);
  llvm::Error progress();
  llvm::Error waitSum(uint32_t bucket);
  /// ZeRO-1: from now on startSum reduce-scatters `buffer` instead of
  /// summing it whole: it is tiled by the ranks' runs (`counts[r]` values
  /// for rank r, in rank order), and once its bucket is waited for this
  /// rank's run holds the sum of every rank's values there (the rest of
  /// the buffer is left undefined).
  void scatterSums(const float *buffer, std::vector<int> counts);
  /// Fills every rank's run of each buffer (tiled as above by its counts)
  /// with that rank's values, in place, within the timeout.
  llvm::Error
  allGather(const std::vector<std::pair<float *, std::vector<int>>> &buffers);
  /// Every rank's `bytes` bytes at `part`, in rank order, into rank 0's
  /// `whole` (`wholeBytes`, which must match; ignored on the others).
  llvm::Error gatherToLeader(const void *part, size_t bytes, void *whole,
                             size_t wholeBytes);
  /// Rank 0's `count` bytes into every rank's `bytes`, within the timeout.
  llvm::Error broadcast(void *bytes, size_t count);
  /// Waits until every rank has called it.
  llvm::Error barrier();
  /// Ends every rank with `code` (MPI_Abort), for a rank that fails: the
  /// others would otherwise wait for it in their next collective, and
  /// MPI_Finalize would wait for them. Returns without doing anything for
  /// one rank.
  void abortAll(int code);

  /// Why a launcher's environment names a world while this build has no
  /// MPI, or the MPI library in use ("Open MPI v4.1.4"); for messages.
  static const char *describeTransport();

private:
  Communicator(int rank, int world, bool joined)
      : rank_(rank), world_(world), joined_(joined) {}
  /// Sends `step_` on `tag` to every other rank and waits (within the
  /// timeout) for theirs; returns the ranks whose message did not come
  /// ("1, 3"), empty when all did.
  std::string exchange(int tag);
  /// Sums in place; `type` is an MPI_Datatype.
  llvm::Error sum(void *values, size_t count, size_t elementBytes,
                  const void *type);
  /// The error of a collective that did not finish within the timeout.
  llvm::Error timedOut(const char *what);

  int rank_ = 0;
  int localRank_ = 0;
  int world_ = 1;
  bool joined_ = false;
  double timeoutSeconds_ = 0;
  /// The step of the last heartbeat, for messages.
  int64_t step_ = 0;
  /// The buckets started and not yet waited for (MPI requests).
  struct PendingSums;
  std::shared_ptr<PendingSums> pending_;
  /// The buffers startSum reduce-scatters, with each rank's count.
  std::map<const float *, std::vector<int>> scattered_;
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_DISTRIBUTED_H
