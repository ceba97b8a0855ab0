//===- BuiltinsNN.cpp - Neural-network builtins ---------------------------===//
//
// Part of Kiln. embed, softmax, cross_entropy, dropout, cast, argmax,
// one_hot and arange (normalization: BuiltinsNorm.cpp; attention and rotary:
// BuiltinsAttention.cpp).
//
//===----------------------------------------------------------------------===//

#include "BuiltinSupport.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using namespace kiln::frontend::builtins;
using llvm::SMLoc;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

Result builtins::emitEmbed(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> table = args.floatTensor("table"),
                       ids = args.tensor("ids");
  if (failed(table) || failed(ids))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!elementTypeOf(*ids).isInteger(32) && !elementTypeOf(*ids).isInteger(64))
    return shapeError(emitter, args.getLoc("ids"), "embed",
                      "ids must be i32 or i64, got " + ids->describe(),
                      {{"ids", *ids}});
  std::string message;
  auto shape =
      graph::inferEmbeddingShape(table->getTensorType().getShape(),
                                 ids->getTensorType().getShape(), message);
  if (failed(shape))
    return shapeError(emitter, loc, "embed", message,
                      {{"table", *table}, {"ids", *ids}});
  return tensorResult(
      emitOp<graph::EmbeddingOp>(emitter, loc,
                                 tensorType(*shape, elementTypeOf(*table)),
                                 table->tensor, ids->tensor),
      loc);
}

Result builtins::emitSoftmax(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  FailureOr<int64_t> axis =
      userAxis(emitter, args, "axis", -1, x->getTensorType().getRank());
  if (failed(axis))
    return failure();
  return tensorResult(
      emitOp<graph::SoftmaxOp>(emitter, args.getCallLoc(), x->tensor, *axis),
      args.getCallLoc());
}

Result builtins::emitCrossEntropy(ModelEmitter &emitter,
                                  const CallArguments &args) {
  FailureOr<EvalValue> logits = args.floatTensor("logits"),
                       targets = args.tensor("targets");
  FailureOr<double> smoothing = args.number("label_smoothing", 0.0);
  if (failed(logits) || failed(targets) || failed(smoothing))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*smoothing >= 0.0 && *smoothing < 1.0))
    return emitter.error(args.getLoc("label_smoothing"),
                         "label_smoothing must be in [0, 1)");
  Type targetType = elementTypeOf(*targets);
  if (!targetType.isInteger(32) && !targetType.isInteger(64))
    return shapeError(emitter, args.getLoc("targets"), "cross_entropy",
                      "targets must be class indices (i32 or i64), got " +
                          targets->describe(),
                      {{"targets", *targets}});
  std::string message;
  auto shape = graph::inferCrossEntropyShape(
      logits->getTensorType().getShape(), targets->getTensorType().getShape(),
      message);
  if (failed(shape))
    return shapeError(emitter, loc, "cross_entropy", message,
                      {{"logits", *logits}, {"targets", *targets}});
  return tensorResult(emitOp<graph::CrossEntropyOp>(
                          emitter, loc, tensorType({}, elementTypeOf(*logits)),
                          logits->tensor, targets->tensor,
                          emitter.getBuilder().getF64FloatAttr(*smoothing)),
                      loc);
}

Result builtins::emitDropout(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  FailureOr<double> rate = args.number("rate", 0.1);
  if (failed(x) || failed(rate))
    return failure();
  if (!(*rate >= 0.0 && *rate < 1.0))
    return emitter.error(args.getLoc("rate"), "dropout rate must be in [0, 1)");
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(
      emitOp<graph::DropoutOp>(
          emitter, args.getCallLoc(), x->getTensorType(), x->tensor,
          builder.getF64FloatAttr(*rate),
          builder.getI64IntegerAttr(emitter.nextDropoutStream())),
      args.getCallLoc());
}

Result builtins::emitCast(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  FailureOr<StringRef> name = args.word("type");
  if (failed(x) || failed(name))
    return failure();
  std::optional<ast::ElementType> element = ast::parseElementTypeName(*name);
  if (!element)
    return emitter.error(args.getLoc("type"),
                         "unknown element type '" + *name + "'" +
                             didYouMean(*name, ast::getElementTypeNames()));
  OpBuilder &builder = emitter.getBuilder();
  Type type;
  switch (*element) {
  case ast::ElementType::F32:
    type = builder.getF32Type();
    break;
  case ast::ElementType::F64:
    type = builder.getF64Type();
    break;
  case ast::ElementType::F16:
    type = builder.getF16Type();
    break;
  case ast::ElementType::BF16:
    type = builder.getBF16Type();
    break;
  case ast::ElementType::I32:
    type = builder.getI32Type();
    break;
  case ast::ElementType::I64:
    type = builder.getI64Type();
    break;
  case ast::ElementType::I1:
    type = builder.getI1Type();
    break;
  }
  if (type == elementTypeOf(*x))
    return *x;
  return tensorResult(
      emitOp<graph::CastOp>(emitter, args.getCallLoc(),
                            tensorType(x->getTensorType().getShape(), type),
                            x->tensor),
      args.getCallLoc());
}

/// argmax(x, axis=-1): the first index of the largest element along the
/// axis (a NaN counts as the largest), as i32; the axis is dropped.
Result builtins::emitArgmax(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  FailureOr<int64_t> axis =
      userAxis(emitter, args, "axis", -1, static_cast<int64_t>(shape.size()));
  if (failed(axis))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (shape[*axis] == 0)
    return shapeError(emitter, loc, "argmax",
                      "axis " + std::to_string(*axis) +
                          " is empty: no largest element",
                      {{"x", *x}});
  SmallVector<int64_t> result(shape);
  result.erase(result.begin() + *axis);
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(
      emitOp<graph::ArgmaxOp>(emitter, loc,
                              tensorType(result, builder.getI32Type()),
                              x->tensor, builder.getI64IntegerAttr(*axis)),
      loc);
}

/// one_hot(ids, classes): f32 rows of the identity, ids.shape + [classes];
/// an id outside [0, classes) gives zeros (JAX's one_hot).
Result builtins::emitOneHot(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> ids = args.tensor("ids");
  FailureOr<int64_t> classes = args.integer("classes");
  if (failed(ids) || failed(classes))
    return failure();
  if (!elementTypeOf(*ids).isInteger(32) && !elementTypeOf(*ids).isInteger(64))
    return shapeError(emitter, args.getLoc("ids"), "one_hot",
                      "ids must be i32 or i64, got " + ids->describe(),
                      {{"ids", *ids}});
  if (*classes < 1)
    return emitter.error(args.getLoc("classes"),
                         "one_hot needs at least one class, got " +
                             std::to_string(*classes));
  SMLoc loc = args.getCallLoc();
  SmallVector<int64_t> shape(ids->getTensorType().getShape());
  shape.push_back(*classes);
  return tensorResult(emitOp<graph::OneHotOp>(
                          emitter, loc,
                          tensorType(shape, emitter.getBuilder().getF32Type()),
                          ids->tensor),
                      loc);
}

/// arange(n): the i32 vector 0, 1, ..., n - 1 (a constant; cast it for
/// floats: cast(arange(T), f32)).
Result builtins::emitArange(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<int64_t> n = args.integer("n");
  if (failed(n))
    return failure();
  if (*n < 1 || *n > std::numeric_limits<int32_t>::max())
    return emitter.error(args.getLoc("n"), "arange needs 1 <= n < 2^31, got " +
                                               std::to_string(*n));
  SmallVector<int32_t> values(*n);
  for (int64_t i = 0; i < *n; ++i)
    values[i] = static_cast<int32_t>(i);
  auto type = tensorType({*n}, emitter.getBuilder().getI32Type());
  SMLoc loc = args.getCallLoc();
  return tensorResult(
      emitOp<graph::ConstantOp>(
          emitter, loc,
          DenseElementsAttr::get(type, ArrayRef<int32_t>(values))),
      loc);
}
