//===- GraphOps.cpp - Verifiers of the graph ops --------------------------===//
//
// Part of Kiln. Each verifier checks the op's result types against the shape
// rules of GraphShapes.h and the op's element-type rules. Operand kinds (float
// tensor, integer ids, static shapes) are already checked by the ODS type
// constraints before these run.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "GraphVerifierUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;
using namespace kiln::graph::verifier;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Reports a failed shape rule, or checks `result`'s shape against the
/// inferred one.
static LogicalResult verifyInferredShape(Operation *op, ShapeOrError inferred,
                                         const std::string &error, Value result,
                                         StringRef resultName = "result") {
  return verifyShape(op, inferred, error, shapeOf(result), resultName);
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  // The value's type equals the result's by AllTypesMatch; what remains is
  // the element type: graph tensors hold floats or integers.
  Type elementType = getType().getElementType();
  if (!isa<FloatType, IntegerType>(elementType))
    return emitOpError() << "element type must be a float or an integer, got "
                         << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// A product's element types and shapes, for graph.matmul and
/// graph.matmul_epilogue.
template <typename OpTy> static LogicalResult verifyProduct(OpTy op) {
  if (failed(verifySameElementType(op,
                                   {op.getLhs(), op.getRhs(), op.getResult()},
                                   {"lhs", "rhs", "result"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferMatmulShape(shapeOf(op.getLhs()), shapeOf(op.getRhs()),
                       op.getTransposeLhs(), op.getTransposeRhs(), error);
  return verifyInferredShape(op, inferred, error, op.getResult());
}

LogicalResult MatmulOp::verify() { return verifyProduct(*this); }

LogicalResult MatmulEpilogueOp::verify() {
  if (failed(verifyProduct(*this)))
    return failure();
  GemmEpilogue epilogue = getEpilogue();
  StringRef name = stringifyGemmEpilogue(epilogue);
  RankedTensorType result = getResult().getType();
  int64_t n = result.getShape().back();
  auto vectorOfN = RankedTensorType::get({n}, result.getElementType());
  bool takesBias =
      epilogue == GemmEpilogue::Bias || epilogue == GemmEpilogue::BiasGelu;
  if (takesBias != bool(getBias()))
    return emitOpError() << "epilogue " << name
                         << (takesBias ? " needs" : " takes no") << " bias";
  if (getBias() && getBias().getType() != vectorOfN)
    return emitOpError() << "bias must be " << vectorOfN << ", got "
                         << getBias().getType();
  bool takesAux = epilogue == GemmEpilogue::DGelu;
  if (takesAux != bool(getAux()))
    return emitOpError() << "epilogue " << name
                         << (takesAux ? " needs" : " takes no")
                         << " aux (the forward's pre-activation)";
  if (getAux() && getAux().getType() != result)
    return emitOpError() << "aux must have the result's type " << result
                         << ", got " << getAux().getType();
  bool hasSecond =
      epilogue == GemmEpilogue::BiasGelu || epilogue == GemmEpilogue::BiasGrad;
  if (hasSecond != bool(getSecond()))
    return emitOpError() << "epilogue " << name
                         << (hasSecond ? " has" : " has no")
                         << " second result";
  if (epilogue == GemmEpilogue::BiasGelu && getSecond().getType() != result)
    return emitOpError() << "the pre-activation must have the result's type "
                         << result << ", got " << getSecond().getType();
  if (epilogue == GemmEpilogue::BiasGrad) {
    RankedTensorType rhs = getRhs().getType();
    if (rhs.getRank() != 2 || getTransposeRhs() || result.getRank() != 2)
      return emitOpError() << "bias_grad sums the rows of a rank-2 rhs that "
                              "is not transposed, into a rank-2 product";
    if (getSecond().getType() != vectorOfN)
      return emitOpError() << "the bias gradient must be " << vectorOfN
                           << ", got " << getSecond().getType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()},
                                   {"input", "result"})))
    return failure();
  std::string error;
  if (failed(
          checkBroadcastTo(shapeOf(getInput()), shapeOf(getResult()), error)))
    return emitOpError(error);
  return success();
}

LogicalResult ReduceOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()},
                                   {"input", "result"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferReduceShape(shapeOf(getInput()), getAxes(), getKeepdims(), error);
  return verifyInferredShape(*this, inferred, error, getResult());
}

LogicalResult ReshapeOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()},
                                   {"input", "result"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferReshapeShape(shapeOf(getInput()), shapeOf(getResult()), error);
  return verifyInferredShape(*this, inferred, error, getResult());
}

LogicalResult TransposeOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()},
                                   {"input", "result"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferTransposeShape(shapeOf(getInput()), getPerm(), error);
  return verifyInferredShape(*this, inferred, error, getResult());
}

LogicalResult SliceOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()},
                                   {"input", "result"})))
    return failure();
  std::string error;
  if (failed(checkSlice(shapeOf(getInput()), getOffsets(), shapeOf(getResult()),
                        error)))
    return emitOpError(error);
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("concat needs at least one input");
  SmallVector<Value> values(getInputs());
  values.push_back(getResult());
  SmallVector<std::string> names;
  for (size_t i = 0; i < getInputs().size(); ++i)
    names.push_back("input " + std::to_string(i));
  names.push_back("result");
  SmallVector<StringRef> nameRefs(names.begin(), names.end());
  if (failed(verifySameElementType(*this, values, nameRefs)))
    return failure();
  SmallVector<SmallVector<int64_t>> shapes;
  for (Value input : getInputs())
    shapes.emplace_back(shapeOf(input));
  std::string error;
  ShapeOrError inferred =
      inferConcatShape(shapes, getAxisAttr().getInt(), error);
  return verifyInferredShape(*this, inferred, error, getResult());
}

LogicalResult SplitOp::verify() {
  if (getResults().empty())
    return emitOpError("split needs at least one result");
  ArrayRef<int64_t> input = shapeOf(getInput());
  int64_t axis = getAxisAttr().getInt();
  SmallVector<int64_t> sizes;
  for (auto [index, result] : llvm::enumerate(getResults())) {
    if (elementTypeOf(result) != elementTypeOf(getInput()))
      return emitOpError() << "result " << index << " element type "
                           << elementTypeOf(result)
                           << " differs from input element type "
                           << elementTypeOf(getInput());
    ArrayRef<int64_t> shape = shapeOf(result);
    if (shape.size() != input.size())
      return emitOpError() << "result " << index << " has rank " << shape.size()
                           << ", but the input " << formatShape(input)
                           << " has rank " << input.size();
    // An out-of-range axis is reported by inferSplitShapes below.
    sizes.push_back(axis >= 0 && axis < static_cast<int64_t>(shape.size())
                        ? shape[axis]
                        : 0);
  }
  std::string error;
  auto inferred = inferSplitShapes(input, sizes, axis, error);
  if (failed(inferred))
    return emitOpError(error);
  for (auto [index, result] : llvm::enumerate(getResults()))
    if (failed(verifyInferredShape(*this, (*inferred)[index], error, result,
                                   "result " + std::to_string(index))))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(verifySameElementType(*this, {getTable(), getResult()},
                                   {"table", "result"})))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferEmbeddingShape(shapeOf(getTable()), shapeOf(getIds()), error);
  return verifyInferredShape(*this, inferred, error, getResult());
}

LogicalResult ArgmaxOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return emitOpError() << "axis " << axis << " is outside [0, "
                         << shape.size() << ") for a rank-" << shape.size()
                         << " input";
  if (shape[axis] == 0)
    return emitOpError() << "axis " << axis << " is empty: no largest element";
  SmallVector<int64_t> expected(shape);
  expected.erase(expected.begin() + axis);
  if (shapeOf(getResult()) != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape must be the input's without axis "
                         << axis;
  return success();
}

LogicalResult OneHotOp::verify() {
  ArrayRef<int64_t> ids = shapeOf(getIds()), result = shapeOf(getResult());
  if (result.size() != ids.size() + 1 || result.drop_back() != ids)
    return emitOpError() << "result shape must be the ids' shape plus a "
                            "classes dim";
  if (result.back() < 1)
    return emitOpError() << "needs at least one class";
  return success();
}

LogicalResult LayerNormOp::verify() {
  // input/result and gamma/beta types match by AllTypesMatch.
  return verifyLayerNorm(*this, getInput(), getGamma(), getBeta(), getEps());
}

LogicalResult SoftmaxOp::verify() {
  std::string error;
  if (failed(inferSoftmaxShape(shapeOf(getInput()), getAxisAttr().getInt(),
                               error)))
    return emitOpError(error);
  return success();
}

double AttentionOp::getEffectiveScale() {
  return getEffectiveAttentionScale(getScaleAttr(), shapeOf(getQuery()));
}

LogicalResult AttentionOp::verify() {
  if (failed(verifySameElementType(
          *this, {getQuery(), getKey(), getValue(), getResult()},
          {"query", "key", "value", "result"})))
    return failure();
  if (failed(verifyAttentionScale(*this, getScaleAttr())))
    return failure();
  std::string error;
  ShapeOrError inferred =
      inferAttentionShape(shapeOf(getQuery()), shapeOf(getKey()),
                          shapeOf(getValue()), getCausal(), error);
  if (failed(verifyInferredShape(*this, inferred, error, getResult())))
    return failure();
  return verifyAttentionMask(*this, getQuery(), getKey(), getMask());
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifySameElementType(*this, {getLogits(), getResult()},
                                   {"logits", "result"})))
    return failure();
  double smoothing = getLabelSmoothing().convertToDouble();
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return emitOpError() << "label_smoothing must be in [0, 1], got "
                         << smoothing;
  std::string error;
  ShapeOrError inferred = inferCrossEntropyShape(shapeOf(getLogits()),
                                                 shapeOf(getTargets()), error);
  return verifyInferredShape(*this, inferred, error, getResult());
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError() << "rate must be in [0, 1), got " << rate;
  // I64Attr's accessor is unsigned: read the signed value from the attribute.
  int64_t stream = getStreamAttr().getInt();
  if (stream < 0)
    return emitOpError() << "stream must be non-negative, got " << stream;
  return success();
}

LogicalResult CastOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (input != result)
    return emitOpError() << "cast keeps the shape: input " << formatShape(input)
                         << ", result " << formatShape(result);
  for (auto [value, name] :
       {std::pair(getInput(), "input"), std::pair(getResult(), "result")}) {
    Type elementType = elementTypeOf(value);
    if (!isa<FloatType, IntegerType>(elementType))
      return emitOpError() << name
                           << " element type must be a float or an integer, "
                              "got "
                           << elementType;
  }
  return success();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/Graph/IR/GraphInterfaces.cpp.inc"
#include "kiln/Dialect/Graph/IR/GraphOps.cpp.inc"
