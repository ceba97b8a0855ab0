//===- GradientOverlap.cpp - Gradient sums during the backward ------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "GradientOverlap.h"

#include <chrono>
#include <string>

using namespace kiln;
using namespace kiln::runtime;

namespace {
uint64_t nanosecondsSince(std::chrono::steady_clock::time_point start) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count());
}
} // namespace

GradientOverlap::GradientOverlap(const Artifact &artifact,
                                 std::vector<PlanBucket> buckets,
                                 const kiln_collectives &collectives,
                                 std::vector<void *> hostBuffers,
                                 size_t opCount)
    : artifact_(artifact), buckets_(std::move(buckets)),
      collectives_(collectives), host_(std::move(hostBuffers)),
      startAt_(opCount, -1), waitAt_(opCount, -1),
      computeOpsBefore_(opCount + 1, 0) {
  for (size_t i = 0; i < buckets_.size(); ++i) {
    startAt_[buckets_[i].startOp] = long(i);
    waitAt_[buckets_[i].waitOp] = long(i);
  }
  for (size_t op = 0; op < opCount; ++op)
    computeOpsBefore_[op + 1] =
        computeOpsBefore_[op] + (startAt_[op] < 0 && waitAt_[op] < 0);
  stats_ = plannedStats(buckets_, opCount);
  // Set as the first bucket starts.
  stats_.first_start_op = -1;
}

kiln_overlap_stats
GradientOverlap::plannedStats(const std::vector<PlanBucket> &buckets,
                              size_t opCount) {
  kiln_overlap_stats stats = {};
  stats.buckets = uint32_t(buckets.size());
  stats.ops = uint32_t(opCount - 2 * buckets.size());
  stats.first_start_op = -1;
  for (const PlanBucket &bucket : buckets) {
    stats.bytes += bucket.bytes;
    // The first start's place among the other ops (the buckets are in
    // the order of their starts).
    if (&bucket == &buckets.front())
      stats.first_start_op = int32_t(bucket.startOp) - 1;
  }
  return stats;
}

Result GradientOverlap::check(const char *what, const char *message) const {
  if (!message)
    return Result::ok();
  return Result::error(KILN_ERROR_DEVICE,
                       std::string("the gradient sums over the ranks (") +
                           what + "): " + message);
}

Result GradientOverlap::start(const PlanBucket &bucket, long op) {
  const std::vector<BufferInfo> &buffers = artifact_.getBuffers();
  std::vector<float *> data;
  std::vector<size_t> counts;
  for (uint32_t id : bucket.buffers) {
    data.push_back(static_cast<float *>(host_[id]));
    counts.push_back(size_t(buffers[id].numElements));
  }
  if (started_ == 0)
    stats_.first_start_op = int32_t(computeOpsBefore_[size_t(op)] - 1);
  ++started_;
  return check("start",
               collectives_.start(collectives_.user, bucket.number, data.data(),
                                  counts.data(), data.size()));
}

Result GradientOverlap::afterOp(long op) {
  if (op >= 0 && waitAt_[size_t(op)] >= 0) {
    auto begin = std::chrono::steady_clock::now();
    ++waited_;
    KILN_RETURN_IF_ERROR(
        check("wait",
              collectives_.wait(collectives_.user,
                                buckets_[size_t(waitAt_[size_t(op)])].number)));
    stats_.blocked_ns += nanosecondsSince(begin);
    return Result::ok();
  }
  auto begin = std::chrono::steady_clock::now();
  if (op >= 0 && startAt_[size_t(op)] >= 0)
    KILN_RETURN_IF_ERROR(start(buckets_[size_t(startAt_[size_t(op)])], op));
  if (started_ > waited_)
    KILN_RETURN_IF_ERROR(
        check("progress", collectives_.progress(collectives_.user)));
  stats_.issue_ns += nanosecondsSince(begin);
  return Result::ok();
}

Result GradientOverlap::finish() {
  if (waited_ != buckets_.size())
    return Result::error(KILN_ERROR_INTERNAL,
                         "the run ended with " +
                             std::to_string(buckets_.size() - waited_) +
                             " gradient sum(s) not waited for");
  return Result::ok();
}
