//===- MemoryTimelineData.cpp - The memory timeline of a module -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/MemoryTimelineData.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Kernel/Transforms/ResidentBytes.h"

using namespace mlir;
using namespace kiln;

StringRef kiln::selectTimelineEntry(ModuleOp module) {
  for (StringRef name :
       {"train_step", "accumulate_step", "predict", "eval_step"})
    if (module.lookupSymbol<kernel::EntryOp>(name))
      return name;
  return {};
}

FailureOr<plot::MemoryTimeline> kiln::buildMemoryTimeline(ModuleOp module,
                                                          int64_t budget) {
  StringRef name = selectTimelineEntry(module);
  if (name.empty())
    return module.emitError(
        "no entry to draw the memory of (train_step, accumulate_step, "
        "predict or eval_step): is the module compiled?");
  auto entry = module.lookupSymbol<kernel::EntryOp>(name);
  kernel::BufferLiveness liveness(entry);
  kernel::ResidentBytes resident = kernel::measureResidentBytes(module);

  plot::MemoryTimeline timeline;
  auto model =
      module->getAttrOfType<StringAttr>(graph::GraphDialect::kModelAttr);
  timeline.model = model ? model.getValue().str() : "the model";
  timeline.entry = name.str();
  for (const kernel::LiveBytes &live : liveness.getLiveBytes())
    timeline.points.push_back(
        {live.activation, live.gradient, live.workspace});
  timeline.persistentBytes = resident.persistent();
  timeline.boundary = liveness.getForwardBackwardBoundary();
  timeline.peakPoint = liveness.getPeakPoint();
  timeline.arenaBytes = resident.arena;
  timeline.liveLowerBound = liveness.getLiveLowerBound();
  timeline.budget = budget;
  return timeline;
}
