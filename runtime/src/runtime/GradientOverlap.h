//===- GradientOverlap.h - Gradient sums during the backward ----*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A data-parallel step sums its gradient accumulators (`<param>.grad_acc`)
// over the ranks. The compiler placed the sums in the plan
// (--kernel-insert-collectives): a CollectiveStart op where the backward
// has finished a bucket's accumulators, a CollectiveWait op where the sum
// is needed. Armed for a run of accumulate_step (the step's last
// micro-batch, kiln_session_arm_gradient_sums), this runs them through the
// caller's collectives as the run reaches them, and lets the started ones
// progress between the ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GRADIENTOVERLAP_H
#define KILN_RUNTIME_GRADIENTOVERLAP_H

#include "Artifact.h"
#include "Device.h"
#include "PlanCollectives.h"
#include "Result.h"
#include "kiln/runtime.h"

#include <cstdint>
#include <vector>

namespace kiln {
namespace runtime {

/// One armed run of an entry with collectives.
class GradientOverlap : public OpHook {
public:
  /// `buckets`: the entry's (listPlanBuckets); `opCount`: its ops.
  GradientOverlap(const Artifact &artifact, std::vector<PlanBucket> buckets,
                  const kiln_collectives &collectives,
                  std::vector<void *> hostBuffers, size_t opCount);
  /// Before the first op (-1) and after op `op`: starts or waits for its
  /// bucket where `op` is a collective op, then lets the started ones
  /// progress.
  Result afterOp(long op) override;
  /// After the entry's last op: every bucket was waited for.
  Result finish();
  const kiln_overlap_stats &getStats() const { return stats_; }
  /// What a run of an entry of `opCount` ops with `buckets` will do: the
  /// buckets, their bytes, the ops that are not collective ops and how
  /// many of them run before the first start (times zero).
  static kiln_overlap_stats plannedStats(const std::vector<PlanBucket> &buckets,
                                         size_t opCount);

private:
  Result check(const char *what, const char *message) const;
  Result start(const PlanBucket &bucket, long op);

  const Artifact &artifact_;
  std::vector<PlanBucket> buckets_;
  kiln_collectives collectives_;
  std::vector<void *> host_;
  /// Each op's bucket to start (or wait for, below), or -1.
  std::vector<long> startAt_, waitAt_;
  /// The entry's ops before each op that are not collective ops.
  std::vector<long> computeOpsBefore_;
  size_t started_ = 0, waited_ = 0;
  kiln_overlap_stats stats_ = {};
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_GRADIENTOVERLAP_H
