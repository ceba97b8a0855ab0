//===- GradientOverlap.h - Gradient sums during the backward ----*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A data-parallel step sums its gradient accumulators (`<param>.grad_acc`)
// over the ranks. Armed for a run of accumulate_step (the step's last
// micro-batch, kiln_session_overlap_gradient_sums), this starts those sums
// while the backward still runs: the accumulators are put in buckets in
// the order of the op that last touches each (reads or writes it) in the
// entry, a bucket closing once it holds `bucketBytes`; each bucket's sum
// starts right after its last member's last op, the caller's collectives
// progress between ops, and the run waits for every bucket at its end, so
// that apply_step sees the sums. The schedule comes from the plan alone:
// every rank starts the same buckets in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GRADIENTOVERLAP_H
#define KILN_RUNTIME_GRADIENTOVERLAP_H

#include "Artifact.h"
#include "Device.h"
#include "Result.h"
#include "kiln/runtime.h"

#include <cstdint>
#include <vector>

namespace kiln {
namespace runtime {

/// One bucket: its accumulators' buffer ids and the op after which its sum
/// starts (-1: before the first op, for accumulators the entry never
/// touches).
struct GradientBucket {
  std::vector<uint32_t> buffers;
  /// Each buffer's f32 count.
  std::vector<size_t> counts;
  long startAfterOp = -1;
  uint64_t bytes = 0;
};

/// The buckets of entry `entry` for buckets of at least `bucketBytes`
/// (the last may hold less).
std::vector<GradientBucket> planGradientBuckets(const Artifact &artifact,
                                                size_t entry,
                                                uint64_t bucketBytes);

/// One armed run: the buckets, the caller's collectives, what it measured.
class GradientOverlap : public OpHook {
public:
  GradientOverlap(std::vector<GradientBucket> buckets,
                  const kiln_collectives &collectives,
                  std::vector<void *> hostBuffers, size_t opCount);
  /// Before the first op (-1) and after op `op`: starts the buckets due,
  /// then lets the started ones progress.
  Result afterOp(long op) override;
  /// Waits for every bucket (in order), after the entry's last op.
  Result finish();
  const kiln_overlap_stats &getStats() const { return stats_; }

private:
  Result check(const char *what, const char *message) const;

  std::vector<GradientBucket> buckets_;
  kiln_collectives collectives_;
  std::vector<void *> host_;
  size_t next_ = 0;
  kiln_overlap_stats stats_ = {};
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_GRADIENTOVERLAP_H
