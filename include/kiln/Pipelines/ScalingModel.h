//===- ScalingModel.h - Data-parallel scaling, on paper ---------*- C++ -*-===//
//
// Part of Kiln. What `kiln compile --stats --world N` predicts for a step
// trained on N data-parallel ranks: the bytes each rank moves to sum the
// gradients (a ring all-reduce: 2 (N - 1) / N times the gradients' bytes
// each way), the time that takes over each interconnect of a table of
// nominal link speeds, and the scaling efficiency against one GPU's
// roofline step time (Roofline.h), given how much of the communication
// the schedule overlaps with compute: each gradient bucket's all-reduce
// starts once the backward has reached the bucket's collective start (in
// the roofline's time) and the previous bucket's all-reduce is done, and
// what still runs when the backward ends is exposed. A model of the
// hardware, not a measurement: no congestion, no protocol overhead beyond
// a latency per ring step, the link's full bandwidth available to the
// all-reduce, and the all-reduce not slowing the kernels it overlaps.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_SCALINGMODEL_H
#define KILN_PIPELINES_SCALINGMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// A link the gradients cross, per GPU: bandwidth one way and the latency
/// of one ring step.
struct Interconnect {
  const char *name;
  const char *description;
  double bytesPerSecond;
  double latencySeconds;
};

/// The table the model uses (datasheet figures).
llvm::ArrayRef<Interconnect> getInterconnects();

/// A gradient bucket of a step's last micro-batch: its bytes, and the
/// time from that micro-batch's start at which its sum may start.
struct BucketReady {
  int64_t bytes = 0;
  double seconds = 0;
};

/// A GPU's predicted step time for one rank's share of the batch, and its
/// last micro-batch's schedule: its compute time (where the sums are
/// waited for) and its buckets in start order (none: the gradients are
/// summed after it).
struct RankStepTime {
  std::string gpu;
  double seconds = 0;
  double lastMicroBatchSeconds = 0;
  std::vector<BucketReady> buckets;
};

/// The "data_parallel" object of --stats: per interconnect, the all-reduce
/// time of `gradientBytes` over `world` ranks at once, and per GPU of
/// `steps` its buckets' sums on that link, the part of them the backward
/// does not hide (exposed) and the predicted efficiency step / (step +
/// exposed).
llvm::json::Object estimateDataParallel(int64_t world, int64_t gradientBytes,
                                        llvm::ArrayRef<RankStepTime> steps);

} // namespace kiln

#endif // KILN_PIPELINES_SCALINGMODEL_H
