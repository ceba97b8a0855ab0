//===- ModelEmitter.cpp - Statements of a model to graph IR ---------------===//
//
// Part of Kiln. The model body's statements: dims, inputs, parameters and
// buffers, assignments, unrolled loops, the loss and the outputs, which
// ModelModule.cpp gathers into `@forward`.
//
//===----------------------------------------------------------------------===//

#include "ModelEmitter.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Frontend/Frontend.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

/// The most ops one model may expand to once loops unroll and functions
/// instantiate (docs/language.md states it): about 740 transformer blocks
/// of examples/gpt.kiln (27 ops each), several times the deepest models
/// trained, and small enough that compiling stays in minutes (compile time
/// grows faster than the op count: 100 blocks take ~35 s on 2 cores), so
/// that a runaway `for` is an error rather than an endless compile.
static constexpr int64_t kMaxOps = 20'000;

EvalValue EvalValue::ofTensor(Value value, SMLoc origin) {
  EvalValue result;
  result.kind = Kind::Tensor;
  result.tensor = value;
  result.origin = origin;
  return result;
}

EvalValue EvalValue::ofInt(int64_t value, SMLoc origin) {
  EvalValue result;
  result.kind = Kind::Int;
  result.intValue = value;
  result.origin = origin;
  return result;
}

EvalValue EvalValue::ofFloat(double value, SMLoc origin) {
  EvalValue result;
  result.kind = Kind::Float;
  result.floatValue = value;
  result.origin = origin;
  return result;
}

std::string kiln::frontend::describeTensorType(RankedTensorType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type.getElementType() << "[";
  llvm::interleaveComma(type.getShape(), os);
  os << "]";
  return text;
}

std::string EvalValue::describe() const {
  switch (kind) {
  case Kind::Tensor:
    return describeTensorType(getTensorType());
  case Kind::Int:
    return llvm::formatv("the integer {0}", intValue).str();
  case Kind::Float:
    // %g: as written (1.5, 1e-05), not formatv's fixed two decimals,
    // which shows 1e-5 as 0.00.
    return llvm::formatv("the number {0}", llvm::format("%g", floatValue))
        .str();
  case Kind::Bool:
    return boolValue ? "true" : "false";
  case Kind::Size:
    return llvm::formatv("the size {0} bytes", intValue).str();
  case Kind::List:
    return llvm::formatv("a list of {0} values", elements.size()).str();
  case Kind::Tuple:
    return llvm::formatv("a tuple of {0} values", elements.size()).str();
  case Kind::Word:
    return ("the name '" + word + "'").str();
  }
  return "a value";
}

ModelEmitter::ModelEmitter(const llvm::SourceMgr &sourceMgr,
                           MLIRContext &context, Diagnostics &diagnostics,
                           ArrayRef<DimOverride> dimOverrides)
    : sourceMgr(sourceMgr), context(context), diagnostics(diagnostics),
      builder(&context), dimOverrides(dimOverrides),
      dimOverrideUsed(dimOverrides.size(), false) {}

LogicalResult ModelEmitter::error(SMLoc loc, const llvm::Twine &message) {
  diagnostics.error(loc, message);
  return failure();
}

void ModelEmitter::note(SMLoc loc, const llvm::Twine &message) {
  diagnostics.note(loc, message);
}

void ModelEmitter::noteOrigin(const EvalValue &value, StringRef role) {
  if (value.origin.isValid())
    note(value.origin,
         llvm::formatv("{0} {1} comes from here", role, value.describe()));
}

Location ModelEmitter::getLoc(SMLoc loc) {
  LineColumn lineColumn = diagnostics.getLineColumn(loc);
  Location result =
      FileLineColLoc::get(fileName, lineColumn.line, lineColumn.column);
  // Innermost call first: callee location, called from the call site.
  for (auto it = frames.rbegin(); it != frames.rend(); ++it)
    result = CallSiteLoc::get(result, it->callSite);
  return result;
}

LogicalResult ModelEmitter::countOp(SMLoc loc) {
  if (++emittedOps <= kMaxOps)
    return success();
  // Reported once: the statements after it fail quietly.
  if (emittedOps > kMaxOps + 1)
    return failure();
  return error(loc, llvm::formatv("the model expands to more than {0} ops, "
                                  "Kiln's limit; is a loop bound or a dim "
                                  "far too large?",
                                  kMaxOps));
}

const EvalValue *ModelEmitter::lookup(StringRef name) const {
  if (!scopes.empty()) {
    auto it = scopes.back().find(name);
    if (it != scopes.back().end())
      return &it->second;
  }
  return nullptr;
}

std::vector<StringRef> ModelEmitter::namesInScope() const {
  std::vector<StringRef> names;
  if (!scopes.empty())
    for (const auto &entry : scopes.back())
      names.push_back(entry.getKey());
  for (const auto &dim : dimList)
    names.push_back(dim.first);
  return names;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult ModelEmitter::emitStatements(const ast::StmtList &body,
                                           bool inModel) {
  for (const ast::StmtPtr &stmt : body)
    if (failed(emitStatement(*stmt, inModel)))
      return failure();
  return success();
}

std::string ModelEmitter::describeIteration() const {
  if (loops.empty())
    return "";
  SmallVector<std::string> parts;
  for (const auto &[var, value] : loops)
    parts.push_back(llvm::formatv("{0} = {1}", var, value).str());
  return " (" + llvm::join(parts, ", ") + ")";
}

/// The statement kinds allowed only at model level, for the error message.
static StringRef modelOnlyKeyword(const ast::Stmt &stmt) {
  switch (stmt.getKind()) {
  case ast::Stmt::Kind::Dim:
    return "dim";
  case ast::Stmt::Kind::Batch:
    return "batch";
  case ast::Stmt::Kind::Input:
    return "input";
  case ast::Stmt::Kind::Output:
    return "output";
  default:
    return "";
  }
}

LogicalResult ModelEmitter::emitStatement(const ast::Stmt &stmt, bool inModel) {
  StringRef keyword = modelOnlyKeyword(stmt);
  if (!inModel && !keyword.empty())
    return error(stmt.getLoc(), "'" + keyword +
                                    "' declarations belong in the model "
                                    "block, not in a function");
  return llvm::TypeSwitch<const ast::Stmt *, LogicalResult>(&stmt)
      .Case([&](const ast::DimStmt *s) { return emitDims(*s); })
      .Case([&](const ast::BatchStmt *s) -> LogicalResult {
        if (!dims.count(s->getDim().name))
          return error(s->getDim().loc,
                       "unknown dim '" + s->getDim().name + "'" +
                           didYouMean(s->getDim().name, namesInScope()));
        batchDim = s->getDim().name;
        return success();
      })
      .Case([&](const ast::InputStmt *s) { return emitInput(*s); })
      .Case([&](const ast::ParamStmt *s) { return emitParam(*s); })
      .Case([&](const ast::AssignStmt *s) { return emitAssign(*s); })
      .Case([&](const ast::ForStmt *s) { return emitFor(*s, inModel); })
      .Case([&](const ast::ReturnStmt *s) -> LogicalResult {
        if (!inModel)
          return error(s->getLoc(), "a function's 'return' must be its last "
                                    "statement");
        return emitModelReturn(*s);
      })
      .Case([&](const ast::OutputStmt *s) { return emitOutput(*s); })
      .Default([&](const ast::Stmt *s) {
        return error(s->getLoc(), "unsupported statement");
      });
}

LogicalResult ModelEmitter::emitDims(const ast::DimStmt &stmt) {
  for (const ast::DimBinding &binding : stmt.getBindings()) {
    StringRef name = binding.name.name;
    if (dims.count(name))
      return error(binding.name.loc, "dim '" + name + "' is already defined");
    FailureOr<int64_t> value = evaluateInt(*binding.value, "a dim");
    if (failed(value))
      return failure();
    for (auto [dimOverride, used] : llvm::zip(dimOverrides, dimOverrideUsed))
      if (dimOverride.name == name) {
        value = dimOverride.value;
        used = true;
      }
    if (*value <= 0)
      return error(
          binding.value->getLoc(),
          llvm::formatv("dim '{0}' must be positive, got {1}", name, *value));
    dims[name] = *value;
    dimList.emplace_back(name, *value);
  }
  return success();
}

FailureOr<RankedTensorType>
ModelEmitter::evaluateType(const ast::TypeExpr &type) {
  Type elementType;
  switch (type.elementType) {
  case ast::ElementType::F32:
    elementType = builder.getF32Type();
    break;
  case ast::ElementType::F64:
    elementType = builder.getF64Type();
    break;
  case ast::ElementType::F16:
    elementType = builder.getF16Type();
    break;
  case ast::ElementType::BF16:
    elementType = builder.getBF16Type();
    break;
  case ast::ElementType::I32:
    elementType = builder.getI32Type();
    break;
  case ast::ElementType::I64:
    elementType = builder.getI64Type();
    break;
  case ast::ElementType::I1:
    elementType = builder.getI1Type();
    break;
  }
  SmallVector<int64_t> shape;
  int64_t elements = 1;
  for (const ast::ExprPtr &dim : type.dims) {
    FailureOr<int64_t> size = evaluateInt(*dim, "a dimension");
    if (failed(size))
      return failure();
    if (*size <= 0)
      return error(
          dim->getLoc(),
          llvm::formatv("dimensions must be positive, got {0}", *size));
    if (__builtin_mul_overflow(elements, *size, &elements) ||
        elements > (int64_t(1) << 48))
      return error(dim->getLoc(), "the tensor is too large (more than 2^48 "
                                  "elements)");
    shape.push_back(*size);
  }
  return RankedTensorType::get(shape, elementType);
}

LogicalResult ModelEmitter::emitInput(const ast::InputStmt &stmt) {
  StringRef name = stmt.getName().name;
  if (lookup(name) || dims.count(name))
    return error(stmt.getName().loc, "'" + name + "' is already defined");
  FailureOr<RankedTensorType> type = evaluateType(stmt.getType());
  if (failed(type))
    return failure();
  inputNames[name] = stmt.getName().loc;
  Value argument = addForwardArgument(*type, stmt.getName().loc,
                                      graph::GraphDialect::kInputAttr, name);
  scopes.back()[name] = EvalValue::ofTensor(argument, stmt.getName().loc);
  return success();
}

LogicalResult ModelEmitter::emitParam(const ast::ParamStmt &stmt) {
  StringRef localName = stmt.getName().name;
  if (lookup(localName) || dims.count(localName))
    return error(stmt.getName().loc, "'" + localName + "' is already defined");
  FailureOr<RankedTensorType> type = evaluateType(stmt.getType());
  if (failed(type))
    return failure();
  StringRef what = stmt.isBuffer() ? "buffer" : "parameter";
  if (!isa<FloatType>(type->getElementType()))
    return error(stmt.getType().loc,
                 what + "s must have a floating-point type (f32, f64, f16 "
                        "or bf16)");
  FailureOr<DictionaryAttr> init =
      evaluateInit(stmt.getInit(), cast<FloatType>(type->getElementType()));
  if (failed(init))
    return failure();

  std::string name =
      (frames.empty() ? std::string() : frames.back().paramPrefix) +
      localName.str();
  auto [it, inserted] = paramNames.try_emplace(name, stmt.getName().loc);
  if (!inserted) {
    (void)error(stmt.getName().loc, what + " '" + name + "' is declared twice");
    note(it->second, "first declared here");
    return failure();
  }
  // A buffer is state: the runtime initializes it, keeps it between steps
  // and saves it in checkpoints; only the train step writes it.
  Value argument =
      addForwardArgument(*type, stmt.getName().loc,
                         stmt.isBuffer() ? graph::GraphDialect::kStateAttr
                                         : graph::GraphDialect::kParamAttr,
                         name, *init);
  if (stmt.isBuffer())
    bufferNames[argument] = {name, stmt.getName().loc};
  scopes.back()[localName] = EvalValue::ofTensor(argument, stmt.getName().loc);
  return success();
}

FailureOr<DictionaryAttr> ModelEmitter::evaluateInit(const ast::Expr &init,
                                                     FloatType type) {
  static const StringRef kinds[] = {"zeros", "ones", "constant", "normal",
                                    "uniform"};
  StringRef kind;
  SmallVector<double, 2> args;
  if (auto *name = dyn_cast<ast::NameExpr>(&init)) {
    kind = name->getName();
  } else if (auto *call = dyn_cast<ast::CallExpr>(&init)) {
    kind = call->getCallee();
    if (!call->getKeywords().empty())
      return error(call->getKeywords().front().nameLoc,
                   "initializer arguments are positional: " + kind + "(...)");
    for (const ast::ExprPtr &arg : call->getArgs()) {
      FailureOr<EvalValue> value = evaluate(*arg);
      if (failed(value))
        return failure();
      if (!value->isNumber())
        return error(arg->getLoc(), "initializer arguments must be numbers, "
                                    "got " +
                                        value->describe());
      if (std::optional<std::string> problem =
              describeMisfit(value->asDouble(), type))
        return error(arg->getLoc(), *problem);
      args.push_back(value->asDouble());
    }
  } else {
    return error(init.getLoc(), "expected an initializer: zeros, ones, "
                                "constant(v), normal(std) or "
                                "uniform(low, high)");
  }

  auto expectArgs = [&](size_t count, StringRef usage) -> LogicalResult {
    if (args.size() == count)
      return success();
    return error(init.getLoc(),
                 llvm::formatv("'{0}' takes {1} argument{2}: "
                               "{3}",
                               kind, count, count == 1 ? "" : "s", usage));
  };
  SmallVector<NamedAttribute> fields = {
      builder.getNamedAttr("kind", builder.getStringAttr(kind))};
  auto addField = [&](StringRef field, double value) {
    fields.push_back(
        builder.getNamedAttr(field, builder.getF64FloatAttr(value)));
  };
  if (kind == "zeros" || kind == "ones") {
    if (failed(expectArgs(0, kind)))
      return failure();
  } else if (kind == "constant") {
    if (failed(expectArgs(1, "constant(value)")))
      return failure();
    addField("value", args[0]);
  } else if (kind == "normal") {
    if (failed(expectArgs(1, "normal(std)")))
      return failure();
    if (!(args[0] >= 0.0))
      return error(init.getLoc(), "normal(std) needs std >= 0");
    addField("std", args[0]);
  } else if (kind == "uniform") {
    if (failed(expectArgs(2, "uniform(low, high)")))
      return failure();
    if (!(args[0] <= args[1]))
      return error(init.getLoc(), "uniform(low, high) needs low <= high");
    addField("low", args[0]);
    addField("high", args[1]);
  } else {
    return error(init.getLoc(), "unknown initializer '" + kind + "'" +
                                    didYouMean(kind, kinds) +
                                    " (expected zeros, ones, constant, normal "
                                    "or uniform)");
  }
  return builder.getDictionaryAttr(fields);
}

LogicalResult ModelEmitter::emitAssign(const ast::AssignStmt &stmt) {
  FailureOr<EvalValue> value = evaluate(stmt.getValue());
  if (failed(value))
    return failure();
  const auto &targets = stmt.getTargets();
  auto checkTarget = [&](const ast::LocatedName &target) -> LogicalResult {
    if (dims.count(target.name))
      return error(target.loc,
                   "cannot assign to the dim '" + target.name + "'");
    return success();
  };
  if (targets.size() == 1) {
    if (failed(checkTarget(targets.front())))
      return failure();
    value->origin = stmt.getValue().getLoc();
    scopes.back()[targets.front().name] = *value;
    return success();
  }
  if (value->kind != EvalValue::Kind::Tuple)
    return error(stmt.getValue().getLoc(),
                 llvm::formatv("cannot unpack {0} into {1} names",
                               value->describe(), targets.size()));
  if (value->elements.size() != targets.size())
    return error(stmt.getValue().getLoc(),
                 llvm::formatv("cannot unpack {0} values into {1} names",
                               value->elements.size(), targets.size()));
  for (auto [target, element] : llvm::zip(targets, value->elements)) {
    if (failed(checkTarget(target)))
      return failure();
    element.origin = target.loc;
    scopes.back()[target.name] = element;
  }
  return success();
}

LogicalResult ModelEmitter::emitFor(const ast::ForStmt &stmt, bool inModel) {
  FailureOr<int64_t> begin = evaluateInt(stmt.getBegin(), "a loop bound");
  if (failed(begin))
    return failure();
  FailureOr<int64_t> end = evaluateInt(stmt.getEnd(), "a loop bound");
  if (failed(end))
    return failure();
  StringRef var = stmt.getVar().name;
  if (dims.count(var))
    return error(stmt.getVar().loc,
                 "the loop variable '" + var + "' hides a dim of that name");
  loops.emplace_back(var, *begin);
  llvm::scope_exit popLoop([&] { loops.pop_back(); });
  for (int64_t i = *begin; i < *end; ++i) {
    scopes.back()[var] = EvalValue::ofInt(i, stmt.getVar().loc);
    loops.back().second = i;
    if (failed(emitStatements(stmt.getBody(), inModel)))
      return failure();
    // Even a loop with an empty body must end.
    if (failed(countOp(stmt.getLoc())))
      return failure();
  }
  scopes.back().erase(var);
  return success();
}

LogicalResult ModelEmitter::emitModelReturn(const ast::ReturnStmt &stmt) {
  if (hasReturn)
    return error(stmt.getLoc(), "the model returns its loss twice");
  if (stmt.getValues().size() != 1)
    return error(stmt.getLoc(), "the model returns exactly one value, the "
                                "loss; expose other values with 'output NAME "
                                "= expr'");
  const ast::Expr &expr = *stmt.getValues().front();
  FailureOr<EvalValue> loss = evaluateTensor(expr, "the loss");
  if (failed(loss))
    return failure();
  RankedTensorType type = loss->getTensorType();
  if (type.getRank() != 0 || !isa<FloatType>(type.getElementType())) {
    (void)error(expr.getLoc(),
                "the loss must be a floating-point scalar, got " +
                    loss->describe() + "; reduce it, e.g. with mean(...)");
    noteOrigin(*loss, "the loss");
    return failure();
  }
  hasReturn = true;
  StringRef name = "loss";
  if (auto *nameExpr = dyn_cast<ast::NameExpr>(&expr))
    name = nameExpr->getName();
  for (const Result &result : results)
    if (result.name == name)
      return error(expr.getLoc(), "an output is already called '" + name + "'");
  results.push_back({name.str(), loss->tensor, /*isLoss=*/true, expr.getLoc()});
  return success();
}

LogicalResult ModelEmitter::emitOutput(const ast::OutputStmt &stmt) {
  StringRef name = stmt.getName().name;
  for (const Result &result : results)
    if (!result.isUpdate && result.name == name) {
      (void)error(stmt.getName().loc,
                  "an output is already called '" + name + "'");
      note(result.loc, "the first one is here");
      return failure();
    }
  FailureOr<EvalValue> value = evaluateTensor(stmt.getValue(), "an output");
  if (failed(value))
    return failure();
  results.push_back(
      {name.str(), value->tensor, /*isLoss=*/false, stmt.getName().loc});
  scopes.back()[name] = *value;
  return success();
}
