//===- CallArguments.cpp - Binding a call's arguments ----------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "CallArguments.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

FailureOr<CallArguments> CallArguments::bind(ModelEmitter &emitter,
                                             const ast::CallExpr &call,
                                             ArrayRef<BuiltinParam> params,
                                             bool variadicFirst) {
  CallArguments args;
  args.emitter = &emitter;
  args.call = &call;
  StringRef callee = call.getCallee();

  auto usage = [&]() {
    std::string text = (callee + "(").str();
    for (auto [index, param] : llvm::enumerate(params)) {
      if (index)
        text += ", ";
      text += param.name.str();
      if (variadicFirst && index == 0)
        text += "...";
      if (!param.required)
        text += "=...";
    }
    return text + ")";
  };

  // Positional arguments.
  const ast::ExprList &positional = call.getArgs();
  size_t nextParam = 0;
  if (variadicFirst && !params.empty()) {
    EvalValue list;
    list.kind = EvalValue::Kind::List;
    list.origin = call.getLoc();
    for (const ast::ExprPtr &arg : positional) {
      FailureOr<EvalValue> value = emitter.evaluate(*arg);
      if (failed(value))
        return failure();
      value->origin = arg->getLoc();
      list.elements.push_back(*value);
    }
    args.values[params.front().name] = list;
    args.locs[params.front().name] = call.getLoc();
    nextParam = 1;
  } else {
    if (positional.size() > params.size())
      return emitter.error(positional[params.size()]->getLoc(),
                           llvm::formatv("too many arguments: {0} takes at "
                                         "most {1} ({2})",
                                         callee, params.size(), usage()));
    for (const ast::ExprPtr &arg : positional) {
      FailureOr<EvalValue> value = emitter.evaluate(*arg);
      if (failed(value))
        return failure();
      // Keep a tensor's own origin (a variable's assignment) for notes.
      if (!value->isTensor())
        value->origin = arg->getLoc();
      StringRef name = params[nextParam++].name;
      args.values[name] = *value;
      args.locs[name] = arg->getLoc();
    }
  }

  // Keyword arguments.
  for (const ast::KeywordArg &keyword : call.getKeywords()) {
    auto it = llvm::find_if(params, [&](const BuiltinParam &param) {
      return param.name == keyword.name;
    });
    if (it == params.end() || (variadicFirst && it == params.begin())) {
      SmallVector<StringRef> names;
      for (const BuiltinParam &param : params)
        names.push_back(param.name);
      return emitter.error(keyword.nameLoc,
                           "'" + callee + "' has no argument '" + keyword.name +
                               "'" + didYouMean(keyword.name, names) + " (" +
                               usage() + ")");
    }
    if (args.values.count(keyword.name))
      return emitter.error(keyword.nameLoc, "argument '" + keyword.name +
                                                "' is given twice");
    FailureOr<EvalValue> value = emitter.evaluate(*keyword.value);
    if (failed(value))
      return failure();
    if (!value->isTensor())
      value->origin = keyword.value->getLoc();
    args.values[keyword.name] = *value;
    args.locs[keyword.name] = keyword.value->getLoc();
  }

  for (const BuiltinParam &param : params)
    if (param.required && !args.values.count(param.name))
      return emitter.error(call.getLoc(), "missing argument '" + param.name +
                                              "' of " + usage());
  return args;
}

SMLoc CallArguments::getLoc(StringRef name) const {
  auto it = locs.find(name);
  return it == locs.end() ? call->getLoc() : it->second;
}

const EvalValue &CallArguments::get(StringRef name) const {
  return values.find(name)->second;
}

/// Reports an unbound word used as a value.
static LogicalResult unknownName(ModelEmitter &emitter, const EvalValue &value,
                                 SMLoc loc) {
  return emitter.error(loc, "unknown name '" + value.word + "'" +
                                didYouMean(value.word, emitter.namesInScope()));
}

FailureOr<EvalValue> CallArguments::tensor(StringRef name) const {
  const EvalValue &value = get(name);
  if (value.isTensor())
    return value;
  if (value.kind == EvalValue::Kind::Word)
    return unknownName(*emitter, value, getLoc(name));
  return emitter->error(getLoc(name), "argument '" + name + "' of " +
                                          call->getCallee() +
                                          " must be a tensor, got " +
                                          value.describe());
}

FailureOr<EvalValue> CallArguments::floatTensor(StringRef name) const {
  FailureOr<EvalValue> value = tensor(name);
  if (failed(value))
    return failure();
  if (!isa<FloatType>(value->getTensorType().getElementType())) {
    (void)emitter->error(getLoc(name), "argument '" + name + "' of " +
                                     call->getCallee() +
                                     " must be a floating-point tensor, got " +
                                     value->describe());
    emitter->noteOrigin(*value, "'" + name.str() + "'");
    return failure();
  }
  return value;
}

FailureOr<int64_t> CallArguments::integer(StringRef name,
                                          std::optional<int64_t> fallback) const {
  if (!has(name)) {
    assert(fallback && "required arguments are checked by bind()");
    return *fallback;
  }
  const EvalValue &value = get(name);
  if (value.kind == EvalValue::Kind::Int)
    return value.intValue;
  if (value.kind == EvalValue::Kind::Word)
    return unknownName(*emitter, value, getLoc(name));
  return emitter->error(getLoc(name), "argument '" + name + "' of " +
                                          call->getCallee() +
                                          " must be an integer, got " +
                                          value.describe());
}

FailureOr<double> CallArguments::number(StringRef name,
                                        std::optional<double> fallback) const {
  if (!has(name)) {
    assert(fallback && "required arguments are checked by bind()");
    return *fallback;
  }
  const EvalValue &value = get(name);
  if (value.isNumber())
    return value.asDouble();
  return emitter->error(getLoc(name), "argument '" + name + "' of " +
                                          call->getCallee() +
                                          " must be a number, got " +
                                          value.describe());
}

FailureOr<bool> CallArguments::boolean(StringRef name, bool fallback) const {
  if (!has(name))
    return fallback;
  const EvalValue &value = get(name);
  if (value.kind == EvalValue::Kind::Bool)
    return value.boolValue;
  return emitter->error(getLoc(name), "argument '" + name + "' of " +
                                          call->getCallee() +
                                          " must be true or false, got " +
                                          value.describe());
}

FailureOr<SmallVector<int64_t>> CallArguments::integerList(StringRef name) const {
  const EvalValue &value = get(name);
  if (value.kind == EvalValue::Kind::Int)
    return SmallVector<int64_t>{value.intValue};
  if (value.kind != EvalValue::Kind::List &&
      value.kind != EvalValue::Kind::Tuple)
    return emitter->error(getLoc(name), "argument '" + name + "' of " +
                                            call->getCallee() +
                                            " must be a list of integers, "
                                            "got " + value.describe());
  SmallVector<int64_t> list;
  for (const EvalValue &element : value.elements) {
    if (element.kind != EvalValue::Kind::Int)
      return emitter->error(element.origin.isValid() ? element.origin
                                                     : getLoc(name),
                            "expected an integer in '" + name + "', got " +
                                element.describe());
    list.push_back(element.intValue);
  }
  return list;
}

FailureOr<StringRef> CallArguments::word(StringRef name) const {
  const EvalValue &value = get(name);
  if (value.kind == EvalValue::Kind::Word)
    return value.word;
  return emitter->error(getLoc(name), "argument '" + name + "' of " +
                                          call->getCallee() +
                                          " must be a name, got " +
                                          value.describe());
}

FailureOr<SmallVector<EvalValue>> CallArguments::tensorList(StringRef name) const {
  const EvalValue &list = get(name);
  SmallVector<EvalValue> tensors;
  for (const EvalValue &element : list.elements) {
    if (!element.isTensor()) {
      if (element.kind == EvalValue::Kind::Word)
        return unknownName(*emitter, element, element.origin);
      return emitter->error(element.origin, "arguments of " +
                                                call->getCallee() +
                                                " must be tensors, got " +
                                                element.describe());
    }
    tensors.push_back(element);
  }
  if (tensors.empty())
    return emitter->error(call->getLoc(), call->getCallee() +
                                              " needs at least one tensor");
  return tensors;
}
