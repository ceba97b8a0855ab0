//===- GraphOptimizerOps.cpp - Verifiers and costs of optimizer ops --------===//
//
// Part of Kiln. The learning-rate schedule, clipping and update ops. Types are
// constrained in ODS (AllTypesMatch); these verifiers check the
// hyper-parameters, so that a bad value is an error at compile time rather
// than a NaN at step 1000.
//
// FLOPs per element, following GraphCost.cpp's convention: sgd 4 (scale,
// decay multiply-add, step multiply-add), momentum 6, adamw 16 (two moment
// updates: 5, square: 1, sqrt and two divisions: 4, decay and step: 6);
// global_norm 2 per input element; the scalar ops (schedule, clip_scale,
// loss_scale_update) a handful.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace kiln::graph;

namespace {
constexpr int64_t kSgdFlopsPerElement = 4;
constexpr int64_t kMomentumFlopsPerElement = 6;
constexpr int64_t kAdamWFlopsPerElement = 16;
constexpr int64_t kScheduleFlops = 10;
constexpr int64_t kClipScaleFlops = 3;
constexpr int64_t kLossScaleUpdateFlops = 4;
} // namespace

static int64_t elementsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// `0.1`, `1e-08`, `inf`: a number as people write it.
static std::string shortNumber(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

/// Checks that a hyper-parameter lies in a range; `what` names it.
static LogicalResult checkRange(Operation *op, StringRef what, double value,
                                double low, bool lowInclusive, double high,
                                bool highInclusive) {
  bool aboveLow = lowInclusive ? value >= low : value > low;
  bool belowHigh = highInclusive ? value <= high : value < high;
  if (aboveLow && belowHigh)
    return success();
  return op->emitOpError() << what << " must be in "
                           << (lowInclusive ? "[" : "(") << shortNumber(low)
                           << ", " << shortNumber(high)
                           << (highInclusive ? "]" : ")") << ", got "
                           << shortNumber(value);
}

static constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// lr_schedule
//===----------------------------------------------------------------------===//

LogicalResult LrScheduleOp::verify() {
  LrScheduleKind kind = getKind();
  if (failed(checkRange(*this, "lr", getLr().convertToDouble(), 0.0, false,
                        kInf, false)) ||
      failed(checkRange(*this, "final", getFinal().convertToDouble(), 0.0, true,
                        1.0, true)))
    return failure();
  int64_t warmup = getWarmupAttr().getInt(), total = getTotalAttr().getInt();
  if (warmup < 0)
    return emitOpError() << "warmup must not be negative, got " << warmup;
  if (total < 1)
    return emitOpError() << "total must be at least 1, got " << total;
  if (kind != LrScheduleKind::Constant && total <= warmup)
    return emitOpError() << "the " << stringifyLrScheduleKind(kind)
                         << " schedule needs total (" << total << ") > warmup ("
                         << warmup << ")";
  return success();
}

int64_t LrScheduleOp::getFlops() { return kScheduleFlops; }

//===----------------------------------------------------------------------===//
// global_norm and clip_scale
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one tensor";
  return success();
}

int64_t GlobalNormOp::getFlops() {
  int64_t flops = 1; // The final square root.
  for (Value input : getInputs())
    flops += 2 * elementsOf(input);
  return flops;
}

LogicalResult ClipScaleOp::verify() {
  return checkRange(*this, "max_norm", getMaxNorm().convertToDouble(), 0.0,
                    false, kInf, false);
}

int64_t ClipScaleOp::getFlops() { return kClipScaleFlops; }

LogicalResult LossScaleUpdateOp::verify() {
  if (failed(checkRange(*this, "growth", getGrowth().convertToDouble(), 1.0,
                        true, kInf, false)) ||
      failed(checkRange(*this, "backoff", getBackoff().convertToDouble(), 0.0,
                        false, 1.0, true)))
    return failure();
  if (getInterval() < 1)
    return emitOpError() << "interval must be at least 1, got "
                         << getInterval();
  return success();
}

int64_t LossScaleUpdateOp::getFlops() { return kLossScaleUpdateFlops; }

//===----------------------------------------------------------------------===//
// Updates
//===----------------------------------------------------------------------===//

/// The optional `skip` operand of an update has the learning rate's type.
static LogicalResult verifySkip(Operation *op, Value skip, Value lr) {
  if (skip && skip.getType() != lr.getType())
    return op->emitOpError() << "skip must have the type of lr ("
                             << lr.getType() << "), got " << skip.getType();
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  if (failed(verifySkip(*this, getSkip(), getLr())))
    return failure();
  return checkRange(*this, "weight_decay", getWeightDecay().convertToDouble(),
                    0.0, true, kInf, false);
}

SmallVector<unsigned, 3> SgdUpdateOp::getUpdatedOperandIndices() {
  return {getParamMutable().getOperandNumber()};
}

int64_t SgdUpdateOp::getFlops() {
  return kSgdFlopsPerElement * elementsOf(getParam());
}

LogicalResult MomentumUpdateOp::verify() {
  if (failed(verifySkip(*this, getSkip(), getLr())))
    return failure();
  if (failed(checkRange(*this, "momentum", getMomentum().convertToDouble(),
                        0.0, true, 1.0, false)))
    return failure();
  return checkRange(*this, "weight_decay", getWeightDecay().convertToDouble(),
                    0.0, true, kInf, false);
}

SmallVector<unsigned, 3> MomentumUpdateOp::getUpdatedOperandIndices() {
  return {getParamMutable().getOperandNumber(),
          getBufferMutable().getOperandNumber()};
}

int64_t MomentumUpdateOp::getFlops() {
  return kMomentumFlopsPerElement * elementsOf(getParam());
}

LogicalResult AdamWUpdateOp::verify() {
  if (failed(verifySkip(*this, getSkip(), getLr())))
    return failure();
  if (failed(checkRange(*this, "beta1", getBeta1().convertToDouble(), 0.0, true,
                        1.0, false)) ||
      failed(checkRange(*this, "beta2", getBeta2().convertToDouble(), 0.0, true,
                        1.0, false)) ||
      failed(checkRange(*this, "eps", getEps().convertToDouble(), 0.0, false,
                        kInf, false)))
    return failure();
  return checkRange(*this, "weight_decay", getWeightDecay().convertToDouble(),
                    0.0, true, kInf, false);
}

SmallVector<unsigned, 3> AdamWUpdateOp::getUpdatedOperandIndices() {
  return {getParamMutable().getOperandNumber(),
          getMMutable().getOperandNumber(), getVMutable().getOperandNumber()};
}

int64_t AdamWUpdateOp::getFlops() {
  return kAdamWFlopsPerElement * elementsOf(getParam());
}
