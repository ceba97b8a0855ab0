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
};

/// graph → kernel → arena offsets.
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const KernelPipelineOptions &options);

/// Registers `--kiln-kernel-pipeline`.
void registerKernelPipeline();

} // namespace kiln

#endif // KILN_PIPELINES_KERNELPIPELINE_H
