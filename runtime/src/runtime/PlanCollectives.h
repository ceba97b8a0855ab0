//===- PlanCollectives.h - A plan's collective ops --------------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A data-parallel plan sums its gradient accumulators over the ranks with
// CollectiveStart / CollectiveWait ops (the compiler's
// --kernel-insert-collectives). This reads them into buckets and checks
// them: the buffers are f32 gradient accumulators (`<param>.grad_acc`
// optimizer state), each in one bucket of
// the whole plan; an entry's starts number their buckets 0, 1, ... in
// order, and each has one wait after it in the same entry. Validation
// (at open), the session's memory layout (a bucket in one block) and the
// run that executes them all read the buckets from here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_PLANCOLLECTIVES_H
#define KILN_RUNTIME_PLANCOLLECTIVES_H

#include "Artifact.h"
#include "Result.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {
namespace runtime {

struct PlanBucket {
  size_t entry;
  uint32_t number;
  std::vector<uint32_t> buffers;
  /// The ops of `entry` that start it and wait for it.
  size_t startOp, waitOp;
  uint64_t bytes = 0;
};

/// The buckets of every entry of `plan`, in entry then bucket order, or an
/// invalid-format error naming the entry and op at fault.
Result listPlanBuckets(const plan::Plan &plan,
                       const std::vector<BufferInfo> &buffers,
                       std::vector<PlanBucket> &buckets);

/// Where a bucket's buffers lie in its block: each at a multiple of 64
/// bytes after the previous one's end. Returns the block's bytes.
size_t layOutBucket(const std::vector<BufferInfo> &buffers,
                    const PlanBucket &bucket, std::vector<size_t> &offsets);

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_PLANCOLLECTIVES_H
