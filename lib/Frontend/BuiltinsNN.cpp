//===- BuiltinsNN.cpp - Neural-network builtins ---------------------------===//
//
// Part of Kiln. embed, layer_norm, rms_norm, rotary, softmax, attention,
// cross_entropy, mse, dropout and cast.
//
//===----------------------------------------------------------------------===//

#include "BuiltinSupport.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
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

/// A constant of `type` from values computed in double, each rounded once
/// to the element type (nearest, ties to even).
static Result emitFloatConstant(ModelEmitter &emitter, SMLoc loc,
                                RankedTensorType type,
                                ArrayRef<double> values) {
  const llvm::fltSemantics &semantics =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> rounded;
  rounded.reserve(values.size());
  for (double value : values) {
    APFloat element(value);
    bool losesInfo = false;
    element.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
    rounded.push_back(element);
  }
  return tensorResult(emitOp<graph::ConstantOp>(
                          emitter, loc, DenseElementsAttr::get(type, rounded)),
                      loc);
}

/// rotary(x, base=10000): the rotary position embedding (RoFormer) in the
/// half-split layout of GPT-NeoX and Hugging Face's LLaMA. x is [..., T, Dh]
/// with positions 0..T-1 along its second-to-last axis and an even Dh;
/// feature i < Dh/2 turns with feature i + Dh/2 by the angle
/// t * base^(-2i/Dh):
///   y1 = x1 cos - x2 sin,  y2 = x2 cos + x1 sin.
/// The cos/sin tables are constants computed in double and rounded once;
/// the rotation is composed of graph ops (slices, one fused elementwise
/// kernel per half, a concat), so autodiff differentiates the parts.
Result builtins::emitRotary(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  FailureOr<double> base = args.number("base", 10000.0);
  if (failed(x) || failed(base))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*base > 0.0))
    return emitter.error(args.getLoc("base"), "rotary needs base > 0");
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  if (shape.size() < 2 || shape.back() % 2 != 0)
    return shapeError(emitter, loc, "rotary",
                      "x must be [..., T, Dh] with an even Dh (positions "
                      "along the second-to-last axis)",
                      {{"x", *x}});
  int64_t length = shape[shape.size() - 2], half = shape.back() / 2;
  SmallVector<double> cosines(length * half), sines(length * half);
  for (int64_t t = 0; t < length; ++t)
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(t) *
                     std::pow(*base, -2.0 * static_cast<double>(i) /
                                         static_cast<double>(shape.back()));
      cosines[t * half + i] = std::cos(angle);
      sines[t * half + i] = std::sin(angle);
    }
  Type element = elementTypeOf(*x);
  RankedTensorType tableType = tensorType({length, half}, element);
  Result cosine = emitFloatConstant(emitter, loc, tableType, cosines);
  Result sine = emitFloatConstant(emitter, loc, tableType, sines);
  if (failed(cosine) || failed(sine))
    return failure();

  int64_t axis = static_cast<int64_t>(shape.size()) - 1;
  SmallVector<int64_t> halfShape(shape);
  halfShape.back() = half;
  auto sliceAt = [&](int64_t start) -> Result {
    SmallVector<int64_t> offsets(shape.size(), 0);
    offsets.back() = start;
    return tensorResult(emitOp<graph::SliceOp>(
                            emitter, loc, tensorType(halfShape, element),
                            x->tensor,
                            emitter.getBuilder().getDenseI64ArrayAttr(offsets)),
                        loc);
  };
  Result first = sliceAt(0), second = sliceAt(half);
  if (failed(first) || failed(second))
    return failure();
  // a * c op b * s, for each half.
  auto turn = [&](const EvalValue &a, ast::BinaryOp op,
                  const EvalValue &b) -> Result {
    FailureOr<EvalValue> ac =
        emitter.emitBinary(ast::BinaryOp::Mul, loc, a, *cosine);
    FailureOr<EvalValue> bs =
        emitter.emitBinary(ast::BinaryOp::Mul, loc, b, *sine);
    if (failed(ac) || failed(bs))
      return failure();
    return emitter.emitBinary(op, loc, *ac, *bs);
  };
  Result turnedFirst = turn(*first, ast::BinaryOp::Sub, *second);
  Result turnedSecond = turn(*second, ast::BinaryOp::Add, *first);
  if (failed(turnedFirst) || failed(turnedSecond))
    return failure();
  return tensorResult(emitOp<graph::ConcatOp>(
                          emitter, loc, x->getTensorType(),
                          ValueRange{turnedFirst->tensor, turnedSecond->tensor},
                          emitter.getBuilder().getI64IntegerAttr(axis)),
                      loc);
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

/// attention with `mask` (additive, broadcast to the scores [..., Tq, Tk])
/// or `key_padding` ([B, Tk], nonzero where a key may be attended to):
/// composed of graph ops -- the scores q k^T * scale, the masks (a masked
/// score is -inf), softmax, the product with v. Not the fused kernels: the
/// scores and probabilities are materialized ([..., Tq, Tk] each).
static Result emitMaskedAttention(ModelEmitter &emitter,
                                  const CallArguments &args, const EvalValue &q,
                                  const EvalValue &k, const EvalValue &v,
                                  bool causal, double scale,
                                  ArrayRef<int64_t> resultShape) {
  SMLoc loc = args.getCallLoc();
  Type element = elementTypeOf(q);
  ArrayRef<int64_t> queryShape = q.getTensorType().getShape();
  ArrayRef<int64_t> keyShape = k.getTensorType().getShape();
  SmallVector<int64_t> scoreShape(queryShape.drop_back());
  scoreShape.push_back(keyShape[keyShape.size() - 2]);
  int64_t rank = scoreShape.size();
  int64_t queries = scoreShape[rank - 2], keys = scoreShape[rank - 1];
  RankedTensorType scoreType = tensorType(scoreShape, element);
  OpBuilder &builder = emitter.getBuilder();
  Location at = emitter.getLoc(loc);

  Result scores = tensorResult(
      emitOp<graph::MatmulOp>(emitter, loc, scoreType, q.tensor, k.tensor,
                              /*transpose_lhs=*/false, /*transpose_rhs=*/true),
      loc);
  if (succeeded(scores))
    scores = emitter.emitBinary(ast::BinaryOp::Mul, loc, *scores,
                                EvalValue::ofFloat(scale, loc));
  if (failed(scores))
    return failure();
  if (args.has("mask")) {
    FailureOr<EvalValue> mask = args.floatTensor("mask");
    if (failed(mask))
      return failure();
    std::string message;
    auto joined = graph::inferBroadcastShape(mask->getTensorType().getShape(),
                                             scoreShape, message);
    if (elementTypeOf(*mask) != element || failed(joined) ||
        *joined != scoreShape)
      return shapeError(emitter, args.getLoc("mask"), "attention",
                        "mask must broadcast to the scores " +
                            describeTensorType(scoreType) +
                            " and have q's element type",
                        {{"mask", *mask}});
    scores = emitter.emitBinary(ast::BinaryOp::Add, loc, *scores, *mask);
    if (failed(scores))
      return failure();
  }
  // Where `allowed` (a 1/0 mask that broadcasts to the scores) is 0, the
  // score becomes -inf.
  auto block = [&](const EvalValue &allowed) -> LogicalResult {
    FailureOr<EvalValue> blocked = emitter.materializeScalar(
        EvalValue::ofFloat(-std::numeric_limits<double>::infinity(), loc),
        scoreType, loc);
    if (failed(blocked) || failed(emitter.countOp(loc)))
      return failure();
    scores = EvalValue::ofTensor(
        graph::SelectOp::create(
            builder, at, emitter.broadcastTo(allowed.tensor, scoreShape, at),
            scores->tensor, blocked->tensor),
        loc);
    return success();
  };
  if (causal) {
    SmallVector<double> rows, columns;
    for (int64_t i = 0; i < queries; ++i)
      rows.push_back(static_cast<double>(i));
    for (int64_t j = 0; j < keys; ++j)
      columns.push_back(static_cast<double>(j));
    Result row = emitFloatConstant(emitter, loc,
                                   tensorType({queries, 1}, element), rows);
    Result column = emitFloatConstant(emitter, loc,
                                      tensorType({1, keys}, element), columns);
    if (failed(row) || failed(column))
      return failure();
    FailureOr<EvalValue> allowed =
        emitter.emitBinary(ast::BinaryOp::GreaterEqual, loc, *row, *column);
    if (failed(allowed) || failed(block(*allowed)))
      return failure();
  }
  if (args.has("key_padding")) {
    FailureOr<EvalValue> padding = args.floatTensor("key_padding");
    if (failed(padding))
      return failure();
    ArrayRef<int64_t> paddingShape = padding->getTensorType().getShape();
    if (rank < 3 || elementTypeOf(*padding) != element ||
        paddingShape != ArrayRef<int64_t>({scoreShape[0], keys}))
      return shapeError(
          emitter, args.getLoc("key_padding"), "attention",
          llvm::formatv("key_padding must be [{0}, {1}] (batch, keys) of q's "
                        "element type, for scores {2}",
                        scoreShape[0], keys, describeTensorType(scoreType))
              .str(),
          {{"key_padding", *padding}});
    SmallVector<int64_t> spread(rank, 1);
    spread.front() = scoreShape[0];
    spread.back() = keys;
    Result reshaped = tensorResult(
        emitOp<graph::ReshapeOp>(emitter, loc, tensorType(spread, element),
                                 padding->tensor),
        loc);
    if (failed(reshaped))
      return failure();
    FailureOr<EvalValue> allowed = emitter.emitBinary(
        ast::BinaryOp::NotEqual, loc, *reshaped, EvalValue::ofFloat(0.0, loc));
    if (failed(allowed) || failed(block(*allowed)))
      return failure();
  }
  Result probabilities = tensorResult(
      emitOp<graph::SoftmaxOp>(emitter, loc, scores->tensor, rank - 1), loc);
  if (failed(probabilities))
    return failure();
  return tensorResult(emitOp<graph::MatmulOp>(emitter, loc,
                                              tensorType(resultShape, element),
                                              probabilities->tensor, v.tensor,
                                              /*transpose_lhs=*/false,
                                              /*transpose_rhs=*/false),
                      loc);
}

Result builtins::emitAttention(ModelEmitter &emitter,
                               const CallArguments &args) {
  FailureOr<EvalValue> q = args.floatTensor("q"), k = args.floatTensor("k"),
                       v = args.floatTensor("v");
  FailureOr<bool> causal = args.boolean("causal", false);
  if (failed(q) || failed(k) || failed(v) || failed(causal))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (elementTypeOf(*q) != elementTypeOf(*k) ||
      elementTypeOf(*q) != elementTypeOf(*v))
    return shapeError(emitter, loc, "attention",
                      "q, k and v differ in element type",
                      {{"q", *q}, {"k", *k}, {"v", *v}});
  std::string message;
  auto shape = graph::inferAttentionShape(
      q->getTensorType().getShape(), k->getTensorType().getShape(),
      v->getTensorType().getShape(), *causal, message);
  if (failed(shape))
    return shapeError(emitter, loc, "attention", message,
                      {{"q", *q}, {"k", *k}, {"v", *v}});
  OpBuilder &builder = emitter.getBuilder();
  FloatAttr scale;
  if (args.has("scale")) {
    FailureOr<double> value = args.number("scale");
    if (failed(value))
      return failure();
    scale = builder.getF64FloatAttr(*value);
  }
  if (args.has("mask") || args.has("key_padding"))
    return emitMaskedAttention(
        emitter, args, *q, *k, *v, *causal,
        scale ? scale.getValueAsDouble()
              : 1.0 / std::sqrt(static_cast<double>(
                          q->getTensorType().getShape().back())),
        *shape);
  return tensorResult(emitOp<graph::AttentionOp>(
                          emitter, loc, tensorType(*shape, elementTypeOf(*q)),
                          q->tensor, k->tensor, v->tensor,
                          *causal ? builder.getUnitAttr() : UnitAttr(), scale),
                      loc);
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
