//===- BuiltinsNorm.cpp - Normalization builtins --------------------------===//
//
// Part of Kiln. layer_norm, rms_norm, mse (rms_norm's reduction) and
// batch_norm with its buffers.
//
//===----------------------------------------------------------------------===//

#include "BuiltinSupport.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using namespace kiln::frontend::builtins;
using llvm::SMLoc;
using llvm::StringRef;

Result builtins::emitLayerNorm(ModelEmitter &emitter,
                               const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x"), g = args.floatTensor("gamma"),
                       b = args.floatTensor("beta");
  FailureOr<double> eps = args.number("eps", 1e-5);
  if (failed(x) || failed(g) || failed(b) || failed(eps))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*eps > 0.0))
    return emitter.error(args.getLoc("eps"), "layer_norm needs eps > 0");
  if (elementTypeOf(*x) != elementTypeOf(*g) ||
      elementTypeOf(*x) != elementTypeOf(*b))
    return shapeError(emitter, loc, "layer_norm",
                      "x, gamma and beta differ in element type",
                      {{"x", *x}, {"gamma", *g}, {"beta", *b}});
  std::string message;
  auto shape = graph::inferLayerNormShape(
      x->getTensorType().getShape(), g->getTensorType().getShape(),
      b->getTensorType().getShape(), message);
  if (failed(shape))
    return shapeError(emitter, loc, "layer_norm", message,
                      {{"x", *x}, {"gamma", *g}, {"beta", *b}});
  return tensorResult(emitOp<graph::LayerNormOp>(emitter, loc, x->tensor,
                                                 g->tensor, b->tensor, *eps),
                      loc);
}

/// The mean of `value * value` over `axes` (kept as size-1 dims with
/// `keepdims`): rms_norm's and mse's reduction.
static Result emitMeanOfSquares(ModelEmitter &emitter, SMLoc loc,
                                const EvalValue &value, ArrayRef<int64_t> axes,
                                bool keepdims) {
  FailureOr<EvalValue> squares =
      emitter.emitBinary(ast::BinaryOp::Mul, loc, value, value);
  if (failed(squares))
    return failure();
  std::string message;
  auto shape = graph::inferReduceShape(value.getTensorType().getShape(), axes,
                                       keepdims, message);
  if (failed(shape))
    return emitter.error(loc, message);
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(emitOp<graph::ReduceOp>(
                          emitter, loc,
                          tensorType(*shape, elementTypeOf(value)),
                          graph::ReduceKindAttr::get(&emitter.getContext(),
                                                     graph::ReduceKind::Mean),
                          squares->tensor, builder.getDenseI64ArrayAttr(axes),
                          keepdims ? builder.getUnitAttr() : UnitAttr()),
                      loc);
}

/// x * rsqrt(mean(x * x over the last dim) + eps) * gamma (LLaMA's RMSNorm),
/// composed of graph ops: the mean of squares is a reduction anchor that
/// computes the squares in its kernel, the scaling one fused kernel, and
/// autodiff differentiates the parts.
Result builtins::emitRmsNorm(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x"), g = args.floatTensor("gamma");
  FailureOr<double> eps = args.number("eps", 1e-6);
  if (failed(x) || failed(g) || failed(eps))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*eps > 0.0))
    return emitter.error(args.getLoc("eps"), "rms_norm needs eps > 0");
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  if (elementTypeOf(*x) != elementTypeOf(*g))
    return shapeError(emitter, loc, "rms_norm",
                      "x and gamma differ in element type",
                      {{"x", *x}, {"gamma", *g}});
  if (shape.empty() ||
      g->getTensorType().getShape() != ArrayRef<int64_t>(shape.back()))
    return shapeError(emitter, loc, "rms_norm",
                      "gamma must be a vector of x's last dim",
                      {{"x", *x}, {"gamma", *g}});
  Result meanSquare = emitMeanOfSquares(
      emitter, loc, *x, {static_cast<int64_t>(shape.size()) - 1},
      /*keepdims=*/true);
  if (failed(meanSquare))
    return failure();
  FailureOr<EvalValue> shifted = emitter.emitBinary(
      ast::BinaryOp::Add, loc, *meanSquare, EvalValue::ofFloat(*eps, loc));
  if (failed(shifted))
    return failure();
  Result inverse =
      tensorResult(emitOp<graph::RsqrtOp>(emitter, loc, shifted->tensor), loc);
  if (failed(inverse))
    return failure();
  FailureOr<EvalValue> normalized =
      emitter.emitBinary(ast::BinaryOp::Mul, loc, *x, *inverse);
  if (failed(normalized))
    return failure();
  return emitter.emitBinary(ast::BinaryOp::Mul, loc, *normalized, *g);
}

/// mean((a - b)^2) over every element: the mean squared error (PyTorch's
/// MSELoss with its default mean reduction), a scalar. a and b have one
/// shape (a broadcast is refused: it is usually a mistake).
Result builtins::emitMse(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> a = args.floatTensor("a"), b = args.floatTensor("b");
  if (failed(a) || failed(b))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (a->getTensorType() != b->getTensorType())
    return shapeError(emitter, loc, "mse",
                      "a and b must have one shape and element type",
                      {{"a", *a}, {"b", *b}});
  FailureOr<EvalValue> difference =
      emitter.emitBinary(ast::BinaryOp::Sub, loc, *a, *b);
  if (failed(difference))
    return failure();
  SmallVector<int64_t> every =
      llvm::to_vector(llvm::seq<int64_t>(0, a->getTensorType().getRank()));
  return emitMeanOfSquares(emitter, loc, *difference, every,
                           /*keepdims=*/false);
}

/// batch_norm(x, gamma, beta, mean, var, momentum=0.1, eps=1e-5): x is
/// [N, C, ...], the others [C]; mean and var are buffers. Training
/// normalizes by the batch's statistics over every axis but 1 (biased
/// variance) and moves the buffers toward them: mean' = (1 - m) mean +
/// m batch_mean, var' = (1 - m) var + m batch_var n / (n - 1) (PyTorch's
/// BatchNorm, unbiased in the running variance); eval_step and predict
/// normalize by the buffers. Composed of graph ops; graph.if_training picks.
Result builtins::emitBatchNorm(ModelEmitter &emitter,
                               const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x"), g = args.floatTensor("gamma"),
                       b = args.floatTensor("beta"),
                       mean = args.floatTensor("mean"),
                       var = args.floatTensor("var");
  FailureOr<double> momentum = args.number("momentum", 0.1);
  FailureOr<double> eps = args.number("eps", 1e-5);
  if (failed(x) || failed(g) || failed(b) || failed(mean) || failed(var) ||
      failed(momentum) || failed(eps))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*eps > 0.0))
    return emitter.error(args.getLoc("eps"), "batch_norm needs eps > 0");
  if (!(*momentum >= 0.0 && *momentum <= 1.0))
    return emitter.error(args.getLoc("momentum"),
                         "batch_norm needs momentum in [0, 1]");
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  SmallVector<std::pair<StringRef, EvalValue>> operands = {
      {"x", *x}, {"gamma", *g}, {"beta", *b}, {"mean", *mean}, {"var", *var}};
  if (shape.size() < 2)
    return shapeError(emitter, loc, "batch_norm",
                      "x must be [N, C, ...] (channels on axis 1)", operands);
  Type element = elementTypeOf(*x);
  for (const auto &[name, value] : ArrayRef(operands).drop_front())
    if (elementTypeOf(value) != element ||
        value.getTensorType().getShape() != ArrayRef<int64_t>(shape[1]))
      return shapeError(emitter, loc, "batch_norm",
                        (name + " must be a vector of x's channels (axis 1) "
                                "of x's element type")
                            .str(),
                        operands);
  SmallVector<int64_t> axes, kept(shape.size(), 1);
  int64_t count = 1;
  for (int64_t axis = 0, rank = shape.size(); axis < rank; ++axis)
    if (axis != 1) {
      axes.push_back(axis);
      count *= shape[axis];
    }
  kept[1] = shape[1];
  if (count < 2)
    return shapeError(emitter, loc, "batch_norm",
                      "a batch statistic needs at least 2 values per channel",
                      operands);

  OpBuilder &builder = emitter.getBuilder();
  auto mul = [&](const EvalValue &l, const EvalValue &r) {
    return emitter.emitBinary(ast::BinaryOp::Mul, loc, l, r);
  };
  auto add = [&](const EvalValue &l, const EvalValue &r) {
    return emitter.emitBinary(ast::BinaryOp::Add, loc, l, r);
  };
  auto sub = [&](const EvalValue &l, const EvalValue &r) {
    return emitter.emitBinary(ast::BinaryOp::Sub, loc, l, r);
  };
  auto reshape = [&](const EvalValue &v, ArrayRef<int64_t> to) -> Result {
    return tensorResult(emitOp<graph::ReshapeOp>(
                            emitter, loc, tensorType(to, element), v.tensor),
                        loc);
  };
  auto channelMean = [&](const EvalValue &v) -> Result {
    return tensorResult(emitOp<graph::ReduceOp>(
                            emitter, loc, tensorType(kept, element),
                            graph::ReduceKindAttr::get(&emitter.getContext(),
                                                       graph::ReduceKind::Mean),
                            v.tensor, builder.getDenseI64ArrayAttr(axes),
                            builder.getUnitAttr()),
                        loc);
  };
  auto normalize = [&](const EvalValue &centered,
                       const EvalValue &variance) -> Result {
    FailureOr<EvalValue> shifted = add(variance, EvalValue::ofFloat(*eps, loc));
    if (failed(shifted))
      return failure();
    Result inverse = tensorResult(
        emitOp<graph::RsqrtOp>(emitter, loc, shifted->tensor), loc);
    Result gain = reshape(*g, kept), bias = reshape(*b, kept);
    if (failed(inverse) || failed(gain) || failed(bias))
      return failure();
    FailureOr<EvalValue> scaled = mul(centered, *inverse);
    if (succeeded(scaled))
      scaled = mul(*scaled, *gain);
    if (failed(scaled))
      return failure();
    return add(*scaled, *bias);
  };

  // Training: the batch's statistics.
  Result batchMean = channelMean(*x);
  if (failed(batchMean))
    return failure();
  FailureOr<EvalValue> centered = sub(*x, *batchMean);
  if (failed(centered))
    return failure();
  FailureOr<EvalValue> squares = mul(*centered, *centered);
  if (failed(squares))
    return failure();
  Result batchVar = channelMean(*squares);
  if (failed(batchVar))
    return failure();
  Result trained = normalize(*centered, *batchVar);
  // Inference: the running statistics.
  Result runningMean = reshape(*mean, kept), runningVar = reshape(*var, kept);
  if (failed(trained) || failed(runningMean) || failed(runningVar))
    return failure();
  FailureOr<EvalValue> runningCentered = sub(*x, *runningMean);
  if (failed(runningCentered))
    return failure();
  Result inferred = normalize(*runningCentered, *runningVar);
  if (failed(inferred))
    return failure();
  Result y = tensorResult(emitOp<graph::IfTrainingOp>(
                              emitter, loc, trained->tensor, inferred->tensor),
                          loc);
  if (failed(y))
    return failure();

  // The buffers' next values.
  auto moved = [&](const EvalValue &running, const EvalValue &batch,
                   double scale) -> Result {
    Result flat = reshape(batch, {shape[1]});
    if (failed(flat))
      return failure();
    FailureOr<EvalValue> decayed =
        mul(running, EvalValue::ofFloat(1.0 - *momentum, loc));
    FailureOr<EvalValue> step =
        mul(*flat, EvalValue::ofFloat(*momentum * scale, loc));
    if (failed(decayed) || failed(step))
      return failure();
    return add(*decayed, *step);
  };
  Result nextMean = moved(*mean, *batchMean, 1.0);
  Result nextVar =
      moved(*var, *batchVar, static_cast<double>(count) / (count - 1.0));
  if (failed(nextMean) || failed(nextVar) ||
      failed(emitter.updateBuffer(*mean, nextMean->tensor, args.getLoc("mean"),
                                  "batch_norm's mean")) ||
      failed(emitter.updateBuffer(*var, nextVar->tensor, args.getLoc("var"),
                                  "batch_norm's var")))
    return failure();
  return y;
}
