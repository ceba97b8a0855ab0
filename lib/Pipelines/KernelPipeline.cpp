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
                               const KernelPipelineOptions &) {
  // One kernel per graph op for now; graph-fuse will run before this.
  pm.addPass(createConvertGraphToKernel());
  // Identical views of one buffer fold together before buffers are placed.
  pm.addPass(mlir::createCSEPass());
  // Naive placement: the memory planner (kernel-plan-memory) replaces it.
  pm.addPass(kernel::createKernelAssignOffsetsNaive());
}

void kiln::registerKernelPipeline() {
  mlir::PassPipelineRegistration<>(
      "kiln-kernel-pipeline",
      "Lower a graph module to a kernel module with arena offsets",
      [](mlir::OpPassManager &pm) { buildKernelPipeline(pm, {}); });
}
