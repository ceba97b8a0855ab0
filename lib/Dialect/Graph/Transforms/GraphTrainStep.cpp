//===- GraphTrainStep.cpp - The --graph-train-step pass --------------------===//
//
// Part of Kiln. Adds the training entry points (TrainStep.h) to a module,
// with the settings of its train block.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHTRAINSTEP
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {
struct GraphTrainStepPass
    : kiln::graph::impl::GraphTrainStepBase<GraphTrainStepPass> {
  using GraphTrainStepBase::GraphTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<TrainSettings> settings = TrainSettings::fromModule(module);
    if (failed(settings))
      return signalPassFailure();
    if (accumulate > 0)
      settings->accumulate = accumulate;
    if (!precision.empty())
      settings->precision = precision;
    if (settings->lossScaleLoc && !settings->scalesLoss()) {
      emitError(*settings->lossScaleLoc)
          << "loss_scale applies to precision = fp16 only (this step trains "
             "in "
          << settings->precision << ")";
      return signalPassFailure();
    }
    if (failed(buildTrainFunctions(module, *settings)))
      return signalPassFailure();
  }
};
} // namespace
