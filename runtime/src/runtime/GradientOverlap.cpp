//===- GradientOverlap.cpp - Gradient sums during the backward ------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "GradientOverlap.h"
#include "Session.h"

#include <algorithm>
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

std::vector<GradientBucket>
runtime::planGradientBuckets(const Artifact &artifact, size_t entry,
                             uint64_t bucketBytes) {
  const std::vector<BufferInfo> &buffers = artifact.getBuffers();
  std::vector<long> lastTouch(buffers.size(), -1);
  const plan::Entry &planned = *artifact.getPlan().entries()->Get(entry);
  if (const auto *ops = planned.ops())
    for (size_t i = 0; i < ops->size(); ++i)
      visitOpBuffers(*ops->Get(i),
                     [&](uint32_t id, bool) { lastTouch[id] = long(i); });
  // The accumulators in the order their sums can start (ties by id).
  std::vector<uint32_t> order;
  for (uint32_t id = 0; id < buffers.size(); ++id)
    if (isGradientAccumulator(buffers[id]) &&
        buffers[id].dtype == plan::DType::F32)
      order.push_back(id);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return lastTouch[a] < lastTouch[b];
  });
  std::vector<GradientBucket> buckets;
  for (uint32_t id : order) {
    if (buckets.empty() || buckets.back().bytes >= bucketBytes)
      buckets.emplace_back();
    GradientBucket &bucket = buckets.back();
    bucket.buffers.push_back(id);
    bucket.counts.push_back(size_t(buffers[id].numElements));
    bucket.bytes += uint64_t(buffers[id].sizeBytes);
    bucket.startAfterOp = std::max(bucket.startAfterOp, lastTouch[id]);
  }
  return buckets;
}

GradientOverlap::GradientOverlap(std::vector<GradientBucket> buckets,
                                 const kiln_collectives &collectives,
                                 std::vector<void *> hostBuffers,
                                 size_t opCount)
    : buckets_(std::move(buckets)), collectives_(collectives),
      host_(std::move(hostBuffers)) {
  stats_.buckets = uint32_t(buckets_.size());
  stats_.ops = uint32_t(opCount);
  stats_.first_start_op = -1;
  for (const GradientBucket &bucket : buckets_)
    stats_.bytes += bucket.bytes;
}

Result GradientOverlap::check(const char *what, const char *message) const {
  if (!message)
    return Result::ok();
  return Result::error(KILN_ERROR_DEVICE,
                       std::string("the gradient sums over the ranks (") +
                           what + "): " + message);
}

Result GradientOverlap::afterOp(long op) {
  auto start = std::chrono::steady_clock::now();
  // Buckets are in the order of their start ops.
  for (; next_ < buckets_.size() && buckets_[next_].startAfterOp <= op;
       ++next_) {
    const GradientBucket &bucket = buckets_[next_];
    std::vector<float *> data;
    for (uint32_t id : bucket.buffers)
      data.push_back(static_cast<float *>(host_[id]));
    if (next_ == 0)
      stats_.first_start_op = int32_t(op);
    KILN_RETURN_IF_ERROR(
        check("start", collectives_.start(collectives_.user, uint32_t(next_),
                                          data.data(), bucket.counts.data(),
                                          data.size())));
  }
  if (next_ > 0)
    KILN_RETURN_IF_ERROR(
        check("progress", collectives_.progress(collectives_.user)));
  stats_.issue_ns += nanosecondsSince(start);
  return Result::ok();
}

Result GradientOverlap::finish() {
  // Any bucket not started yet (none, when the plan was read right).
  if (next_ < buckets_.size())
    KILN_RETURN_IF_ERROR(afterOp(long(stats_.ops)));
  auto start = std::chrono::steady_clock::now();
  for (size_t bucket = 0; bucket < buckets_.size(); ++bucket)
    KILN_RETURN_IF_ERROR(
        check("wait", collectives_.wait(collectives_.user, uint32_t(bucket))));
  stats_.blocked_ns += nanosecondsSince(start);
  return Result::ok();
}
