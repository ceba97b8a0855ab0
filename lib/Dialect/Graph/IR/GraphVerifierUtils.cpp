//===- GraphVerifierUtils.cpp - Helpers of the op verifiers ----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GraphVerifierUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;
using namespace kiln::graph::verifier;

LogicalResult verifier::verifySameElementType(Operation *op,
                                              ArrayRef<Value> values,
                                              ArrayRef<StringRef> names) {
  Type expected = elementTypeOf(values.front());
  for (auto [value, name] : llvm::zip(values.drop_front(), names.drop_front()))
    if (elementTypeOf(value) != expected)
      return op->emitOpError() << name << " element type "
                               << elementTypeOf(value) << " differs from "
                               << names.front() << " element type " << expected;
  return success();
}

LogicalResult verifier::verifyShape(Operation *op, ShapeOrError inferred,
                                    const std::string &error,
                                    ArrayRef<int64_t> actual, StringRef name) {
  if (failed(inferred))
    return op->emitOpError(error);
  if (actual != ArrayRef<int64_t>(*inferred))
    return op->emitOpError()
           << name << " shape " << formatShape(actual)
           << " does not match the inferred shape " << formatShape(*inferred);
  return success();
}

LogicalResult verifier::verifyLayerNorm(Operation *op, Value input, Value gamma,
                                        Value beta, llvm::APFloat eps) {
  if (failed(verifySameElementType(op, {input, gamma}, {"input", "gamma"})))
    return failure();
  double epsilon = eps.convertToDouble();
  if (!(epsilon >= 0.0) || !std::isfinite(epsilon))
    return op->emitOpError()
           << "eps must be finite and non-negative, got " << epsilon;
  std::string error;
  if (failed(inferLayerNormShape(shapeOf(input), shapeOf(gamma), shapeOf(beta),
                                 error)))
    return op->emitOpError(error);
  return success();
}

LogicalResult verifier::verifyAttentionScale(Operation *op, FloatAttr scale) {
  if (!scale)
    return success();
  double value = scale.getValueAsDouble();
  if (!(value > 0.0) || !std::isfinite(value))
    return op->emitOpError() << "scale must be finite and positive, got "
                             << value;
  return success();
}

LogicalResult verifier::verifyAttentionMask(Operation *op, Value query,
                                            Value key, Value mask) {
  if (!mask)
    return success();
  if (failed(verifySameElementType(op, {query, mask}, {"query", "mask"})))
    return failure();
  std::string error;
  if (failed(getAttentionMaskLayout(
          shapeOf(mask), getAttentionScoreShape(shapeOf(query), shapeOf(key)),
          error)))
    return op->emitOpError(error);
  return success();
}

double verifier::getEffectiveAttentionScale(FloatAttr scale,
                                            ArrayRef<int64_t> queryShape) {
  if (scale)
    return scale.getValueAsDouble();
  return 1.0 / std::sqrt(static_cast<double>(queryShape.back()));
}
