//===- GradientSums.h - A data-parallel step's gradient sums ---*- C++ -*-===//
//
// Part of Kiln. A data-parallel step sums every rank's gradient
// accumulators before apply_step. On the cpu devices the sums start while
// the step's last micro-batch still runs its backward (buckets in the
// order the backward finishes them, kiln_session_overlap_gradient_sums);
// on cuda, or with --no-overlap, they run after it. A heartbeat comes
// first either way, so that a rank that stopped is named.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_GRADIENTSUMS_H
#define KILN_TOOLS_KILN_GRADIENTSUMS_H

#include "Distributed.h"
#include "TrainSession.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

namespace kiln::cli {

class GradientSums {
public:
  /// `overlap`: during the backward, in buckets of `bucketBytes`.
  GradientSums(Communicator &ranks, TrainSession &session, bool overlap,
               uint64_t bucketBytes)
      : ranks(ranks), session(session), overlap(overlap),
        bucketBytes(bucketBytes) {}

  /// Before step `step`'s last micro-batch runs.
  llvm::Error beforeLastMicroBatch(int64_t step);
  /// After step `step`'s micro-batches ran, before apply_step.
  llvm::Error afterMicroBatches(int64_t step);
  /// --profile: the buckets, the time blocked waiting for them and, for
  /// comparison, a standalone all-reduce of the same bytes (a collective:
  /// every rank calls it; rank 0 prints).
  llvm::Error report(llvm::raw_ostream &os);

private:
  Communicator &ranks;
  TrainSession &session;
  bool overlap;
  uint64_t bucketBytes;
  /// Per overlapped step: nanoseconds issuing and blocked.
  std::vector<uint64_t> issueNs, blockedNs;
  kiln_overlap_stats last = {};
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_GRADIENTSUMS_H
