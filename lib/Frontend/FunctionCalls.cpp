//===- FunctionCalls.cpp - Instantiating user functions --------------------===//
//
// Part of Kiln. A call of a user function evaluates its body in a fresh
// scope, with the arguments checked against the declared types. Parameters
// declared in the body become `@forward` arguments named by the call path:
// the k-th call of `block` at model level declares `block.k.<param>`, and a
// call of `mlp` inside it `block.k.mlp.j.<param>`.
//
//===----------------------------------------------------------------------===//

#include "ModelEmitter.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

/// The deepest chain of nested function calls: recursion is reported before
/// this is reached, so it only bounds long non-recursive chains.
static constexpr size_t kMaxCallDepth = 64;
/// Calls named by a note under an error in a function body, outermost first.
static constexpr size_t kMaxCallNotes = 8;

FailureOr<EvalValue> ModelEmitter::callUserFunction(const ast::FnDecl &fn,
                                                    const ast::CallExpr &call) {
  StringRef name = fn.name.name;
  for (const CallFrame &frame : frames)
    if (frame.fn == &fn) {
      (void)error(call.getLoc(), "'" + name + "' calls itself; functions cannot be "
                                        "recursive");
      note(fn.name.loc, "'" + name + "' is defined here");
      return failure();
    }
  if (frames.size() >= kMaxCallDepth)
    return error(call.getLoc(), llvm::formatv("function calls nest deeper "
                                              "than {0}",
                                              kMaxCallDepth));
  if (isBuiltinName(name))
    return error(fn.name.loc, "the function '" + name +
                                  "' has the name of a builtin op; rename it");
  if (!call.getKeywords().empty())
    return error(call.getKeywords().front().nameLoc,
                 "arguments of '" + name + "' are positional");
  if (call.getArgs().size() != fn.args.size()) {
    (void)error(call.getLoc(), llvm::formatv("'{0}' takes {1} argument{2}, got {3}",
                                       name, fn.args.size(),
                                       fn.args.size() == 1 ? "" : "s",
                                       call.getArgs().size()));
    note(fn.name.loc, "'" + name + "' is defined here");
    return failure();
  }

  // Arguments are evaluated in the caller's scope.
  SmallVector<EvalValue> args;
  for (const ast::ExprPtr &arg : call.getArgs()) {
    FailureOr<EvalValue> value = evaluateTensor(*arg, "an argument of " +
                                                          name.str());
    if (failed(value))
      return failure();
    args.push_back(*value);
  }

  std::string prefix =
      frames.empty() ? std::string() : frames.back().paramPrefix;
  int64_t index = callCounts[prefix + name.str()]++;
  frames.push_back(
      {&fn, llvm::formatv("{0}{1}.{2}.", prefix, name, index).str(),
       getLoc(call.getLoc())});
  scopes.emplace_back();
  llvm::scope_exit popFrame([&] {
    scopes.pop_back();
    frames.pop_back();
  });

  // Dim parameters: a bare name in an argument's type that is no dim of the
  // model is bound, in the function's scope, to the argument's size there
  // (`fn mlp(x: f32[N, E])` serves every width E). A name met again must
  // agree, which the type check below reports.
  for (auto [arg, value] : llvm::zip(fn.args, args)) {
    ArrayRef<int64_t> shape = value.getTensorType().getShape();
    if (arg.type.dims.size() != shape.size())
      continue;
    for (auto [dim, size] : llvm::zip(arg.type.dims, shape)) {
      auto *nameExpr = dyn_cast<ast::NameExpr>(dim.get());
      if (!nameExpr || dims.count(nameExpr->getName()) ||
          scopes.back().count(nameExpr->getName()))
        continue;
      scopes.back()[nameExpr->getName()] =
          EvalValue::ofInt(size, nameExpr->getLoc());
    }
  }

  // Declared argument types are evaluated against the dims, then checked.
  for (auto [arg, value, argExpr] : llvm::zip(fn.args, args, call.getArgs())) {
    FailureOr<RankedTensorType> type = evaluateType(arg.type);
    if (failed(type))
      return failure();
    if (value.getTensorType() != *type) {
      (void)error(argExpr->getLoc(), "argument '" + arg.name.name + "' of " + name + " must be " +
                describeTensorType(*type) + ", got " + value.describe());
      note(arg.name.loc, "declared here");
      noteOrigin(value, "the argument");
      return failure();
    }
    scopes.back()[arg.name.name] = EvalValue::ofTensor(value.tensor,
                                                       value.origin);
  }

  // An error in the body: say which call it was, in which iteration.
  unsigned errorsBeforeBody = getNumErrors();
  bool bodyEmitted = false;
  // (The outermost kMaxCallNotes calls only: a deep chain is cut short.)
  llvm::scope_exit noteCall([&] {
    if (!bodyEmitted && getNumErrors() > errorsBeforeBody &&
        frames.size() <= kMaxCallNotes)
      note(call.getLoc(),
           "in this call of '" + name + "'" + describeIteration());
  });

  // The body: statements, then a final return.
  const ast::StmtList &body = fn.body;
  const ast::ReturnStmt *ret =
      body.empty() ? nullptr : dyn_cast<ast::ReturnStmt>(body.back().get());
  if (!ret)
    return error(fn.name.loc, "function '" + name +
                                  "' must end with 'return ...'");
  for (size_t i = 0; i + 1 < body.size(); ++i)
    if (failed(emitStatement(*body[i], /*inModel=*/false)))
      return failure();

  if (ret->getValues().size() != fn.results.size())
    return error(ret->getLoc(),
                 llvm::formatv("'{0}' declares {1} result{2} but returns {3}",
                               name, fn.results.size(),
                               fn.results.size() == 1 ? "" : "s",
                               ret->getValues().size()));
  SmallVector<EvalValue> results;
  for (auto [expr, declared] : llvm::zip(ret->getValues(), fn.results)) {
    FailureOr<EvalValue> value = evaluateTensor(*expr, "a result");
    if (failed(value))
      return failure();
    FailureOr<RankedTensorType> type = evaluateType(declared);
    if (failed(type))
      return failure();
    if (value->getTensorType() != *type) {
      (void)error(expr->getLoc(), "'" + name + "' returns " + value->describe() +
                                " but declares " + describeTensorType(*type));
      note(declared.loc, "the result type is declared here");
      return failure();
    }
    value->origin = call.getLoc();
    results.push_back(*value);
  }
  bodyEmitted = true;
  if (results.size() == 1)
    return results.front();
  EvalValue tuple;
  tuple.kind = EvalValue::Kind::Tuple;
  tuple.origin = call.getLoc();
  tuple.elements.assign(results.begin(), results.end());
  return tuple;
}
