//===- GraphVJPNN.cpp - VJPs of the neural-network ops --------------------===//
//
// Part of Kiln. DifferentiableOpInterface of embedding, layer_norm, softmax,
// attention and cross_entropy. Each builds its dedicated gradient op
// (GraphGradOps.td): one fused op per backward, where a composition of
// forward ops would store or recompute more and round more often.
//
//===----------------------------------------------------------------------===//

#include "GraphVJPUtils.h"

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

LogicalResult AttentionOp::buildVJP(OpBuilder &builder,
                                    ArrayRef<Value> cotangents,
                                    SmallVectorImpl<Value> &operandCotangents) {
  auto grad = AttentionGradOp::create(
      builder, getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), cotangents[0], getQuery(), getKey(), getValue(),
      getResult(), getCausalAttr(), getScaleAttr());
  operandCotangents.append(
      {grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
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
