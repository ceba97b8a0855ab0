//===- KernelPipeline.h - Graph IR to a planned kernel module ---*- C++ -*-===//
//
// Part of Kiln. The passes from a graph module to the kernel module that the
// artifact is written from, shared by `kiln compile` and
// `kiln-opt --kiln-kernel-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_KERNELPIPELINE_H
#define KILN_PIPELINES_KERNELPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace kiln {

/// Options of the kernel pipeline.
struct KernelPipelineOptions {
  /// Place transients one after another (--kernel-assign-offsets-naive)
  /// instead of with the memory planner: the baseline the planner is
  /// measured and checked against.
  bool naiveArena = false;
  /// Group ops into graph.fusion regions (--graph-fuse) and merge
  /// independent launches (multi-tensor kernels); `--no-fuse` clears it.
  bool fuse = true;
  /// Recompute forward activations in the backward to meet
  /// `memoryBudget` (--graph-recompute); `--no-recompute` clears it.
  bool recompute = true;
  /// The bytes `peak_bytes` must fit in (0: no budget). The planner has the
  /// last word: a final plan over the budget is an error.
  int64_t memoryBudget = 0;
};

/// graph → kernel → arena offsets.
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const KernelPipelineOptions &options);

/// Registers `--kiln-kernel-pipeline`.
void registerKernelPipeline();

} // namespace kiln

#endif // KILN_PIPELINES_KERNELPIPELINE_H
