//===- Builtins.cpp - The DSL's op library --------------------------------===//
//
// Part of Kiln. Each builtin call binds its arguments by name, checks shapes
// with the dialect's shape rules (GraphShapes.h) so that errors point at the
// model line with both shapes, and emits graph ops. This file holds the
// table of builtins and the elementwise ones; the other families are in
// BuiltinsShape.cpp and BuiltinsNN.cpp.
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

namespace {
using Handler = FailureOr<EvalValue> (*)(ModelEmitter &, const CallArguments &);

/// A builtin: its signature and the function that emits it.
struct Builtin {
  SmallVector<BuiltinParam, 4> params;
  Handler handler;
  bool variadicFirst = false;
};
} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpTy>
static Result emitUnary(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  return tensorResult(emitOp<OpTy>(emitter, args.getCallLoc(), x->tensor),
                      args.getCallLoc());
}

static Result emitPow(ModelEmitter &emitter, const CallArguments &args) {
  return emitter.emitBinary(ast::BinaryOp::Pow, args.getCallLoc(),
                            args.get("x"), args.get("y"));
}

/// maximum(x, y), minimum(x, y): elementwise, broadcasting as `+` does.
/// where(condition, x, y): x where the condition is nonzero, else y
/// (graph.select), the three broadcast together; x and y may be numbers.
/// The condition is a float mask, as comparisons make.
static Result emitWhere(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> condition = args.floatTensor("condition");
  if (failed(condition))
    return failure();
  SMLoc loc = args.getCallLoc();
  Type element = elementTypeOf(*condition);
  SmallVector<EvalValue> sides = {args.get("x"), args.get("y")};
  for (unsigned i = 0; i < 2; ++i) {
    const EvalValue &side = sides[i];
    StringRef name = i == 0 ? "x" : "y";
    if (side.kind == EvalValue::Kind::Word)
      return emitter.error(args.getLoc(name),
                           "unknown name '" + side.word + "'");
    if (!side.isTensor() && !side.isNumber())
      return emitter.error(args.getLoc(name),
                           "where's " + name +
                               " must be a tensor or a number, got " +
                               side.describe());
    if (side.isTensor() && elementTypeOf(side) != element)
      return shapeError(emitter, loc, "where",
                        "the condition, x and y differ in element type (a "
                        "mask has its operands' type; cast(x, TYPE))",
                        {{"condition", *condition}, {name, side}});
  }
  std::string message;
  SmallVector<int64_t> shape(condition->getTensorType().getShape());
  for (const EvalValue &side : sides) {
    if (!side.isTensor())
      continue;
    FailureOr<SmallVector<int64_t>> joined = graph::inferBroadcastShape(
        shape, side.getTensorType().getShape(), message);
    if (failed(joined))
      return shapeError(
          emitter, loc, "where", message,
          {{"condition", *condition}, {"x", sides[0]}, {"y", sides[1]}});
    shape = *joined;
  }
  if (failed(emitter.countOp(loc)))
    return failure();
  auto type = tensorType(shape, element);
  Location at = emitter.getLoc(loc);
  SmallVector<Value> operands = {
      emitter.broadcastTo(condition->tensor, shape, at)};
  for (EvalValue &side : sides) {
    if (!side.isTensor()) {
      FailureOr<EvalValue> splat = emitter.materializeScalar(side, type, loc);
      if (failed(splat))
        return failure();
      side = *splat;
    }
    operands.push_back(emitter.broadcastTo(side.tensor, shape, at));
  }
  return tensorResult(graph::SelectOp::create(emitter.getBuilder(), at,
                                              operands[0], operands[1],
                                              operands[2])
                          .getResult(),
                      loc);
}

template <ast::BinaryOp Op>
static Result emitExtremum(ModelEmitter &emitter, const CallArguments &args) {
  return emitter.emitBinary(Op, args.getCallLoc(), args.get("x"),
                            args.get("y"));
}

/// clamp(x, min=..., max=...): maximum(x, min) then minimum(.., max), so a
/// value at a bound gets half its gradient (JAX's clip; PyTorch's clamp
/// passes all of it).
static Result emitClamp(ModelEmitter &emitter, const CallArguments &args) {
  if (!args.has("min") && !args.has("max"))
    return emitter.error(args.getCallLoc(),
                         "clamp needs min=..., max=... or both");
  EvalValue value = args.get("x");
  if (args.has("min")) {
    FailureOr<EvalValue> low = emitter.emitBinary(
        ast::BinaryOp::Maximum, args.getCallLoc(), value, args.get("min"));
    if (failed(low))
      return failure();
    value = *low;
  }
  if (args.has("max"))
    return emitter.emitBinary(ast::BinaryOp::Minimum, args.getCallLoc(), value,
                              args.get("max"));
  return value;
}

/// gelu(x) is GPT-2's tanh approximation (one op, which GEMM epilogues
/// take); gelu(x, approximate=false) the exact 0.5 x (1 + erf(x / sqrt(2))),
/// composed of graph ops that fuse into one kernel (JAX's
/// jax.nn.gelu(approximate=False), PyTorch's nn.GELU()).
static Result emitGelu(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<bool> approximate = args.boolean("approximate", true);
  if (failed(approximate))
    return failure();
  if (*approximate)
    return emitUnary<graph::GeluOp>(emitter, args);
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  SMLoc loc = args.getCallLoc();
  FailureOr<EvalValue> scaled = emitter.emitBinary(
      ast::BinaryOp::Mul, loc, *x, EvalValue::ofFloat(M_SQRT1_2, loc));
  if (failed(scaled))
    return failure();
  Result erf =
      tensorResult(emitOp<graph::ErfOp>(emitter, loc, scaled->tensor), loc);
  if (failed(erf))
    return failure();
  FailureOr<EvalValue> shifted = emitter.emitBinary(
      ast::BinaryOp::Add, loc, *erf, EvalValue::ofFloat(1.0, loc));
  if (failed(shifted))
    return failure();
  FailureOr<EvalValue> half = emitter.emitBinary(ast::BinaryOp::Mul, loc, *x,
                                                 EvalValue::ofFloat(0.5, loc));
  if (failed(half))
    return failure();
  return emitter.emitBinary(ast::BinaryOp::Mul, loc, *half, *shifted);
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

static const llvm::StringMap<Builtin> &getBuiltins() {
  static const llvm::StringMap<Builtin> builtins = [] {
    llvm::StringMap<Builtin> table;
    BuiltinParam x{"x"};
    auto opt = [](StringRef name) { return BuiltinParam{name, false}; };
    table["exp"] = {{x}, emitUnary<graph::ExpOp>};
    table["log"] = {{x}, emitUnary<graph::LogOp>};
    table["tanh"] = {{x}, emitUnary<graph::TanhOp>};
    table["abs"] = {{x}, emitUnary<graph::AbsOp>};
    table["sin"] = {{x}, emitUnary<graph::SinOp>};
    table["cos"] = {{x}, emitUnary<graph::CosOp>};
    table["erf"] = {{x}, emitUnary<graph::ErfOp>};
    table["sigmoid"] = {{x}, emitUnary<graph::SigmoidOp>};
    table["silu"] = {{x}, emitUnary<graph::SiluOp>};
    table["sqrt"] = {{x}, emitUnary<graph::SqrtOp>};
    table["rsqrt"] = {{x}, emitUnary<graph::RsqrtOp>};
    table["relu"] = {{x}, emitUnary<graph::ReluOp>};
    table["gelu"] = {{x, opt("approximate")}, emitGelu};
    table["neg"] = {{x}, emitUnary<graph::NegOp>};
    table["pow"] = {{x, {"y"}}, emitPow};
    table["maximum"] = {{x, {"y"}}, emitExtremum<ast::BinaryOp::Maximum>};
    table["minimum"] = {{x, {"y"}}, emitExtremum<ast::BinaryOp::Minimum>};
    table["clamp"] = {{x, opt("min"), opt("max")}, emitClamp};
    table["where"] = {{{"condition"}, {"x"}, {"y"}}, emitWhere};
    table["matmul"] = {{{"a"}, {"b"}, opt("transpose_a"), opt("transpose_b")},
                       emitMatmul};
    table["transpose"] = {{x, opt("perm")}, emitTranspose};
    table["reshape"] = {{x, {"shape"}}, emitReshape};
    table["broadcast"] = {{x, {"shape"}}, emitBroadcast};
    table["sum"] = {{x, opt("axis"), opt("keepdims")}, emitSum};
    table["max"] = {{x, opt("axis"), opt("keepdims")}, emitMax};
    table["mean"] = {{x, opt("axis"), opt("keepdims")}, emitMean};
    table["slice"] = {{x, opt("axis"), opt("start"), opt("end")}, emitSlice};
    table["concat"] = {{{"xs"}, opt("axis")},
                       emitConcat,
                       /*variadicFirst=*/true};
    table["split"] = {{x, {"parts"}, opt("axis")}, emitSplit};
    table["heads"] = {{x, {"heads"}}, emitHeads};
    table["merge_heads"] = {{x}, emitMergeHeads};
    table["embed"] = {{{"table"}, {"ids"}}, emitEmbed};
    table["layer_norm"] = {{x, {"gamma"}, {"beta"}, opt("eps")}, emitLayerNorm};
    table["rms_norm"] = {{x, {"gamma"}, opt("eps")}, emitRmsNorm};
    table["mse"] = {{{"a"}, {"b"}}, emitMse};
    table["rotary"] = {{x, opt("base")}, emitRotary};
    table["batch_norm"] = {{x,
                            {"gamma"},
                            {"beta"},
                            {"mean"},
                            {"var"},
                            opt("momentum"),
                            opt("eps")},
                           emitBatchNorm};
    table["conv2d"] = {{x, {"w"}, opt("stride"), opt("padding")}, emitConv2d};
    table["max_pool2d"] = {{x, {"kernel"}, opt("stride"), opt("padding")},
                           emitMaxPool2d};
    table["avg_pool2d"] = {{x, {"kernel"}, opt("stride"), opt("padding")},
                           emitAvgPool2d};
    table["softmax"] = {{x, opt("axis")}, emitSoftmax};
    table["attention"] = {{{"q"},
                           {"k"},
                           {"v"},
                           opt("causal"),
                           opt("scale"),
                           opt("mask"),
                           opt("key_padding")},
                          emitAttention};
    table["cross_entropy"] = {{{"logits"}, {"targets"}, opt("label_smoothing")},
                              emitCrossEntropy};
    table["dropout"] = {{x, opt("rate")}, emitDropout};
    table["cast"] = {{x, {"type"}}, emitCast};
    table["argmax"] = {{x, opt("axis")}, emitArgmax};
    table["one_hot"] = {{{"ids"}, {"classes"}}, emitOneHot};
    table["arange"] = {{{"n"}}, emitArange};
    return table;
  }();
  return builtins;
}

bool kiln::frontend::isBuiltinName(StringRef name) {
  return getBuiltins().count(name);
}

FailureOr<EvalValue> ModelEmitter::emitCall(const ast::CallExpr &call) {
  StringRef callee = call.getCallee();
  if (const ast::FnDecl *fn = file->findFunction(callee))
    return callUserFunction(*fn, call);
  auto it = getBuiltins().find(callee);
  if (it == getBuiltins().end()) {
    std::vector<StringRef> names;
    for (const auto &entry : getBuiltins())
      names.push_back(entry.getKey());
    for (const auto &fn : file->functions)
      names.push_back(fn->name.name);
    return error(call.getLoc(), "unknown function '" + callee + "'" +
                                    didYouMean(callee, names));
  }
  const Builtin &builtin = it->second;
  FailureOr<CallArguments> args =
      CallArguments::bind(*this, call, builtin.params, builtin.variadicFirst);
  if (failed(args))
    return failure();
  return builtin.handler(*this, *args);
}
