//===- ShardedOptimizer.h - ZeRO-1 around a data-parallel step --*- C++ -*-===//
//
// Part of Kiln. `kiln train --zero 1`: each rank keeps the optimizer state
// of its part of every parameter only (graph::ZeroShard, the compiler's
// @apply_step of that rank), so the state's bytes per rank fall by the
// world size. A step's gradient sums then reduce-scatter the accumulators
// (each rank gets the sum on its part; during the backward like the sums,
// GradientSums.h); before apply_step the ranks' gradient norms are
// combined where clipping or loss scaling needs the global one; after it
// the parameters are all-gathered (each rank's updated part to every
// rank). The session carries it: MPI on the host buffers of the cpu
// devices, NCCL on the GPU (an ncclReduce onto, an ncclBroadcast from
// each rank's run).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_SHARDEDOPTIMIZER_H
#define KILN_TOOLS_KILN_SHARDEDOPTIMIZER_H

#include "Distributed.h"
#include "TrainSession.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cli {

class ShardedOptimizer {
public:
  /// For a session made data-parallel over `ranks` whose artifact was
  /// compiled with zero = 1 for this rank; from then on the step's gradient
  /// sums through `ranks` reduce-scatter the split parameters'
  /// accumulators.
  static llvm::Error create(Communicator &ranks, TrainSession &session,
                            std::optional<ShardedOptimizer> &sharded);

  /// "ZeRO-1: optimizer state 1.2 MB on this rank, 2.4 MB in one process".
  std::string describe() const;

  /// After the step's gradient sums, before apply_step: the global
  /// gradient norm, where apply_step uses it.
  llvm::Error beforeApply();
  /// After apply_step: every rank's updated parts to every rank.
  llvm::Error afterApply();

  /// The optimizer state's bytes on this rank, and in one process (the
  /// gradient accumulators, which every rank keeps whole, not counted).
  uint64_t rankStateBytes() const { return rankBytes; }
  uint64_t wholeStateBytes() const { return wholeBytes; }

private:
  ShardedOptimizer(Communicator &ranks, TrainSession &session)
      : ranks(&ranks), session(&session) {}

  struct Parameter {
    std::string name;
    size_t elements = 0;
    /// Each rank's part (values); empty when the parameter is not split.
    std::vector<int> counts;
  };
  Communicator *ranks;
  TrainSession *session;
  std::vector<Parameter> parameters;
  uint64_t rankBytes = 0, wholeBytes = 0;
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_SHARDEDOPTIMIZER_H
