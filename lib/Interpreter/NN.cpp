//===- NN.cpp - Interpreting the neural-network graph ops -----------------===//
//
// Part of Kiln. embedding, layer_norm, softmax, cross_entropy and dropout,
// each as a direct transcription of the op's definition in GraphOps.td.
//
//===----------------------------------------------------------------------===//

#include "OpEvaluators.h"

#include "kiln/Philox.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

llvm::Expected<Tensor> eval::evaluateEmbedding(graph::EmbeddingOp op,
                                               const Tensor &table,
                                               const Tensor &ids) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, table, "table"))
    return std::move(err);
  if (llvm::Error err = requireIntegers(op, ids, "ids"))
    return std::move(err);
  if (table.getRank() != 2 ||
      table.getElementType() != result->getElementType())
    return makeOpError(op, "table must be a [V, D] tensor of the result's "
                           "element type, got " +
                               table.getTypeString());
  int64_t vocab = table.getShape()[0], width = table.getShape()[1];
  llvm::SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(width);
  if (result->getShape() != llvm::ArrayRef<int64_t>(expected))
    return makeOpError(op, "result type " + result->getTypeString() +
                               " should have shape ids.shape + [" +
                               llvm::Twine(width) + "]");
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i) {
    int64_t id = ids.getInt(i);
    if (id < 0 || id >= vocab)
      return makeOpError(op, "id " + llvm::Twine(id) + " at index " +
                                 llvm::Twine(i) + " is outside [0, " +
                                 llvm::Twine(vocab) + ")");
    for (int64_t d = 0; d < width; ++d)
      result->setDouble(i * width + d, table.getDouble(id * width + d));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// argmax, one_hot
//===----------------------------------------------------------------------===//

llvm::Expected<Tensor> eval::evaluateArgmax(graph::ArgmaxOp op,
                                            const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, input, "input"))
    return std::move(err);
  llvm::ArrayRef<int64_t> shape = input.getShape();
  int64_t axis = op.getAxis();
  int64_t outer = 1, inner = 1, count = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d)
    inner *= shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      // The first largest; a NaN is larger than everything, the first wins.
      int64_t best = 0;
      double bestValue = input.getDouble(o * count * inner + i);
      for (int64_t k = 1; k < count && !std::isnan(bestValue); ++k) {
        double value = input.getDouble((o * count + k) * inner + i);
        if (std::isnan(value) || value > bestValue) {
          best = k;
          bestValue = value;
        }
      }
      result->setInt(o * inner + i, best);
    }
  return result;
}

llvm::Expected<Tensor> eval::evaluateOneHot(graph::OneHotOp op,
                                            const Tensor &ids) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireIntegers(op, ids, "ids"))
    return std::move(err);
  int64_t classes = result->getShape().back();
  for (int64_t n = 0, e = ids.getNumElements(); n < e; ++n) {
    int64_t id = ids.getInt(n);
    for (int64_t c = 0; c < classes; ++c)
      result->setDouble(n * classes + c, id == c ? 1.0 : 0.0);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

/// Per row of D elements: mean = sum(x) / D, var = sum((x - mean)^2) / D
/// (biased, two passes), y = (x - mean) * (1 / sqrt(var + eps)) * gamma + beta.
template <typename T>
static void layerNorm(const Tensor &input, const Tensor &gamma,
                      const Tensor &beta, double eps, Tensor &result) {
  int64_t width = input.getShape().back();
  int64_t rows = width == 0 ? 0 : input.getNumElements() / width;
  llvm::ArrayRef<T> x = input.data<T>(), g = gamma.data<T>(),
                    b = beta.data<T>();
  llvm::MutableArrayRef<T> y = result.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x.data() + r * width;
    T sum = T(0);
    for (int64_t d = 0; d < width; ++d)
      sum += row[d];
    T mean = sum / static_cast<T>(width);
    T squares = T(0);
    for (int64_t d = 0; d < width; ++d)
      squares += (row[d] - mean) * (row[d] - mean);
    T variance = squares / static_cast<T>(width);
    T invStd = T(1) / std::sqrt(variance + static_cast<T>(eps));
    for (int64_t d = 0; d < width; ++d)
      y[r * width + d] = (row[d] - mean) * invStd * g[d] + b[d];
  }
}

llvm::Expected<Tensor> eval::evaluateLayerNorm(graph::LayerNormOp op,
                                               const Tensor &input,
                                               const Tensor &gamma,
                                               const Tensor &beta) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, input, "input"))
    return std::move(err);
  if (input.getRank() < 1 || input.getShape() != result->getShape() ||
      input.getElementType() != result->getElementType())
    return makeOpError(op, "input " + input.getTypeString() + " and result " +
                               result->getTypeString() +
                               " must have one type of rank >= 1");
  for (const Tensor *param : {&gamma, &beta})
    if (param->getRank() != 1 ||
        param->getShape()[0] != input.getShape().back() ||
        param->getElementType() != input.getElementType())
      return makeOpError(op, "gamma and beta must have the last dim's shape, "
                             "got " +
                                 param->getTypeString());
  double eps = op.getEps().convertToDouble();
  dispatchFloat(input.getElementType(), [&](auto zero) {
    layerNorm<decltype(zero)>(input, gamma, beta, eps, *result);
    return 0;
  });
  result->roundToElementType();
  return result;
}

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

/// Along the axis: y = exp(x - max) / sum(exp(x - max)).
template <typename T>
static void softmax(const Tensor &input, int64_t axis, Tensor &result) {
  llvm::ArrayRef<int64_t> shape = input.getShape();
  int64_t length = shape[axis];
  int64_t inner = computeNumElements(shape.drop_front(axis + 1));
  int64_t outer = computeNumElements(shape.take_front(axis));
  llvm::ArrayRef<T> x = input.data<T>();
  llvm::MutableArrayRef<T> y = result.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * length + a) * inner + i; };
      T maxValue = -std::numeric_limits<T>::infinity();
      for (int64_t a = 0; a < length; ++a)
        maxValue = std::max(maxValue, x[at(a)]);
      T total = T(0);
      for (int64_t a = 0; a < length; ++a) {
        y[at(a)] = std::exp(x[at(a)] - maxValue);
        total += y[at(a)];
      }
      for (int64_t a = 0; a < length; ++a)
        y[at(a)] /= total;
    }
  }
}

llvm::Expected<Tensor> eval::evaluateSoftmax(graph::SoftmaxOp op,
                                             const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, input, "input"))
    return std::move(err);
  if (input.getShape() != result->getShape() ||
      input.getElementType() != result->getElementType())
    return makeOpError(op, "input " + input.getTypeString() +
                               " differs from the result " +
                               result->getTypeString());
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= input.getRank())
    return makeOpError(op, "axis " + llvm::Twine(axis) + " is outside [0, " +
                               llvm::Twine(input.getRank()) + ")");
  dispatchFloat(input.getElementType(), [&](auto zero) {
    softmax<decltype(zero)>(input, axis, *result);
    return 0;
  });
  result->roundToElementType();
  return result;
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

/// Per row: lse = max + log(sum exp(x - max)); with the target distribution
/// q = (1 - s) onehot(t) + s / C, the row loss is -sum_j q_j (x_j - lse).
/// The result is the sum of the row losses (in row order) / rows.
template <typename T>
static llvm::Error crossEntropy(Operation *op, const Tensor &logits,
                                const Tensor &targets, double smoothing,
                                Tensor &result) {
  int64_t classes = logits.getShape().back();
  int64_t rows = targets.getNumElements();
  llvm::ArrayRef<T> x = logits.data<T>();
  const T onTarget = T(1) - static_cast<T>(smoothing);
  const T perClass = static_cast<T>(smoothing) / static_cast<T>(classes);
  T total = T(0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t target = targets.getInt(r);
    if (target < 0 || target >= classes)
      return makeOpError(op, "target " + llvm::Twine(target) + " of row " +
                                 llvm::Twine(r) + " is outside [0, " +
                                 llvm::Twine(classes) + ")");
    const T *row = x.data() + r * classes;
    T maxValue = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      maxValue = std::max(maxValue, row[c]);
    T sumExp = T(0);
    for (int64_t c = 0; c < classes; ++c)
      sumExp += std::exp(row[c] - maxValue);
    T logSumExp = maxValue + std::log(sumExp);
    T rowLoss = T(0);
    for (int64_t c = 0; c < classes; ++c) {
      T weight = perClass + (c == target ? onTarget : T(0));
      rowLoss -= weight * (row[c] - logSumExp);
    }
    total += rowLoss;
  }
  result.data<T>()[0] = total / static_cast<T>(rows);
  return llvm::Error::success();
}

llvm::Expected<Tensor> eval::evaluateCrossEntropy(graph::CrossEntropyOp op,
                                                  const Tensor &logits,
                                                  const Tensor &targets) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, logits, "logits"))
    return std::move(err);
  if (llvm::Error err = requireIntegers(op, targets, "targets"))
    return std::move(err);
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != targets.getShape() ||
      result->getRank() != 0 ||
      result->getElementType() != logits.getElementType())
    return makeOpError(op, "logits " + logits.getTypeString() + ", targets " +
                               targets.getTypeString() + " and result " +
                               result->getTypeString() + " do not match");
  double smoothing = op.getLabelSmoothing().convertToDouble();
  llvm::Error err = dispatchFloat(logits.getElementType(), [&](auto zero) {
    return crossEntropy<decltype(zero)>(op, logits, targets, smoothing,
                                        *result);
  });
  if (err)
    return std::move(err);
  result->roundToElementType();
  return result;
}

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

/// Element e is kept iff philox::dropoutKeeps(word(seed, step, stream, e)),
/// and a kept element is x * (1 / (1 - rate)), the scale computed in double
/// and rounded once to T.
template <typename T>
static void dropout(const Tensor &input, double rate, uint32_t stream,
                    const RunOptions &options, Tensor &result) {
  llvm::ArrayRef<T> x = input.data<T>();
  llvm::MutableArrayRef<T> y = result.data<T>();
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  const uint32_t threshold = philox::dropoutThreshold(rate);
  // Micro-batch m draws the elements m * size + e of the whole batch.
  uint64_t size = static_cast<uint64_t>(input.getNumElements());
  uint64_t base = static_cast<uint64_t>(options.microBatch) * size;
  for (uint64_t e = 0; e < size; ++e) {
    uint32_t word =
        philox::wordFor(options.seed, options.step, stream, base + e);
    bool keep = philox::dropoutKeeps(word, threshold);
    y[e] = keep ? x[e] * scale : T(0);
  }
}

llvm::Expected<Tensor> eval::evaluateDropout(graph::DropoutOp op,
                                             const Tensor &input,
                                             const RunOptions &options) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, input, "input"))
    return std::move(err);
  if (input.getShape() != result->getShape() ||
      input.getElementType() != result->getElementType())
    return makeOpError(op, "input " + input.getTypeString() +
                               " differs from the result " +
                               result->getTypeString());
  if (!options.training)
    return input;
  double rate = op.getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return makeOpError(op,
                       "rate " + std::to_string(rate) + " is outside [0, 1)");
  int64_t stream = op.getStream();
  if (stream < 0 || stream > std::numeric_limits<uint32_t>::max())
    return makeOpError(op, "stream " + llvm::Twine(stream) +
                               " does not fit in 32 bits");
  dispatchFloat(input.getElementType(), [&](auto zero) {
    dropout<decltype(zero)>(input, rate, static_cast<uint32_t>(stream), options,
                            *result);
    return 0;
  });
  result->roundToElementType();
  return result;
}
