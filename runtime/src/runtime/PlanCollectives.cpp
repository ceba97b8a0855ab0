//===- PlanCollectives.cpp - A plan's collective ops ----------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "PlanCollectives.h"
#include "Session.h"

#include <string>
#include <unordered_map>

using namespace kiln;
using namespace kiln::runtime;

Result runtime::listPlanBuckets(const plan::Plan &plan,
                                const std::vector<BufferInfo> &buffers,
                                std::vector<PlanBucket> &buckets) {
  buckets.clear();
  if (!plan.entries())
    return Result::ok();
  // Each buffer's bucket, over the whole plan.
  std::unordered_map<uint32_t, size_t> bucketOf;
  for (size_t entry = 0; entry < plan.entries()->size(); ++entry) {
    const plan::Entry &planned = *plan.entries()->Get(entry);
    if (!planned.ops())
      continue;
    std::string name = planned.name() ? planned.name()->str() : "";
    size_t first = buckets.size();
    for (size_t index = 0; index < planned.ops()->size(); ++index) {
      const plan::Op &op = *planned.ops()->Get(index);
      std::string where =
          "entry '" + name + "' op " + std::to_string(index) + ": ";
      if (const plan::CollectiveStart *start = op.call_as_CollectiveStart()) {
        size_t number = buckets.size() - first;
        if (start->bucket() != number)
          return invalidFormat(where + "starts bucket " +
                               std::to_string(start->bucket()) +
                               ", but the entry's buckets are numbered in "
                               "order: expected " +
                               std::to_string(number));
        PlanBucket bucket{entry, start->bucket(), {}, index, 0, 0};
        if (!start->buffers() || start->buffers()->size() == 0)
          return invalidFormat(where + "starts a collective over no buffers");
        for (uint32_t id : *start->buffers()) {
          if (id >= buffers.size())
            return invalidFormat(where + "buffer id " + std::to_string(id) +
                                 " is out of range");
          const BufferInfo &buffer = buffers[id];
          if (buffer.kind != plan::BufferKind::OptimizerState ||
              !isGradientAccumulator(buffer) ||
              buffer.dtype != plan::DType::F32)
            return invalidFormat(where + "'" + buffer.name +
                                 "' is not an f32 gradient accumulator");
          if (!bucketOf.emplace(id, buckets.size()).second)
            return invalidFormat(where + "'" + buffer.name +
                                 "' is in two buckets");
          bucket.buffers.push_back(id);
          bucket.bytes += uint64_t(buffer.sizeBytes);
        }
        buckets.push_back(std::move(bucket));
      } else if (const plan::CollectiveWait *wait =
                     op.call_as_CollectiveWait()) {
        size_t at = first + wait->bucket();
        if (wait->bucket() >= buckets.size() - first || buckets[at].waitOp != 0)
          return invalidFormat(where + "waits for bucket " +
                               std::to_string(wait->bucket()) +
                               ", which is not in flight");
        buckets[at].waitOp = index;
      }
    }
    for (size_t at = first; at < buckets.size(); ++at)
      if (buckets[at].waitOp == 0)
        return invalidFormat("entry '" + name + "': bucket " +
                             std::to_string(buckets[at].number) +
                             " is started and never waited for");
  }
  return Result::ok();
}

size_t runtime::layOutBucket(const std::vector<BufferInfo> &buffers,
                             const PlanBucket &bucket,
                             std::vector<size_t> &offsets) {
  constexpr size_t kAlignment = 64;
  offsets.clear();
  size_t end = 0;
  for (uint32_t id : bucket.buffers) {
    size_t at = (end + kAlignment - 1) / kAlignment * kAlignment;
    offsets.push_back(at);
    end = at + size_t(buffers[id].sizeBytes);
  }
  return end;
}
