//===- GraphAutodiff.cpp - The --graph-autodiff pass ----------------------===//
//
// Part of Kiln. Builds `@grad_step` from the module's `@forward`; the work is
// done by buildGradientFunction (Autodiff.h), which the pass forming
// `@train_step` shares.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/Autodiff.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHAUTODIFF
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {
struct GraphAutodiffPass
    : kiln::graph::impl::GraphAutodiffBase<GraphAutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("graph-autodiff needs a 'func.func @forward' to "
                       "differentiate");
      return signalPassFailure();
    }
    // Gradients of the training phase (batch statistics).
    if (failed(buildTrainingGradientFunction(forward, "grad_step")))
      return signalPassFailure();
  }
};
} // namespace
