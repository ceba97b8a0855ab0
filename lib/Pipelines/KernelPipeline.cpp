//===- KernelPipeline.cpp - Graph IR to a planned kernel module ------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/KernelPipeline.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Graph/Transforms/Recompute.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Kernel/Transforms/ResidentBytes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

/// peak_bytes of `module` lowered by the rest of the pipeline, on a clone.
static mlir::FailureOr<int64_t>
measurePeakBytes(mlir::ModuleOp module, kiln::KernelPipelineOptions options) {
  options.recompute = false;
  options.memoryBudget = 0;
  mlir::OwningOpRef<mlir::ModuleOp> clone = module.clone();
  mlir::PassManager pm(module.getContext());
  kiln::buildKernelPipeline(pm, options);
  if (mlir::failed(pm.run(*clone)))
    return mlir::failure();
  return kiln::kernel::measureResidentBytes(*clone).peak();
}

/// The most ops --kernel-merge-launches puts into one kernel: about eight
/// AdamW updates (~45 ops each).
static constexpr int64_t kMaxMergedOps = 800;

void kiln::buildKernelPipeline(mlir::OpPassManager &pm,
                               const KernelPipelineOptions &options) {
  // Recompute first, and before fusion: a recomputed elementwise op should
  // fuse into its consumer. Each plan is measured by lowering a clone through
  // the rest of this pipeline, so the budget holds the exact peak_bytes.
  if (options.recompute && options.memoryBudget > 0)
    pm.addPass(graph::createGraphRecomputePass(
        options.memoryBudget, [options](mlir::ModuleOp module) {
          return measurePeakBytes(module, options);
        }));
  // Elementwise and data-movement chains become one kernel each.
  if (options.fuse)
    pm.addPass(graph::createGraphFuse());
  pm.addPass(createConvertGraphToKernel());
  // Identical views of one buffer fold together before buffers are placed.
  pm.addPass(mlir::createCSEPass());
  // Independent neighbours (the optimizer's per-parameter updates first)
  // share one launch, up to a size: a merged kernel holds a copy of each
  // body it takes, and one kernel of all 148 updates of GPT-2 small cost
  // more to compile (-O3 on one huge function, on one core) than every
  // other kernel together. About eight AdamW updates per kernel keep the
  // launches few and let the merged kernels of repeated layers come out
  // identical (--kernel-dedup-kernels).
  if (options.fuse)
    pm.addPass(kernel::createKernelMergeLaunches({kMaxMergedOps}));
  // The repeated layers' identical kernels compile once: after the merge,
  // which creates kernels, and before code generation, which is the longest
  // part of a compile.
  pm.addPass(kernel::createKernelDedupKernels());
  // The cpu executor's GEMM tiles, fixed from the shapes so that results do
  // not depend on the thread count (attributes only: the schedule stays).
  pm.addPass(kernel::createKernelTileGemms());
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
