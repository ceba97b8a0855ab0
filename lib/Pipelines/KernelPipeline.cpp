//===- KernelPipeline.cpp - Graph IR to a planned kernel module ------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/KernelPipeline.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void kiln::buildKernelPipeline(mlir::OpPassManager &pm,
                               const KernelPipelineOptions &options) {
  // One kernel per graph op for now; graph-fuse will run before this.
  pm.addPass(createConvertGraphToKernel());
  // Identical views of one buffer fold together before buffers are placed.
  pm.addPass(mlir::createCSEPass());
  // Independent neighbours (the optimizer's per-parameter updates first)
  // share one launch.
  if (options.fuse)
    pm.addPass(kernel::createKernelMergeLaunches());
  // Placement last: it needs the final schedule, and nothing after it may
  // add, move or reorder the ops that touch transients.
  if (options.naiveArena)
    pm.addPass(kernel::createKernelAssignOffsetsNaive());
  else
    pm.addPass(kernel::createKernelPlanMemory());
  // The planner's last word: whatever recomputation achieved, a plan whose
  // peak bytes exceed the budget is an error.
  if (options.memoryBudget > 0)
    pm.addPass(kernel::createKernelCheckMemoryBudget({options.memoryBudget}));
}

void kiln::registerKernelPipeline() {
  mlir::PassPipelineRegistration<>(
      "kiln-kernel-pipeline",
      "Lower a graph module to a kernel module with arena offsets",
      [](mlir::OpPassManager &pm) { buildKernelPipeline(pm, {}); });
}
