//===- TrainBlock.cpp - The train block to a graph.train attribute --------===//
//
// Part of Kiln. Validates `train { ... }` (keys, optimizer and schedule
// arguments, ranges) and records it on the module as a dictionary, with
// every default filled in, so that later stages read one complete setting.
//
//===----------------------------------------------------------------------===//

#include "ModelEmitter.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

namespace {
/// What a numeric argument may hold.
enum class ArgKind { Number, PositiveNumber, Fraction, Count, Flag, Pair };

/// One keyword argument of an optimizer or a schedule, with its default.
struct ArgSpec {
  StringRef name;
  ArgKind kind;
  /// Absent: the argument is required.
  std::optional<double> fallback;
};

/// An optimizer or schedule constructor: `adamw(lr=..., ...)`.
struct Constructor {
  StringRef name;
  SmallVector<ArgSpec, 6> args;
};
} // namespace

static const Constructor kOptimizers[] = {
    {"sgd",
     {{"lr", ArgKind::PositiveNumber, {}},
      {"weight_decay", ArgKind::Number, 0.0},
      {"clip", ArgKind::Number, 0.0}}},
    {"momentum",
     {{"lr", ArgKind::PositiveNumber, {}},
      {"momentum", ArgKind::Fraction, 0.9},
      {"nesterov", ArgKind::Flag, 0.0},
      {"weight_decay", ArgKind::Number, 0.0},
      {"clip", ArgKind::Number, 0.0}}},
    {"adamw",
     {{"lr", ArgKind::PositiveNumber, {}},
      {"betas", ArgKind::Pair, 0.0},
      {"eps", ArgKind::PositiveNumber, 1e-8},
      {"weight_decay", ArgKind::Number, 0.0},
      {"decay_all", ArgKind::Flag, 0.0},
      {"clip", ArgKind::Number, 0.0}}},
};

static const Constructor kSchedules[] = {
    {"constant", {{"warmup", ArgKind::Count, 0.0}}},
    {"linear",
     {{"warmup", ArgKind::Count, 0.0}, {"final", ArgKind::Fraction, 0.0}}},
    {"cosine",
     {{"warmup", ArgKind::Count, 0.0}, {"final", ArgKind::Fraction, 0.0}}},
};

/// fp16's dynamic loss scaling: the initial scale and the clean steps after
/// which it doubles (PyTorch GradScaler's defaults).
static const Constructor kLossScales[] = {
    {"dynamic",
     {{"init", ArgKind::PositiveNumber, 65536.0},
      {"interval", ArgKind::Count, 2000.0}}},
};

static const StringRef kTrainKeys[] = {
    "optimizer", "schedule",  "steps",  "batch_seed", "seed",
    "accumulate", "precision", "memory", "eval_every", "loss_scale"};

/// Validates one constructor call (or a bare name for one without required
/// arguments) against `choices`.
static FailureOr<DictionaryAttr> emitConstructor(ModelEmitter &emitter,
                                                 const ast::Expr &expr,
                                                 ArrayRef<Constructor> choices,
                                                 StringRef what) {
  OpBuilder &builder = emitter.getBuilder();
  StringRef name;
  const ast::CallExpr *call = dyn_cast<ast::CallExpr>(&expr);
  if (call)
    name = call->getCallee();
  else if (auto *word = dyn_cast<ast::NameExpr>(&expr))
    name = word->getName();
  else
    return emitter.error(expr.getLoc(), "expected " + what.str() + " such as " +
                                            choices[0].name + "(...)");
  SmallVector<StringRef> names;
  for (const Constructor &choice : choices)
    names.push_back(choice.name);
  const Constructor *spec = llvm::find_if(
      choices, [&](const Constructor &c) { return c.name == name; });
  if (spec == choices.end())
    return emitter.error(expr.getLoc(), "unknown " + what + " '" + name + "'" +
                                            didYouMean(name, names) +
                                            " (expected " +
                                            llvm::join(names, ", ") + ")");
  if (call && !call->getArgs().empty())
    return emitter.error(call->getArgs().front()->getLoc(),
                         "arguments of " + name + " are named: " + name + "(" +
                             spec->args.front().name + "=...)");

  SmallVector<NamedAttribute> fields = {
      builder.getNamedAttr("name", builder.getStringAttr(name))};
  SmallVector<StringRef> argNames;
  for (const ArgSpec &arg : spec->args)
    argNames.push_back(arg.name);
  if (call)
    for (const ast::KeywordArg &keyword : call->getKeywords())
      if (!llvm::is_contained(argNames, keyword.name))
        return emitter.error(keyword.nameLoc,
                             "'" + name + "' has no argument '" + keyword.name +
                                 "'" + didYouMean(keyword.name, argNames) +
                                 " (it takes " + llvm::join(argNames, ", ") +
                                 ")");

  for (const ArgSpec &arg : spec->args) {
    const ast::KeywordArg *given = call ? call->findKeyword(arg.name) : nullptr;
    if (!given) {
      if (!arg.fallback)
        return emitter.error(expr.getLoc(),
                             "'" + name + "' needs '" + arg.name + "=...'");
      if (arg.kind == ArgKind::Count)
        fields.push_back(builder.getNamedAttr(
            arg.name, builder.getI64IntegerAttr(int64_t(*arg.fallback))));
      else if (arg.kind == ArgKind::Pair) // Adam's customary (0.9, 0.999).
        fields.push_back(builder.getNamedAttr(
            arg.name, builder.getF64ArrayAttr({0.9, 0.999})));
      else if (arg.kind == ArgKind::Flag)
        fields.push_back(
            builder.getNamedAttr(arg.name, builder.getBoolAttr(*arg.fallback)));
      else
        fields.push_back(builder.getNamedAttr(
            arg.name, builder.getF64FloatAttr(*arg.fallback)));
      continue;
    }
    FailureOr<EvalValue> value = emitter.evaluate(*given->value);
    if (failed(value))
      return failure();
    SMLoc loc = given->value->getLoc();
    switch (arg.kind) {
    case ArgKind::Flag:
      if (value->kind != EvalValue::Kind::Bool)
        return emitter.error(loc, "'" + arg.name + "' must be true or false");
      fields.push_back(builder.getNamedAttr(
          arg.name, builder.getBoolAttr(value->boolValue)));
      break;
    case ArgKind::Count:
      if (value->kind != EvalValue::Kind::Int || value->intValue < 0)
        return emitter.error(loc, "'" + arg.name +
                                      "' must be a non-negative integer");
      fields.push_back(builder.getNamedAttr(
          arg.name, builder.getI64IntegerAttr(value->intValue)));
      break;
    case ArgKind::Pair: {
      bool ok =
          value->kind == EvalValue::Kind::Tuple && value->elements.size() == 2;
      SmallVector<double, 2> pair;
      for (const EvalValue &element : value->elements) {
        ok &= element.isNumber() && element.asDouble() >= 0.0 &&
              element.asDouble() < 1.0;
        pair.push_back(element.asDouble());
      }
      if (!ok)
        return emitter.error(loc, "'" + arg.name +
                                      "' must be two numbers in "
                                      "[0, 1), like (0.9, 0.999)");
      fields.push_back(
          builder.getNamedAttr(arg.name, builder.getF64ArrayAttr(pair)));
      break;
    }
    default: {
      if (!value->isNumber())
        return emitter.error(loc, "'" + arg.name + "' must be a number, got " +
                                      value->describe());
      double number = value->asDouble();
      if (arg.kind == ArgKind::PositiveNumber && !(number > 0.0))
        return emitter.error(loc, "'" + arg.name + "' must be positive");
      if (arg.kind == ArgKind::Fraction && !(number >= 0.0 && number <= 1.0))
        return emitter.error(loc, "'" + arg.name + "' must be in [0, 1]");
      if (arg.kind == ArgKind::Number && !(number >= 0.0))
        return emitter.error(loc, "'" + arg.name + "' must not be negative");
      // The update computes in f32, the parameters' type.
      if (std::optional<std::string> problem =
              describeMisfit(number, builder.getF32Type()))
        return emitter.error(loc, "'" + arg.name + "': " + *problem);
      fields.push_back(
          builder.getNamedAttr(arg.name, builder.getF64FloatAttr(number)));
      break;
    }
    }
  }
  return builder.getDictionaryAttr(fields);
}

FailureOr<DictionaryAttr>
ModelEmitter::emitTrainBlock(const ast::TrainDecl &train) {
  // Dims are visible in the train block (`steps = 10 * L` is fine); model
  // variables are not.
  scopes.emplace_back();
  llvm::scope_exit popScope([&] { scopes.pop_back(); });
  SmallVector<NamedAttribute> fields;
  for (const ast::TrainEntry &entry : train.entries) {
    StringRef key = entry.key.name;
    if (!llvm::is_contained(kTrainKeys, key))
      return error(entry.key.loc,
                   "unknown train setting '" + key + "'" +
                       didYouMean(key, kTrainKeys) + " (expected " +
                       llvm::join(ArrayRef<StringRef>(kTrainKeys), ", ") + ")");
    const ast::Expr &valueExpr = *entry.value;
    Attribute attr;
    if (key == "optimizer" || key == "schedule") {
      FailureOr<DictionaryAttr> dict =
          key == "optimizer"
              ? emitConstructor(*this, valueExpr, kOptimizers, "optimizer")
              : emitConstructor(*this, valueExpr, kSchedules, "schedule");
      if (failed(dict))
        return failure();
      attr = *dict;
    } else if (key == "loss_scale") {
      FailureOr<DictionaryAttr> dict =
          emitConstructor(*this, valueExpr, kLossScales, "loss scaling");
      if (failed(dict))
        return failure();
      auto interval = dict->getAs<IntegerAttr>("interval");
      if (interval && interval.getInt() < 1)
        return error(valueExpr.getLoc(),
                     "loss_scale's interval must be at least 1");
      attr = *dict;
      // Where it was set, for a step that does not scale its loss.
      fields.push_back(builder.getNamedAttr(
          "loss_scale_loc", LocationAttr(getLoc(valueExpr.getLoc()))));
    } else if (key == "precision") {
      auto *word = dyn_cast<ast::NameExpr>(&valueExpr);
      static const StringRef precisions[] = {"fp32", "bf16", "fp16"};
      if (!word || !llvm::is_contained(precisions, word->getName()))
        return error(valueExpr.getLoc(),
                     "precision must be fp32, bf16 or fp16" +
                         (word ? didYouMean(word->getName(), precisions)
                               : std::string()));
      attr = builder.getStringAttr(word->getName());
      // Where it was set, for a target that cannot train in it.
      fields.push_back(builder.getNamedAttr(
          "precision_loc", LocationAttr(getLoc(valueExpr.getLoc()))));
    } else if (key == "memory") {
      FailureOr<EvalValue> value = evaluate(valueExpr);
      if (failed(value))
        return failure();
      if ((value->kind != EvalValue::Kind::Size &&
           value->kind != EvalValue::Kind::Int) ||
          value->intValue <= 0)
        return error(valueExpr.getLoc(), "memory must be a positive size, "
                                         "like 40GiB or 512MiB");
      attr = builder.getI64IntegerAttr(value->intValue);
    } else {
      FailureOr<int64_t> value = evaluateInt(valueExpr, key);
      if (failed(value))
        return failure();
      int64_t minimum = (key == "batch_seed" || key == "seed") ? 0 : 1;
      if (*value < minimum)
        return error(valueExpr.getLoc(),
                     llvm::formatv("{0} must be at least {1}", key, minimum));
      attr = builder.getI64IntegerAttr(*value);
    }
    fields.push_back(builder.getNamedAttr(key, attr));
  }
  return builder.getDictionaryAttr(fields);
}
