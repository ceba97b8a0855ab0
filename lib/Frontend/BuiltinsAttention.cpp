//===- BuiltinsAttention.cpp - Attention builtins -------------------------===//
//
// Part of Kiln. attention (with its additive mask, built from `mask` and
// `key_padding`) and rotary position embeddings.
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

/// The additive mask of an attention with `mask` (additive, broadcast to
/// the scores [..., Tq, Tk]) and/or `key_padding` ([B, Tk], nonzero where a
/// key may be attended to, which becomes 0 or -inf at [B, 1, .., 1, Tk]):
/// their sum, broadcast further only where its leading dims would not be
/// one contiguous run of the scores' (graph::getAttentionMaskLayout), so
/// that the kernels read it in place.
static Result emitAttentionMask(ModelEmitter &emitter,
                                const CallArguments &args, const EvalValue &q,
                                const EvalValue &k) {
  SMLoc loc = args.getCallLoc();
  Type element = elementTypeOf(q);
  SmallVector<int64_t> scoreShape = graph::getAttentionScoreShape(
      q.getTensorType().getShape(), k.getTensorType().getShape());
  int64_t rank = scoreShape.size();
  int64_t keys = scoreShape[rank - 1];
  RankedTensorType scoreType = tensorType(scoreShape, element);
  OpBuilder &builder = emitter.getBuilder();
  Location at = emitter.getLoc(loc);

  std::optional<EvalValue> combined;
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
    combined = *mask;
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
    RankedTensorType spreadType = tensorType(spread, element);
    Result reshaped = tensorResult(
        emitOp<graph::ReshapeOp>(emitter, loc, spreadType, padding->tensor),
        loc);
    if (failed(reshaped))
      return failure();
    FailureOr<EvalValue> allowed = emitter.emitBinary(
        ast::BinaryOp::NotEqual, loc, *reshaped, EvalValue::ofFloat(0.0, loc));
    FailureOr<EvalValue> open = emitter.materializeScalar(
        EvalValue::ofFloat(0.0, loc), spreadType, loc);
    FailureOr<EvalValue> blocked = emitter.materializeScalar(
        EvalValue::ofFloat(-std::numeric_limits<double>::infinity(), loc),
        spreadType, loc);
    if (failed(allowed) || failed(open) || failed(blocked) ||
        failed(emitter.countOp(loc)))
      return failure();
    EvalValue additive = EvalValue::ofTensor(
        graph::SelectOp::create(builder, at, allowed->tensor, open->tensor,
                                blocked->tensor),
        loc);
    if (combined) {
      FailureOr<EvalValue> sum =
          emitter.emitBinary(ast::BinaryOp::Add, loc, *combined, additive);
      if (failed(sum))
        return failure();
      combined = *sum;
    } else {
      combined = additive;
    }
  }
  std::string message;
  if (failed(graph::getAttentionMaskLayout(combined->getTensorType().getShape(),
                                           scoreShape, message))) {
    // Leading dims that skip one of the scores' (a [B, 1, C] mask over [B,
    // H, C] batches): spread over all of them.
    ArrayRef<int64_t> maskShape = combined->getTensorType().getShape();
    SmallVector<int64_t> spread(scoreShape);
    int64_t maskRank = maskShape.size();
    spread[rank - 2] = maskRank >= 2 ? maskShape[maskRank - 2] : 1;
    spread[rank - 1] = maskRank >= 1 ? maskShape[maskRank - 1] : 1;
    if (failed(emitter.countOp(loc)))
      return failure();
    combined = EvalValue::ofTensor(
        emitter.broadcastTo(combined->tensor, spread, at), loc);
  }
  return *combined;
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
  Value mask;
  if (args.has("mask") || args.has("key_padding")) {
    Result combined = emitAttentionMask(emitter, args, *q, *k);
    if (failed(combined))
      return failure();
    mask = combined->tensor;
  }
  return tensorResult(emitOp<graph::AttentionOp>(
                          emitter, loc, tensorType(*shape, elementTypeOf(*q)),
                          q->tensor, k->tensor, v->tensor, mask,
                          *causal ? builder.getUnitAttr() : UnitAttr(), scale),
                      loc);
}
