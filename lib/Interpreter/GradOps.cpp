//===- GradOps.cpp - Interpreting the gradient ops ------------------------===//
//
// Part of Kiln. `graph.pad` and the gradient ops of GraphGradOps.td, each a
// direct transcription of its definition. They follow the interpreter's
// numerics contract (Interpreter.h): computation in the element type,
// reductions in increasing row-major order, results rounded once. The row
// statistics and probabilities that layer_norm_grad, attention_grad and
// cross_entropy_grad recompute are computed exactly as the forward
// evaluators compute them.
//
//===----------------------------------------------------------------------===//

#include "OpEvaluators.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

using Results = llvm::SmallVector<Tensor>;

/// An error at `op` unless `tensor` has exactly the shape and element type of
/// `expected`: the verifier guarantees it, unverified IR may not.
static llvm::Error requireLike(Operation *op, const Tensor &tensor,
                               const Tensor &expected, llvm::StringRef what) {
  if (tensor.getShape() == expected.getShape() &&
      tensor.getElementType() == expected.getElementType())
    return llvm::Error::success();
  return makeOpError(op, what + " " + tensor.getTypeString() + " should be " +
                             expected.getTypeString());
}

/// The zero results of `op`, one per result type.
static llvm::Expected<Results> makeResults(Operation *op) {
  Results results;
  for (unsigned i = 0, e = op->getNumResults(); i < e; ++i) {
    llvm::Expected<Tensor> result = makeResult(op, i);
    if (!result)
      return result.takeError();
    results.push_back(std::move(*result));
  }
  return results;
}

//===----------------------------------------------------------------------===//
// pad
//===----------------------------------------------------------------------===//

static llvm::Error pad(graph::PadOp op, const Tensor &input, Tensor &result) {
  llvm::ArrayRef<int64_t> offsets = op.getOffsets();
  if (input.getElementType() != result.getElementType() ||
      static_cast<int64_t>(offsets.size()) != input.getRank() ||
      input.getRank() != result.getRank())
    return makeOpError(op, "input " + input.getTypeString() +
                               " does not fit "
                               "in result " +
                               result.getTypeString());
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (offsets[d] < 0 ||
        offsets[d] + input.getShape()[d] > result.getShape()[d])
      return makeOpError(op, "input " + input.getTypeString() +
                                 " does not fit in result " +
                                 result.getTypeString() + " at its offsets");
  llvm::SmallVector<int64_t> strides = result.getStrides();
  llvm::SmallVector<int64_t> index;
  bool isInteger = !isFloat(input.getElementType());
  for (int64_t e = 0, end = input.getNumElements(); e < end; ++e) {
    delinearize(e, input.getShape(), index);
    for (int64_t d = 0; d < input.getRank(); ++d)
      index[d] += offsets[d];
    int64_t target = linearize(index, strides);
    if (isInteger)
      result.setInt(target, input.getInt(e));
    else
      result.setDouble(target, input.getDouble(e));
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

template <typename T>
static void reluGrad(const Tensor &dyTensor, const Tensor &xTensor,
                     Tensor &dxTensor) {
  llvm::ArrayRef<T> dy = dyTensor.data<T>(), x = xTensor.data<T>();
  llvm::MutableArrayRef<T> dx = dxTensor.data<T>();
  for (size_t e = 0; e < dx.size(); ++e)
    dx[e] = x[e] > T(0) ? dy[e] : T(0);
}

/// d/dx of 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
template <typename T>
static void geluGrad(const Tensor &dyTensor, const Tensor &xTensor,
                     Tensor &dxTensor) {
  llvm::ArrayRef<T> dy = dyTensor.data<T>(), x = xTensor.data<T>();
  llvm::MutableArrayRef<T> dx = dxTensor.data<T>();
  const T c = static_cast<T>(std::sqrt(2.0 / M_PI));
  const T a = static_cast<T>(0.044715);
  for (size_t e = 0; e < dx.size(); ++e) {
    T v = x[e];
    T t = std::tanh(c * (v + a * v * v * v));
    T du = c * (T(1) + T(3) * a * v * v);
    dx[e] = dy[e] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  }
}

//===----------------------------------------------------------------------===//
// softmax_grad and reduce_max_grad
//===----------------------------------------------------------------------===//

/// dx = y * (dy - sum(dy * y)) along the axis.
template <typename T>
static void softmaxGrad(const Tensor &dyTensor, const Tensor &yTensor,
                        int64_t axis, Tensor &dxTensor) {
  llvm::ArrayRef<int64_t> shape = yTensor.getShape();
  int64_t length = shape[axis];
  int64_t inner = computeNumElements(shape.drop_front(axis + 1));
  int64_t outer = computeNumElements(shape.take_front(axis));
  llvm::ArrayRef<T> dy = dyTensor.data<T>(), y = yTensor.data<T>();
  llvm::MutableArrayRef<T> dx = dxTensor.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * length + a) * inner + i; };
      T dot = T(0);
      for (int64_t a = 0; a < length; ++a)
        dot += dy[at(a)] * y[at(a)];
      for (int64_t a = 0; a < length; ++a)
        dx[at(a)] = y[at(a)] * (dy[at(a)] - dot);
    }
  }
}

/// Routes each group's dy to the group's first maximal element (row-major).
static llvm::Error reduceMaxGrad(graph::ReduceMaxGradOp op, const Tensor &dy,
                                 const Tensor &x, Tensor &dx) {
  int64_t rank = x.getRank();
  llvm::SmallVector<bool> reduced(rank, false);
  for (int64_t axis : op.getAxes()) {
    if (axis < 0 || axis >= rank)
      return makeOpError(op, "axis " + llvm::Twine(axis) + " is outside [0, " +
                                 llvm::Twine(rank) + ")");
    reduced[axis] = true;
  }
  llvm::SmallVector<int64_t> groupShape;
  for (int64_t d = 0; d < rank; ++d)
    groupShape.push_back(reduced[d] ? 1 : x.getShape()[d]);
  if (computeNumElements(groupShape) != dy.getNumElements())
    return makeOpError(op, "result_grad " + dy.getTypeString() +
                               " does not match the reduction of " +
                               x.getTypeString());
  llvm::SmallVector<int64_t> groupStrides = computeStrides(groupShape);
  int64_t groups = dy.getNumElements();
  std::vector<int64_t> argmax(groups, -1);
  std::vector<double> best(groups, -std::numeric_limits<double>::infinity());
  llvm::SmallVector<int64_t> index;
  for (int64_t e = 0, end = x.getNumElements(); e < end; ++e) {
    delinearize(e, x.getShape(), index);
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[d])
        index[d] = 0;
    int64_t group = linearize(index, groupStrides);
    double value = x.getDouble(e);
    // Strictly greater: a later tie does not replace the first maximum.
    if (argmax[group] < 0 || value > best[group]) {
      argmax[group] = e;
      best[group] = value;
    }
  }
  for (int64_t g = 0; g < groups; ++g)
    if (argmax[g] >= 0)
      dx.setDouble(argmax[g], dy.getDouble(g));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// layer_norm_grad
//===----------------------------------------------------------------------===//

template <typename T>
static void layerNormGrad(const Tensor &dyTensor, const Tensor &xTensor,
                          const Tensor &gammaTensor, double eps,
                          Tensor &dxTensor, Tensor &dgammaTensor,
                          Tensor &dbetaTensor) {
  int64_t width = xTensor.getShape().back();
  int64_t rows = width == 0 ? 0 : xTensor.getNumElements() / width;
  llvm::ArrayRef<T> dy = dyTensor.data<T>(), x = xTensor.data<T>(),
                    gamma = gammaTensor.data<T>();
  llvm::MutableArrayRef<T> dx = dxTensor.data<T>(),
                           dgamma = dgammaTensor.data<T>(),
                           dbeta = dbetaTensor.data<T>();
  std::vector<T> xhat(width);
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x.data() + r * width;
    const T *dyRow = dy.data() + r * width;
    // The statistics, exactly as the forward computes them.
    T sum = T(0);
    for (int64_t d = 0; d < width; ++d)
      sum += row[d];
    T mean = sum / static_cast<T>(width);
    T squares = T(0);
    for (int64_t d = 0; d < width; ++d)
      squares += (row[d] - mean) * (row[d] - mean);
    T invStd =
        T(1) / std::sqrt(squares / static_cast<T>(width) + static_cast<T>(eps));
    T sumG = T(0), sumGXhat = T(0);
    for (int64_t d = 0; d < width; ++d) {
      xhat[d] = (row[d] - mean) * invStd;
      T g = dyRow[d] * gamma[d];
      sumG += g;
      sumGXhat += g * xhat[d];
      dgamma[d] += dyRow[d] * xhat[d];
      dbeta[d] += dyRow[d];
    }
    T meanG = sumG / static_cast<T>(width);
    T meanGXhat = sumGXhat / static_cast<T>(width);
    for (int64_t d = 0; d < width; ++d)
      dx[r * width + d] =
          invStd * (dyRow[d] * gamma[d] - meanG - xhat[d] * meanGXhat);
  }
}

//===----------------------------------------------------------------------===//
// attention_grad
//===----------------------------------------------------------------------===//

namespace {
struct AttentionSizes {
  int64_t batches, queries, keys, keyDim, valueDim;
  bool causal;
  double scale;
  graph::AttentionMaskLayout mask;
};
} // namespace

template <typename T>
static void attentionGrad(const AttentionSizes &g, const Tensor &doutTensor,
                          const Tensor &query, const Tensor &key,
                          const Tensor &value, const Tensor *mask,
                          Tensor &dqTensor, Tensor &dkTensor,
                          Tensor &dvTensor) {
  llvm::ArrayRef<T> dout = doutTensor.data<T>(), q = query.data<T>(),
                    k = key.data<T>(), v = value.data<T>();
  AttentionMaskRows<T> maskRows{mask ? mask->data<T>().data() : nullptr,
                                g.mask};
  llvm::MutableArrayRef<T> dq = dqTensor.data<T>(), dk = dkTensor.data<T>(),
                           dv = dvTensor.data<T>();
  const T scale = static_cast<T>(g.scale);
  std::vector<T> p(g.keys), dp(g.keys);
  for (int64_t b = 0; b < g.batches; ++b) {
    const T *qb = q.data() + b * g.queries * g.keyDim;
    const T *kb = k.data() + b * g.keys * g.keyDim;
    const T *vb = v.data() + b * g.keys * g.valueDim;
    const T *ob = dout.data() + b * g.queries * g.valueDim;
    T *dqb = dq.data() + b * g.queries * g.keyDim;
    T *dkb = dk.data() + b * g.keys * g.keyDim;
    T *dvb = dv.data() + b * g.keys * g.valueDim;
    for (int64_t i = 0; i < g.queries; ++i) {
      int64_t visible = g.causal ? i + 1 : g.keys;
      // The probabilities, exactly as the forward computes them.
      attentionProbabilities(qb + i * g.keyDim, kb, g.keyDim, visible, scale,
                             p.data(), maskRows.getRow(b, i),
                             maskRows.getKeyStride());
      // dv_j += p_j dout_i; dp_j = dout_i . v_j; ds = p (dp - p . dp).
      T pDotDp = T(0);
      for (int64_t j = 0; j < visible; ++j) {
        T dot = T(0);
        for (int64_t d = 0; d < g.valueDim; ++d) {
          dvb[j * g.valueDim + d] += p[j] * ob[i * g.valueDim + d];
          dot += ob[i * g.valueDim + d] * vb[j * g.valueDim + d];
        }
        dp[j] = dot;
        pDotDp += p[j] * dot;
      }
      for (int64_t j = 0; j < visible; ++j) {
        T ds = p[j] * (dp[j] - pDotDp) * scale;
        for (int64_t d = 0; d < g.keyDim; ++d) {
          dqb[i * g.keyDim + d] += ds * kb[j * g.keyDim + d];
          dkb[j * g.keyDim + d] += ds * qb[i * g.keyDim + d];
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// cross_entropy_grad and embedding_grad
//===----------------------------------------------------------------------===//

/// dlogits = dloss (softmax(x) - q) / rows, q the smoothed target.
template <typename T>
static llvm::Error crossEntropyGrad(Operation *op, const Tensor &dlossTensor,
                                    const Tensor &logits, const Tensor &targets,
                                    double smoothing, Tensor &dlogitsTensor) {
  int64_t classes = logits.getShape().back();
  int64_t rows = targets.getNumElements();
  llvm::ArrayRef<T> x = logits.data<T>();
  llvm::MutableArrayRef<T> dx = dlogitsTensor.data<T>();
  const T onTarget = T(1) - static_cast<T>(smoothing);
  const T perClass = static_cast<T>(smoothing) / static_cast<T>(classes);
  const T rowScale = dlossTensor.data<T>()[0] / static_cast<T>(rows);
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
    for (int64_t c = 0; c < classes; ++c) {
      T probability = std::exp(row[c] - maxValue) / sumExp;
      T weight = perClass + (c == target ? onTarget : T(0));
      dx[r * classes + c] = rowScale * (probability - weight);
    }
  }
  return llvm::Error::success();
}

/// table[ids[i]] += dy[i], in row-major order of the ids.
static llvm::Error embeddingGrad(Operation *op, const Tensor &dy,
                                 const Tensor &ids, Tensor &table) {
  int64_t vocab = table.getShape()[0], width = table.getShape()[1];
  if (dy.getNumElements() != ids.getNumElements() * width)
    return makeOpError(op, "result_grad " + dy.getTypeString() +
                               " should be ids.shape + [" + llvm::Twine(width) +
                               "]");
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i) {
    int64_t id = ids.getInt(i);
    if (id < 0 || id >= vocab)
      return makeOpError(op, "id " + llvm::Twine(id) + " is outside [0, " +
                                 llvm::Twine(vocab) + ")");
    dispatchFloat(table.getElementType(), [&](auto zero) {
      using T = decltype(zero);
      llvm::MutableArrayRef<T> rowOut =
          table.data<T>().slice(id * width, width);
      llvm::ArrayRef<T> rowIn = dy.data<T>().slice(i * width, width);
      for (int64_t d = 0; d < width; ++d)
        rowOut[d] += rowIn[d];
      return 0;
    });
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// The float computation of a gradient op on its operands into `results`.
static llvm::Error compute(Operation *op, llvm::ArrayRef<const Tensor *> in,
                           Results &out) {
  return llvm::TypeSwitch<Operation *, llvm::Error>(op)
      .Case([&](graph::PadOp padOp) { return pad(padOp, *in[0], out[0]); })
      .Case<graph::ReluGradOp, graph::GeluGradOp>([&](auto) -> llvm::Error {
        if (llvm::Error err = requireLike(op, *in[0], out[0], "result_grad"))
          return err;
        if (llvm::Error err = requireLike(op, *in[1], out[0], "input"))
          return err;
        dispatchFloat(out[0].getElementType(), [&](auto zero) {
          using T = decltype(zero);
          if (isa<graph::ReluGradOp>(op))
            reluGrad<T>(*in[0], *in[1], out[0]);
          else
            geluGrad<T>(*in[0], *in[1], out[0]);
          return 0;
        });
        return llvm::Error::success();
      })
      .Case([&](graph::SoftmaxGradOp grad) -> llvm::Error {
        if (llvm::Error err = requireLike(op, *in[0], out[0], "result_grad"))
          return err;
        if (llvm::Error err = requireLike(op, *in[1], out[0], "result"))
          return err;
        int64_t axis = grad.getAxis();
        if (axis < 0 || axis >= out[0].getRank())
          return makeOpError(op, "axis " + llvm::Twine(axis) +
                                     " is outside the rank");
        dispatchFloat(out[0].getElementType(), [&](auto zero) {
          softmaxGrad<decltype(zero)>(*in[0], *in[1], axis, out[0]);
          return 0;
        });
        return llvm::Error::success();
      })
      .Case([&](graph::ReduceMaxGradOp grad) -> llvm::Error {
        if (llvm::Error err = requireLike(op, *in[1], out[0], "input"))
          return err;
        return reduceMaxGrad(grad, *in[0], *in[1], out[0]);
      })
      .Case([&](graph::LayerNormGradOp grad) -> llvm::Error {
        if (llvm::Error err = requireLike(op, *in[0], out[0], "result_grad"))
          return err;
        if (llvm::Error err = requireLike(op, *in[1], out[0], "input"))
          return err;
        if (llvm::Error err = requireLike(op, *in[2], out[1], "gamma"))
          return err;
        if (out[0].getRank() < 1 || out[1].getRank() != 1 ||
            out[1].getShape()[0] != out[0].getShape().back())
          return makeOpError(op, "gamma must have the last dim's shape");
        double eps = grad.getEps().convertToDouble();
        dispatchFloat(out[0].getElementType(), [&](auto zero) {
          layerNormGrad<decltype(zero)>(*in[0], *in[1], *in[2], eps, out[0],
                                        out[1], out[2]);
          return 0;
        });
        return llvm::Error::success();
      })
      .Case([&](graph::AttentionGradOp grad) -> llvm::Error {
        for (unsigned i = 0; i < 3; ++i)
          if (llvm::Error err = requireLike(op, *in[i + 1], out[i], "operand"))
            return err;
        llvm::ArrayRef<int64_t> qs = out[0].getShape(), ks = out[1].getShape(),
                                vs = out[2].getShape();
        int64_t rank = out[0].getRank();
        AttentionSizes g{computeNumElements(qs.drop_back(2)),
                         qs[rank - 2],
                         ks[rank - 2],
                         qs[rank - 1],
                         vs[rank - 1],
                         grad.getCausal(),
                         grad.getEffectiveScale()};
        if (in[0]->getNumElements() != g.batches * g.queries * g.valueDim)
          return makeOpError(op, "result_grad " + in[0]->getTypeString() +
                                     " does not match the attention");
        const Tensor *mask = grad.getMask() ? in[5] : nullptr;
        if (mask) {
          if (mask->getElementType() != out[0].getElementType())
            return makeOpError(op, "mask " + mask->getTypeString() +
                                       " differs from the query's type");
          llvm::Expected<graph::AttentionMaskLayout> layout =
              getAttentionMaskLayout(op, mask, qs, ks);
          if (!layout)
            return layout.takeError();
          g.mask = *layout;
        }
        dispatchFloat(out[0].getElementType(), [&](auto zero) {
          attentionGrad<decltype(zero)>(g, *in[0], *in[1], *in[2], *in[3], mask,
                                        out[0], out[1], out[2]);
          return 0;
        });
        return llvm::Error::success();
      })
      .Case([&](graph::CrossEntropyGradOp grad) -> llvm::Error {
        if (llvm::Error err = requireLike(op, *in[1], out[0], "logits"))
          return err;
        if (in[2]->getNumElements() * out[0].getShape().back() !=
            out[0].getNumElements())
          return makeOpError(op, "targets " + in[2]->getTypeString() +
                                     " do not match the logits");
        double smoothing = grad.getLabelSmoothing().convertToDouble();
        return dispatchFloat(out[0].getElementType(), [&](auto zero) {
          return crossEntropyGrad<decltype(zero)>(op, *in[0], *in[1], *in[2],
                                                  smoothing, out[0]);
        });
      })
      .Case([&](graph::EmbeddingGradOp) -> llvm::Error {
        return embeddingGrad(op, *in[0], *in[1], out[0]);
      })
      .Default(
          [&](Operation *) { return makeOpError(op, "is not a gradient op"); });
}

llvm::Expected<llvm::SmallVector<Tensor>>
eval::evaluateGradOp(Operation *op, llvm::ArrayRef<const Tensor *> operands) {
  llvm::Expected<Results> results = makeResults(op);
  if (!results)
    return results.takeError();
  if (!isa<graph::PadOp, graph::EmbeddingGradOp>(op))
    for (const Tensor &result : *results)
      if (llvm::Error err = requireFloat(op, result, "result"))
        return std::move(err);
  if (llvm::Error err = compute(op, operands, *results))
    return std::move(err);
  for (Tensor &result : *results)
    result.roundToElementType();
  return results;
}
