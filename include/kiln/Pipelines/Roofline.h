//===- Roofline.h - What each kernel of a step should cost on a GPU -*- C++
//-*-===//
//
// Part of Kiln.
//
// The roofline model of a cuda compile (kiln compile --stats
// --target=cuda): each scheduled op of the step, its bytes to and from
// memory and its FLOPs, and on each GPU of the arch (GpuFigures.h) the
// larger of bytes over bandwidth and FLOPs over the peak, against the
// datasheet's figures and against the measured ceilings. A model of the
// hardware, not a measurement: caches, launch gaps and occupancy are not
// in it.
//
// Bytes: a kernel's every memref argument it loads counts its size once,
// and once more if it stores to it (a kernel streams its buffers; what a
// kernel reads twice comes from the caches); a GEMM reads A, B (once per
// batch entry unless broadcast) and C when beta is not 0, writes C, and
// reads or writes the epilogue's bias and aux; a copy reads and writes,
// a zero writes. FLOPs: a kernel's floating-point arith and math ops times
// the trips of the loops around them; a GEMM 2 m n k per batch entry, on
// the tensor cores when its operands are 16-bit, else the CUDA cores (an
// f32 GEMM does not use TF32).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_ROOFLINE_H
#define KILN_PIPELINES_ROOFLINE_H

#include "kiln/Pipelines/ScalingModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
class TargetInfo;

/// What one scheduled op moves and computes.
struct OpCost {
  /// "gemm", "kernel k12", "copy", "zero".
  std::string what;
  /// The graph op(s) it implements (kernel.origin).
  std::string origin;
  int64_t bytes = 0;
  int64_t flops = 0;
  bool tensorCores = false;
};

/// The cost of a kernel.launch, kernel.gemm, kernel.copy or kernel.zero.
OpCost estimateOpCost(mlir::Operation *op);

/// What the model counts as useful work, for MFU (docs/cuda.md): per token
/// 6 x parameters + 12 x Tk x (the query's features per token) for each
/// attention op, times the tokens of a step (the input named "tokens").
struct ModelFlops {
  int64_t tokensPerStep = 0;
  double flopsPerToken = 0;
};

/// The roofline of `module`'s step (its train_step, or accumulate_step
/// `accumulate` times and apply_step; predict without training) compiled
/// for `target`, on each of its GPUs (TargetInfo::getGpus), as the --stats
/// JSON's "roofline" object. `stepTimes`, when given, receives each GPU's
/// step time against its measured ceilings (the scaling model's input).
llvm::json::Object
estimateRoofline(mlir::ModuleOp module, const TargetInfo &target, bool training,
                 int64_t accumulate, const ModelFlops &model,
                 std::vector<RankStepTime> *stepTimes = nullptr);

} // namespace kiln

#endif // KILN_PIPELINES_ROOFLINE_H
