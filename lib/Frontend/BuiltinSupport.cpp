//===- BuiltinSupport.cpp - Helpers of the builtin ops --------------------===//
//
// Part of Kiln. Binding results, shape errors with notes on the operands,
// axes: what every builtin's emitter uses.
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

/// Reports a shape-rule failure at the call, with a note for each operand.
Result
builtins::shapeError(ModelEmitter &emitter, SMLoc loc, StringRef callee,
                     const std::string &message,
                     ArrayRef<std::pair<StringRef, EvalValue>> operands) {
  // The shape rules often name the op already ("matmul contracting dims
  // differ"); say it once.
  if (StringRef(message).starts_with((callee + " ").str()))
    (void)emitter.error(loc, message);
  else
    (void)emitter.error(loc, callee + ": " + message);
  for (const auto &[role, value] : operands)
    emitter.noteOrigin(value, role);
  return failure();
}

Type builtins::elementTypeOf(const EvalValue &value) {
  return value.getTensorType().getElementType();
}

RankedTensorType builtins::tensorType(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

/// Normalizes a user axis (negative counts from the back) for `rank`.
FailureOr<int64_t> builtins::userAxis(ModelEmitter &emitter,
                                      const CallArguments &args, StringRef name,
                                      int64_t fallback, int64_t rank) {
  FailureOr<int64_t> axis = args.integer(name, fallback);
  if (failed(axis))
    return failure();
  std::string message;
  FailureOr<int64_t> normalized = graph::normalizeAxis(*axis, rank, message);
  if (failed(normalized))
    return emitter.error(args.getLoc(name), message);
  return normalized;
}

Result builtins::tensorResult(FailureOr<Value> value, SMLoc loc) {
  if (failed(value))
    return failure();
  return EvalValue::ofTensor(*value, loc);
}
