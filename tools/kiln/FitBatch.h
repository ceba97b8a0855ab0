//===- FitBatch.h - The largest batch that fits a memory budget -*- C++ -*-===//
//
// Part of Kiln. `kiln compile MODEL.kiln --fit-batch --memory-budget SIZE`
// recompiles the training step with the batch dim set to candidate values
// (exponential search, then bisection) and reports the largest whose
// peak_bytes fits the budget, without and, where the pipeline recomputes,
// with recomputation.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_FITBATCH_H
#define KILN_TOOLS_KILN_FITBATCH_H

#include "kiln/Frontend/Frontend.h"
#include "kiln/Pipelines/CompilePipeline.h"

#include <string>
#include <vector>

namespace kiln::cli {

struct FitBatchOptions {
  std::string modelPath;
  /// The dim to search; empty: the model's batch dim (`batch NAME`, or `B`).
  std::string batchDim;
  /// The budget peak_bytes must fit in, in bytes (> 0).
  int64_t budget = 0;
  /// Other dims set from the command line (`--dim`); one for the batch dim
  /// is an error.
  std::vector<frontend::DimOverride> dims;
  /// fuse and recompute as the flags set them; memoryBudget is ignored.
  CompileOptions pipeline;
};

/// Runs the search, prints progress on stderr and one JSON object on
/// stdout; returns the exit code (1 when not even a batch of 1 fits).
int runFitBatch(const FitBatchOptions &options);

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_FITBATCH_H
