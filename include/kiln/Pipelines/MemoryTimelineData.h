//===- MemoryTimelineData.h - The memory timeline of a module ---*- C++ -*-===//
//
// Part of Kiln. Reads what `kiln compile --memory-timeline` draws off a
// compiled module: BufferLiveness of the step entry, per program point and
// kind, and the module's resident bytes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_MEMORYTIMELINEDATA_H
#define KILN_PIPELINES_MEMORYTIMELINEDATA_H

#include "kiln/Plot/MemoryTimeline.h"

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The entry a step's memory is drawn for: @train_step, else
/// @accumulate_step (a model with `accumulate`), else @predict, else
/// @eval_step (a model without a loss); empty when the module has none.
llvm::StringRef selectTimelineEntry(mlir::ModuleOp module);

/// The timeline of `module` (placed by the kernel pipeline) for its
/// selectTimelineEntry, with `budget` (0: none) to draw. Fails with an
/// error when the module has no such entry.
mlir::FailureOr<plot::MemoryTimeline> buildMemoryTimeline(mlir::ModuleOp module,
                                                          int64_t budget);

} // namespace kiln

#endif // KILN_PIPELINES_MEMORYTIMELINEDATA_H
