//===- GraphVJPNN.cpp - VJPs of the neural-network ops --------------------===//
//
// Part of Kiln. DifferentiableOpInterface of embedding, layer_norm, softmax,
// attention and cross_entropy. Each builds its dedicated gradient op
// (GraphGradOps.td): one fused op per backward, where a composition of
// forward ops would store or recompute more and round more often.
//
//===----------------------------------------------------------------------===//

#include "GraphVJPUtils.h"

#include "kiln/Dialect/Graph/IR/GraphShapes.h"

using namespace mlir;
using namespace kiln::graph;
using namespace kiln::graph::vjp;

LogicalResult EmbeddingOp::buildVJP(OpBuilder &builder,
                                    ArrayRef<Value> cotangents,
                                    SmallVectorImpl<Value> &operandCotangents) {
  // The table's gradient scatter-adds dy's rows; the ids are integers.
  operandCotangents.push_back(EmbeddingGradOp::create(
      builder, getLoc(), getTable().getType(), cotangents[0], getIds()));
  operandCotangents.push_back(Value());
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &builder,
                                    ArrayRef<Value> cotangents,
                                    SmallVectorImpl<Value> &operandCotangents) {
  auto grad = LayerNormGradOp::create(builder, getLoc(), getInput().getType(),
                                      getGamma().getType(),
                                      getGamma().getType(), cotangents[0],
                                      getInput(), getGamma(), getEpsAttr());
  operandCotangents.append(
      {grad.getInputGrad(), grad.getGammaGrad(), grad.getBetaGrad()});
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &builder,
                                  ArrayRef<Value> cotangents,
                                  SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(SoftmaxGradOp::create(
      builder, getLoc(), getType(), cotangents[0], getResult(), getAxisAttr()));
  return success();
}

/// The cotangent of an attention's mask, composed of graph ops: the scores
/// S = q k^T * scale + mask (+ 0 or -inf under the causal mask), P =
/// softmax(S), dS = softmax_grad(dout v^T, P), summed down to the mask's
/// shape. It materializes [..., Tq, Tk] values, so autodiff keeps it only
/// where the mask depends on a parameter (a learned bias); otherwise it is
/// dead and erased with the other unused backward ops.
static Value buildAttentionMaskGrad(OpBuilder &builder, AttentionOp op,
                                    Value resultGrad) {
  Location loc = op.getLoc();
  RankedTensorType queryType = tensorTypeOf(op.getQuery());
  SmallVector<int64_t> scoreShape = getAttentionScoreShape(
      queryType.getShape(), tensorTypeOf(op.getKey()).getShape());
  auto scoreType =
      RankedTensorType::get(scoreShape, queryType.getElementType());
  auto broadcast = [&](Value value) -> Value {
    if (value.getType() == scoreType)
      return value;
    return BroadcastOp::create(builder, loc, scoreType, value);
  };
  Value scores = MatmulOp::create(builder, loc, scoreType, op.getQuery(),
                                  op.getKey(), /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/true);
  scores = MulOp::create(
      builder, loc, scores,
      buildSplat(builder, loc, scoreType, op.getEffectiveScale()));
  scores = AddOp::create(builder, loc, scores, broadcast(op.getMask()));
  if (op.getCausal()) {
    int64_t queries = scoreShape[scoreShape.size() - 2];
    int64_t keys = scoreShape.back();
    auto causalType =
        RankedTensorType::get({queries, keys}, queryType.getElementType());
    auto element = cast<FloatType>(queryType.getElementType());
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < queries; ++i)
      for (int64_t j = 0; j < keys; ++j)
        values.push_back(j <= i ? APFloat::getZero(element.getFloatSemantics())
                                : APFloat::getInf(element.getFloatSemantics(),
                                                  /*Negative=*/true));
    Value causal = ConstantOp::create(
        builder, loc, causalType, DenseElementsAttr::get(causalType, values));
    scores = AddOp::create(builder, loc, scores, broadcast(causal));
  }
  int64_t axis = static_cast<int64_t>(scoreShape.size()) - 1;
  Value probabilities = SoftmaxOp::create(builder, loc, scores, axis);
  Value probabilityGrad =
      MatmulOp::create(builder, loc, scoreType, resultGrad, op.getValue(),
                       /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  Value scoreGrad =
      SoftmaxGradOp::create(builder, loc, scoreType, probabilityGrad,
                            probabilities, builder.getI64IntegerAttr(axis));
  return buildSumToShape(builder, loc, scoreGrad, tensorTypeOf(op.getMask()));
}

LogicalResult AttentionOp::buildVJP(OpBuilder &builder,
                                    ArrayRef<Value> cotangents,
                                    SmallVectorImpl<Value> &operandCotangents) {
  auto grad = AttentionGradOp::create(
      builder, getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), cotangents[0], getQuery(), getKey(), getValue(),
      getResult(), getMask(), getCausalAttr(), getScaleAttr());
  operandCotangents.append(
      {grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  if (getMask())
    operandCotangents.push_back(
        buildAttentionMaskGrad(builder, *this, cotangents[0]));
  return success();
}

LogicalResult
CrossEntropyOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                         SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(CrossEntropyGradOp::create(
      builder, getLoc(), getLogits().getType(), cotangents[0], getLogits(),
      getTargets(), getLabelSmoothingAttr()));
  operandCotangents.push_back(Value()); // Integer targets.
  return success();
}
