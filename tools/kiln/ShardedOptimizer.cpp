//===- ShardedOptimizer.cpp - ZeRO-1 around a data-parallel step ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "ShardedOptimizer.h"

#include "kiln/Dialect/Graph/Transforms/TrainStep.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <climits>
#include <cmath>

using namespace kiln::cli;
using namespace llvm;

std::string ShardedOptimizer::describe() const {
  return formatv("ZeRO-1: optimizer state {0} bytes on rank {1} of {2}, {3} "
                 "bytes in one process ({4:F2}x)",
                 rankBytes, ranks->rank(), ranks->world(), wholeBytes,
                 wholeBytes ? double(rankBytes) / double(wholeBytes) : 1.0)
      .str();
}

Error ShardedOptimizer::create(Communicator &ranks, TrainSession &session,
                               std::optional<ShardedOptimizer> &result) {
  ShardedOptimizer sharded(ranks, session);
  for (const auto &[accumulator, elements] : session.gradientAccumulators()) {
    Parameter param;
    param.name = StringRef(accumulator).drop_back(strlen(".grad_acc")).str();
    param.elements = elements;
    graph::ZeroShard first =
        graph::ZeroShard::of(int64_t(elements), ranks.world(), 0);
    if (!first.whole)
      for (int rank = 0; rank < ranks.world(); ++rank) {
        graph::ZeroShard part =
            graph::ZeroShard::of(int64_t(elements), ranks.world(), rank);
        if (part.end - part.begin > INT_MAX)
          return createStringError(formatv(
              "'{0}' has a part of {1} values on rank {2}, beyond MPI's int "
              "counts",
              param.name, part.end - part.begin, rank));
        param.counts.push_back(int(part.end - part.begin));
      }
    // The step's gradient sums reduce-scatter it (GradientSums).
    if (!param.counts.empty())
      if (Error error = session.reduceInParts(accumulator, param.counts))
        return error;
    sharded.parameters.push_back(std::move(param));
  }
  // The state that belongs to a parameter (`<param>.<kind>`), here and
  // whole.
  for (const StateBuffer &state : session.optimizerState()) {
    for (const Parameter &param : sharded.parameters) {
      if (!StringRef(state.name).starts_with(param.name + ".") ||
          StringRef(state.name).ends_with(".grad_acc"))
        continue;
      sharded.rankBytes += state.bytes;
      sharded.wholeBytes += state.bytes / state.elements * param.elements;
    }
  }
  result.emplace(std::move(sharded));
  return Error::success();
}

Error ShardedOptimizer::beforeApply() {
  if (!session->hasEntry(graph::kZeroNormEntry))
    return Error::success();
  // The global norm: the root of the sum of the ranks' squared norms.
  if (Error error = session->run(graph::kZeroNormEntry.data()))
    return error;
  if (Error error = session->finish(graph::kZeroNormEntry.data()))
    return error;
  double part =
      session->readScalar(graph::kZeroShardNormOutput.data()).value_or(NAN);
  double squares = part * part;
  if (Error error = ranks->sumInPlace(&squares, 1))
    return error;
  return session->bindScalar(graph::kZeroGradNormInput, std::sqrt(squares));
}

Error ShardedOptimizer::afterApply() {
  if (Error error = session->finish("apply_step"))
    return error;
  std::vector<std::string> names;
  std::vector<std::vector<int>> counts;
  for (const Parameter &param : parameters)
    if (!param.counts.empty()) {
      names.push_back(param.name);
      counts.push_back(param.counts);
    }
  return session->gatherParts(names, counts);
}
