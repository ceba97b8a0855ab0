//===- GraphGradOps.cpp - Verifiers and costs of the gradient ops ---------===//
//
// Part of Kiln. The ops of GraphGradOps.td: `graph.pad` and the gradient ops
// that reverse-mode autodiff builds. Each verifier checks its types against
// the shape rule of the forward op the gradient belongs to (GraphShapes.h),
// so a gradient op accepts exactly the shapes its forward op does.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "GraphVerifierUtils.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;
using namespace kiln::graph::verifier;

static int64_t numElements(Value value) {
  return getNumElements(shapeOf(value));
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult PadOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()},
                                   {"input", "result"})))
    return failure();
  // A pad is the slice of its result read backwards: the same rule holds.
  std::string error;
  if (failed(checkSlice(shapeOf(getResult()), getOffsets(), shapeOf(getInput()),
                        error)))
    return emitOpError(error);
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  std::string error;
  if (failed(inferSoftmaxShape(shapeOf(getResult()), getAxisAttr().getInt(),
                               error)))
    return emitOpError(error);
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  // gamma stands for beta too: they have one shape.
  return verifyLayerNorm(*this, getInput(), getGamma(), getGamma(), getEps());
}

LogicalResult ReduceMaxGradOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResultGrad()},
                                   {"input", "result_grad"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferReduceShape(shapeOf(getInput()), getAxes(), getKeepdims(), error);
  return verifyShape(*this, inferred, error, shapeOf(getResultGrad()),
                     "result_grad");
}

double AttentionGradOp::getEffectiveScale() {
  return getEffectiveAttentionScale(getScaleAttr(), shapeOf(getQuery()));
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifySameElementType(
          *this, {getQuery(), getKey(), getValue(), getResultGrad()},
          {"query", "key", "value", "result_grad"})))
    return failure();
  if (failed(verifyAttentionScale(*this, getScaleAttr())))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferAttentionShape(shapeOf(getQuery()), shapeOf(getKey()),
                          shapeOf(getValue()), getCausal(), error);
  if (failed(verifyShape(*this, inferred, error, shapeOf(getResultGrad()),
                         "result_grad")))
    return failure();
  return verifyAttentionMask(*this, getQuery(), getKey(), getMask());
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifySameElementType(*this, {getLogits(), getResultGrad()},
                                   {"logits", "result_grad"})))
    return failure();
  double smoothing = getLabelSmoothing().convertToDouble();
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return emitOpError() << "label_smoothing must be in [0, 1], got "
                         << smoothing;
  std::string error;
  if (failed(inferCrossEntropyShape(shapeOf(getLogits()), shapeOf(getTargets()),
                                    error)))
    return emitOpError(error);
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifySameElementType(*this, {getTableGrad(), getResultGrad()},
                                   {"table_grad", "result_grad"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferEmbeddingShape(shapeOf(getTableGrad()), shapeOf(getIds()), error);
  return verifyShape(*this, inferred, error, shapeOf(getResultGrad()),
                     "result_grad");
}

//===----------------------------------------------------------------------===//
// Costs, in the conventions of GraphCost.cpp
//===----------------------------------------------------------------------===//

namespace {
/// relu_grad: one compare-and-select per element.
constexpr int64_t kReluGradFlopsPerElement = 1;
/// gelu_grad: the forward's 9 plus the derivative's polynomial and products.
constexpr int64_t kGeluGradFlopsPerElement = 18;
/// softmax_grad: dy*y, row sum, subtract, multiply.
constexpr int64_t kSoftmaxGradFlopsPerElement = 4;
/// layer_norm_grad: statistics (4), xhat (2), dy*gamma (1), two row sums of
/// products (4), the combination (3), dgamma and dbeta sums (3).
constexpr int64_t kLayerNormGradFlopsPerElement = 17;
/// cross_entropy_grad: softmax (4: max, subtract, exp, sum), divide,
/// subtract the target distribution, scale by dloss / N.
constexpr int64_t kCrossEntropyGradFlopsPerLogit = 7;
/// attention_grad, per score: recomputed scale and softmax (6), the softmax
/// backward (dP * P, row sum, subtract, multiply: 4).
constexpr int64_t kAttentionGradFlopsPerScore = 10;
} // namespace

int64_t PadOp::getFlops() { return 0; }

int64_t ReluGradOp::getFlops() {
  return kReluGradFlopsPerElement * numElements(getInputGrad());
}

int64_t GeluGradOp::getFlops() {
  return kGeluGradFlopsPerElement * numElements(getInputGrad());
}

int64_t SoftmaxGradOp::getFlops() {
  return kSoftmaxGradFlopsPerElement * numElements(getInputGrad());
}

int64_t LayerNormGradOp::getFlops() {
  return kLayerNormGradFlopsPerElement * numElements(getInputGrad());
}

int64_t ReduceMaxGradOp::getFlops() {
  // One compare per input element finds the argmax.
  return numElements(getInput());
}

int64_t CrossEntropyGradOp::getFlops() {
  return kCrossEntropyGradFlopsPerLogit * numElements(getLogits());
}

int64_t EmbeddingGradOp::getFlops() {
  // One add per element of dy scattered into the table.
  return numElements(getResultGrad());
}

int64_t AttentionGradOp::getFlops() {
  // Per batch entry: the recomputed scores (2 Tq Tk Dk), dv = p^T dout and
  // dp = dout v^T (2 Tq Tk Dv each), dq = ds k and dk = ds^T q (2 Tq Tk Dk
  // each), plus the elementwise work per score.
  ArrayRef<int64_t> query = shapeOf(getQuery());
  ArrayRef<int64_t> key = shapeOf(getKey());
  ArrayRef<int64_t> value = shapeOf(getValue());
  int64_t batch = getNumElements(query.drop_back(2));
  int64_t tq = query[query.size() - 2], dk = query.back();
  int64_t tk = key[key.size() - 2], dv = value.back();
  int64_t scores = batch * tq * tk;
  // A mask adds one term per recomputed score.
  int64_t perScore = kAttentionGradFlopsPerScore + (getMask() ? 1 : 0);
  return 6 * scores * dk + 4 * scores * dv + perScore * scores;
}
