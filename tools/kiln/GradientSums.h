//===- GradientSums.h - A data-parallel step's gradient sums ---*- C++ -*-===//
//
// Part of Kiln. A data-parallel step sums every rank's gradient
// accumulators before apply_step: the step's last micro-batch runs the
// sums its plan holds (the compiler placed them during the backward in
// buckets, or after it with --no-overlap; kiln_session_arm_gradient_sums),
// over MPI on the cpu devices, NCCL on cuda. A heartbeat comes first, so
// that a rank that stopped is named.
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
  GradientSums(Communicator &ranks, TrainSession &session)
      : ranks(ranks), session(session) {}

  /// Before step `step`'s last micro-batch runs.
  llvm::Error beforeLastMicroBatch(int64_t step);
  /// After a step's micro-batches ran: what the sums did.
  void afterMicroBatches();
  /// --profile: the buckets, the time blocked waiting for them and, for
  /// comparison, a standalone all-reduce of the same bytes (a collective:
  /// every rank calls it; rank 0 prints).
  llvm::Error report(llvm::raw_ostream &os);

private:
  Communicator &ranks;
  TrainSession &session;
  /// Per step: nanoseconds issuing and blocked.
  std::vector<uint64_t> issueNs, blockedNs;
  kiln_overlap_stats last = {};
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_GRADIENTSUMS_H
