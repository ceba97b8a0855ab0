//===- GradientSums.cpp - How a data-parallel step sums its gradients -----===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradientSums.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>

using namespace kiln::cli;
using namespace llvm;

Error GradientSums::beforeLastMicroBatch(int64_t step) {
  if (Error error = ranks.heartbeat(step))
    return error;
  return session.armGradientSums(ranks);
}

void GradientSums::afterMicroBatches() {
  last = session.overlapStats();
  issueNs.push_back(last.issue_ns);
  blockedNs.push_back(last.blocked_ns);
}

template <typename T> static T median(std::vector<T> values) {
  if (values.empty())
    return T();
  std::nth_element(values.begin(), values.begin() + values.size() / 2,
                   values.end());
  return values[values.size() / 2];
}

Error GradientSums::report(raw_ostream &os) {
  if (blockedNs.empty())
    return Error::success();
  if (session.sumsOnDevice()) {
    // --profile runs each op on its own, waited for: nothing overlaps in
    // a profiled run on the GPU, so no time is worth comparing.
    if (ranks.isLeader())
      os << formatv("gradient sums in the plan: {0} bucket(s), {1} bytes a "
                    "step, the first started after op {2} of the {3} of "
                    "accumulate_step (NCCL on its own stream; a profiled run "
                    "times each op alone, so nothing overlaps in it)\n",
                    last.buckets, last.bytes, last.first_start_op + 1,
                    last.ops);
    return Error::success();
  }
  // The same bytes summed on their own, with nothing to overlap.
  std::vector<float> scratch(last.bytes / sizeof(float), 1.0f);
  std::vector<double> standaloneMs;
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    if (Error error = ranks.sumInPlace(scratch.data(), scratch.size()))
      return error;
    standaloneMs.push_back(std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - start)
                               .count());
  }
  if (!ranks.isLeader())
    return Error::success();
  os << formatv("gradient sums in the plan: {0} bucket(s), {1} bytes "
                "a step, the first started after op {2} of the {3} of "
                "accumulate_step; per step (median of {4}): blocked waiting "
                "for them {5:F3} ms, issuing and progressing them {6:F3} ms; "
                "a standalone all-reduce of the same bytes: {7:F3} ms (median "
                "of 5)\n",
                last.buckets, last.bytes, last.first_start_op + 1, last.ops,
                blockedNs.size(), double(median(blockedNs)) / 1e6,
                double(median(issueNs)) / 1e6, median(standaloneMs));
  return Error::success();
}
