//===- OptimizerOps.cpp - Interpreting the optimizer ops -------------------===//
//
// Part of Kiln. The learning-rate schedule, clipping and parameter updates,
// written as the formulas in GraphOptimizerOps.td say, element by element in
// the parameter's element type. Scalars (lr, step, grad scale) are read as
// doubles and rounded to that type first, as a compiled kernel would load
// them.
//
//===----------------------------------------------------------------------===//

#include "OpEvaluators.h"

#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cmath>
#include <vector>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

/// The learning rate of step `t` (1-based) under the op's schedule, in double.
static double scheduledRate(graph::LrScheduleOp op, double t) {
  double lr = op.getLr().convertToDouble();
  double warmup = double(op.getWarmupAttr().getInt());
  double total = double(op.getTotalAttr().getInt());
  double final = op.getFinal().convertToDouble();
  if (warmup > 0 && t <= warmup)
    return lr * t / warmup;
  graph::LrScheduleKind kind = op.getKind();
  if (kind == graph::LrScheduleKind::Constant)
    return lr;
  double progress = std::clamp((t - warmup) / (total - warmup), 0.0, 1.0);
  if (kind == graph::LrScheduleKind::Linear)
    return lr * (1.0 - (1.0 - final) * progress);
  return lr * (final + (1.0 - final) * 0.5 * (1.0 + std::cos(M_PI * progress)));
}

/// The sum of `values` in T, halves summed apart and added (error
/// O(log n) ulps rather than sequential summation's O(n)).
template <typename T> static T pairwiseSum(ArrayRef<T> values) {
  if (values.size() <= 8) {
    T sum = T(0);
    for (T value : values)
      sum += value;
    return sum;
  }
  size_t half = values.size() / 2;
  return pairwiseSum<T>(values.take_front(half)) +
         pairwiseSum<T>(values.drop_front(half));
}

static llvm::Expected<SmallVector<Tensor>> single(llvm::Expected<Tensor> t) {
  if (!t)
    return t.takeError();
  SmallVector<Tensor> results;
  results.push_back(std::move(*t));
  return results;
}

template <typename T>
static void updateSgd(graph::SgdUpdateOp op, const Tensor &p, const Tensor &g,
                      T lr, T scale, Tensor &out) {
  T wd = T(op.getWeightDecay().convertToDouble());
  ArrayRef<T> param = p.data<T>(), grad = g.data<T>();
  MutableArrayRef<T> result = out.data<T>();
  for (size_t i = 0; i < param.size(); ++i) {
    T d = grad[i] * scale + wd * param[i];
    result[i] = param[i] - lr * d;
  }
}

template <typename T>
static void updateMomentum(graph::MomentumUpdateOp op, const Tensor &p,
                           const Tensor &g, const Tensor &b, T lr, T scale,
                           Tensor &newParam, Tensor &newBuffer) {
  T wd = T(op.getWeightDecay().convertToDouble());
  T mu = T(op.getMomentum().convertToDouble());
  bool nesterov = op.getNesterov();
  ArrayRef<T> param = p.data<T>(), grad = g.data<T>(), buffer = b.data<T>();
  MutableArrayRef<T> paramOut = newParam.data<T>();
  MutableArrayRef<T> bufferOut = newBuffer.data<T>();
  for (size_t i = 0; i < param.size(); ++i) {
    T d = grad[i] * scale + wd * param[i];
    T next = mu * buffer[i] + d;
    bufferOut[i] = next;
    paramOut[i] = param[i] - lr * (nesterov ? d + mu * next : next);
  }
}

template <typename T>
static void updateAdamW(graph::AdamWUpdateOp op, const Tensor &p,
                        const Tensor &g, const Tensor &m, const Tensor &v, T lr,
                        T step, T scale, Tensor &newParam, Tensor &newM,
                        Tensor &newV) {
  T beta1 = T(op.getBeta1().convertToDouble());
  T beta2 = T(op.getBeta2().convertToDouble());
  T eps = T(op.getEps().convertToDouble());
  T wd = T(op.getWeightDecay().convertToDouble());
  T biasCorrection1 = T(1) - std::pow(beta1, step);
  T biasCorrection2Sqrt = std::sqrt(T(1) - std::pow(beta2, step));
  T stepSize = lr / biasCorrection1;
  T decay = T(1) - lr * wd;
  ArrayRef<T> param = p.data<T>(), grad = g.data<T>(), m0 = m.data<T>(),
              v0 = v.data<T>();
  MutableArrayRef<T> paramOut = newParam.data<T>(), mOut = newM.data<T>(),
                     vOut = newV.data<T>();
  for (size_t i = 0; i < param.size(); ++i) {
    T gi = grad[i] * scale;
    T mi = beta1 * m0[i] + (T(1) - beta1) * gi;
    T vi = beta2 * v0[i] + (T(1) - beta2) * gi * gi;
    T denominator = std::sqrt(vi) / biasCorrection2Sqrt + eps;
    mOut[i] = mi;
    vOut[i] = vi;
    paramOut[i] = param[i] * decay - stepSize * (mi / denominator);
  }
}

/// Dynamic loss scaling's next (scale, good steps, skip) after a step whose
/// scaled gradients have global norm `norm`.
template <typename T>
static std::array<T, 3> updateLossScale(graph::LossScaleUpdateOp op, T norm,
                                        T scale, T goodSteps) {
  if (!std::isfinite(norm))
    return {scale * T(op.getBackoff().convertToDouble()), T(0), T(1)};
  T clean = goodSteps + T(1);
  if (clean < T(op.getInterval()))
    return {scale, clean, T(0)};
  T grown = scale * T(op.getGrowth().convertToDouble());
  return {std::isfinite(grown) ? grown : scale, T(0), T(0)};
}

/// Makes the results of `op`, failing with its location.
static llvm::Expected<SmallVector<Tensor>> makeResults(Operation *op) {
  SmallVector<Tensor> results;
  for (unsigned i = 0, e = op->getNumResults(); i < e; ++i) {
    llvm::Expected<Tensor> result = makeResult(op, i);
    if (!result)
      return result.takeError();
    results.push_back(std::move(*result));
  }
  return results;
}

/// Whether update `op` skips: its `skip` operand is present and not 0.
static bool skipsUpdate(ArrayRef<const Tensor *> operands, Value skip) {
  return skip && operands.back()->getDouble(0) != 0.0;
}

/// The results of a skipped update: copies of the operands it would have
/// updated (`kept`, in result order: the op's getUpdatedOperandIndices).
static llvm::Expected<SmallVector<Tensor>>
keepOperands(ArrayRef<const Tensor *> operands, ArrayRef<unsigned> kept) {
  SmallVector<Tensor> results;
  for (unsigned index : kept)
    results.push_back(*operands[index]);
  return results;
}

llvm::Expected<SmallVector<Tensor>>
eval::evaluateOptimizerOp(Operation *op, ArrayRef<const Tensor *> operands) {
  for (const Tensor *operand : operands)
    if (llvm::Error error = requireFloat(op, *operand, "an operand"))
      return std::move(error);
  auto scalar = [&](unsigned index) { return operands[index]->getDouble(0); };
  using Result = llvm::Expected<SmallVector<Tensor>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([&](graph::LrScheduleOp schedule) -> Result {
        llvm::Expected<Tensor> result = makeResult(op);
        if (!result)
          return result.takeError();
        result->setDouble(0, scheduledRate(schedule, scalar(0)));
        result->roundToElementType();
        return single(std::move(result));
      })
      .Case([&](graph::GlobalNormOp) -> Result {
        llvm::Expected<Tensor> result = makeResult(op);
        if (!result)
          return result.takeError();
        // Pairwise summation in T: a model's gradients are 10^4..10^8
        // elements, whose squares summed one after another in f32 drift by
        // ~sqrt(n) ulps (4.8e-6 relative at 8016 elements) -- more than the
        // compiled kernels' blocked sums, which this is the reference for.
        dispatchFloat(result->getElementType(), [&](auto zero) {
          using T = decltype(zero);
          std::vector<T> squares;
          for (const Tensor *input : operands)
            for (int64_t i = 0, e = input->getNumElements(); i < e; ++i) {
              T x = T(input->getDouble(i));
              squares.push_back(x * x);
            }
          result->setDouble(0, double(std::sqrt(pairwiseSum<T>(squares))));
        });
        result->roundToElementType();
        return single(std::move(result));
      })
      .Case([&](graph::ClipScaleOp clip) -> Result {
        llvm::Expected<Tensor> result = makeResult(op);
        if (!result)
          return result.takeError();
        dispatchFloat(result->getElementType(), [&](auto zero) {
          using T = decltype(zero);
          T coefficient = T(clip.getMaxNorm().convertToDouble()) /
                          (T(scalar(0)) + T(1e-6));
          result->setDouble(0, double(std::min(T(1), coefficient)));
        });
        result->roundToElementType();
        return single(std::move(result));
      })
      .Case([&](graph::LossScaleUpdateOp update) -> Result {
        Result results = makeResults(op);
        if (!results)
          return results;
        dispatchFloat((*results)[0].getElementType(), [&](auto zero) {
          using T = decltype(zero);
          std::array<T, 3> next = updateLossScale<T>(
              update, T(scalar(0)), T(scalar(1)), T(scalar(2)));
          for (unsigned i = 0; i < 3; ++i)
            (*results)[i].setDouble(0, double(next[i]));
        });
        return results;
      })
      .Case([&](graph::SgdUpdateOp update) -> Result {
        if (skipsUpdate(operands, update.getSkip()))
          return keepOperands(operands, update.getUpdatedOperandIndices());
        Result results = makeResults(op);
        if (!results)
          return results;
        dispatchFloat((*results)[0].getElementType(), [&](auto zero) {
          using T = decltype(zero);
          updateSgd<T>(update, *operands[0], *operands[1], T(scalar(2)),
                       T(scalar(3)), (*results)[0]);
        });
        return results;
      })
      .Case([&](graph::MomentumUpdateOp update) -> Result {
        if (skipsUpdate(operands, update.getSkip()))
          return keepOperands(operands, update.getUpdatedOperandIndices());
        Result results = makeResults(op);
        if (!results)
          return results;
        dispatchFloat((*results)[0].getElementType(), [&](auto zero) {
          using T = decltype(zero);
          updateMomentum<T>(update, *operands[0], *operands[1], *operands[2],
                            T(scalar(3)), T(scalar(4)), (*results)[0],
                            (*results)[1]);
        });
        return results;
      })
      .Case([&](graph::AdamWUpdateOp update) -> Result {
        if (skipsUpdate(operands, update.getSkip()))
          return keepOperands(operands, update.getUpdatedOperandIndices());
        Result results = makeResults(op);
        if (!results)
          return results;
        dispatchFloat((*results)[0].getElementType(), [&](auto zero) {
          using T = decltype(zero);
          updateAdamW<T>(update, *operands[0], *operands[1], *operands[2],
                         *operands[3], T(scalar(4)), T(scalar(5)),
                         T(scalar(6)), (*results)[0], (*results)[1],
                         (*results)[2]);
        });
        return results;
      })
      .Default([&](Operation *) -> Result {
        return makeOpError(op, "is not an optimizer op");
      });
}
