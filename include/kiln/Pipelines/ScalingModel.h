//===- ScalingModel.h - Data-parallel scaling, on paper ---------*- C++ -*-===//
//
// Part of Kiln. What `kiln compile --stats --world N` predicts for a step
// trained on N data-parallel ranks: the bytes each rank moves to sum the
// gradients (a ring all-reduce: 2 (N - 1) / N times the gradients' bytes
// each way), the time that takes over each interconnect of a table of
// nominal link speeds, and the scaling efficiency against one GPU's
// roofline step time (Roofline.h), given how much of the communication
// the schedule overlaps with compute. A model of the hardware, not a
// measurement: no congestion, no protocol overhead beyond a latency per
// ring step, and the link's full bandwidth available to the all-reduce.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_SCALINGMODEL_H
#define KILN_PIPELINES_SCALINGMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

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

/// A GPU's predicted step time for one rank's share of the batch.
struct RankStepTime {
  std::string gpu;
  double seconds = 0;
};

/// The "data_parallel" object of --stats: per interconnect, the all-reduce
/// time of `gradientBytes` over `world` ranks, and per GPU of `steps` the
/// predicted efficiency step / (step + exposed communication), where
/// `overlapped` (0..1) of the communication hides behind compute.
llvm::json::Object estimateDataParallel(int64_t world, int64_t gradientBytes,
                                        double overlapped,
                                        llvm::ArrayRef<RankStepTime> steps);

} // namespace kiln

#endif // KILN_PIPELINES_SCALINGMODEL_H
