//===- ScalingModel.cpp - Data-parallel scaling, on paper -----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/ScalingModel.h"

#include <algorithm>

using namespace kiln;

llvm::ArrayRef<Interconnect> kiln::getInterconnects() {
  // Per GPU, one way. NVLink: the links of an SXM GPU together (H100/H200:
  // 18 links of 25 GB/s; A100: 12 of 25 GB/s). InfiniBand: one NIC per
  // GPU, as in DGX systems (NDR 400 Gb/s, HDR 200 Gb/s). Latencies: the
  // order of one hop, not measured here.
  static const Interconnect table[] = {
      {"nvlink4", "NVLink 4 (H100/H200 SXM, one node)", 450e9, 3e-6},
      {"nvlink3", "NVLink 3 (A100 SXM, one node)", 300e9, 3e-6},
      {"infiniband-ndr", "InfiniBand NDR, 400 Gb/s per GPU", 50e9, 5e-6},
      {"infiniband-hdr", "InfiniBand HDR, 200 Gb/s per GPU", 25e9, 5e-6},
  };
  return table;
}

/// A ring all-reduce of `bytes` over `world` ranks on `link`: N - 1
/// reduce-scatter steps then N - 1 all-gather steps, each moving 1/N of
/// the bytes each way.
static double ringSeconds(int64_t world, double bytes,
                          const Interconnect &link) {
  if (world <= 1)
    return 0;
  double n = double(world);
  return 2.0 * (n - 1.0) / n * bytes / link.bytesPerSecond +
         2.0 * (n - 1.0) * link.latencySeconds;
}

llvm::json::Object
kiln::estimateDataParallel(int64_t world, int64_t gradientBytes,
                           llvm::ArrayRef<RankStepTime> steps) {
  double n = double(world);
  double perRank = world > 1 ? 2.0 * (n - 1.0) / n * double(gradientBytes) : 0;
  llvm::json::Array links;
  for (const Interconnect &link : getInterconnects()) {
    double seconds = ringSeconds(world, double(gradientBytes), link);
    llvm::json::Array gpus;
    for (const RankStepTime &step : steps) {
      // The buckets' sums one after another on the link, each from when
      // the backward reaches its start; without buckets, all of the
      // gradients once the last micro-batch is done.
      std::vector<BucketReady> buckets = step.buckets;
      if (buckets.empty())
        buckets.push_back({gradientBytes, step.lastMicroBatchSeconds});
      double done = 0, summing = 0;
      for (const BucketReady &bucket : buckets) {
        double time = ringSeconds(world, double(bucket.bytes), link);
        done = std::max(done, bucket.seconds) + time;
        summing += time;
      }
      double exposed = std::max(0.0, done - step.lastMicroBatchSeconds);
      gpus.push_back(llvm::json::Object{
          {"gpu", step.gpu},
          {"step_ms", step.seconds * 1e3},
          {"last_micro_batch_ms", step.lastMicroBatchSeconds * 1e3},
          {"buckets", int64_t(buckets.size())},
          {"first_bucket_ready_ms", buckets.front().seconds * 1e3},
          {"sums_ms", summing * 1e3},
          {"exposed_ms", exposed * 1e3},
          {"overlapped_fraction",
           summing > 0 ? std::max(0.0, 1.0 - exposed / summing) : 0.0},
          {"efficiency", step.seconds / (step.seconds + exposed)}});
    }
    links.push_back(llvm::json::Object{{"link", link.name},
                                       {"description", link.description},
                                       {"bytes_per_s", link.bytesPerSecond},
                                       {"latency_s", link.latencySeconds},
                                       {"all_reduce_ms", seconds * 1e3},
                                       {"gpus", std::move(gpus)}});
  }
  return llvm::json::Object{{"world", world},
                            {"gradient_bytes", gradientBytes},
                            {"bytes_per_rank_per_step", perRank},
                            {"algorithm", "ring all-reduce"},
                            {"links", std::move(links)}};
}
