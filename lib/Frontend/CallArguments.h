//===- CallArguments.h - Binding a call's arguments (internal) --*- C++ -*-===//
//
// Part of Kiln. Matches a call's positional and keyword arguments against a
// builtin's signature, evaluates them, and hands them out by name with
// typed accessors that report located errors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_FRONTEND_CALLARGUMENTS_H
#define KILN_LIB_FRONTEND_CALLARGUMENTS_H

#include "ModelEmitter.h"

namespace kiln::frontend {

/// One parameter of a builtin: its name, and whether a call must give it.
struct BuiltinParam {
  llvm::StringRef name;
  bool required = true;
};

/// The evaluated arguments of one call.
class CallArguments {
public:
  /// Binds and evaluates the arguments of `call` against `params`. With
  /// `variadicFirst`, every positional argument goes to a list under the
  /// first parameter's name (`concat(a, b, c, axis=1)`).
  static mlir::FailureOr<CallArguments>
  bind(ModelEmitter &emitter, const ast::CallExpr &call,
       llvm::ArrayRef<BuiltinParam> params, bool variadicFirst = false);

  bool has(llvm::StringRef name) const { return values.count(name); }
  llvm::SMLoc getLoc(llvm::StringRef name) const;
  llvm::SMLoc getCallLoc() const { return call->getLoc(); }
  const EvalValue &get(llvm::StringRef name) const;

  mlir::FailureOr<EvalValue> tensor(llvm::StringRef name) const;
  /// A tensor whose element type is a float type.
  mlir::FailureOr<EvalValue> floatTensor(llvm::StringRef name) const;
  mlir::FailureOr<int64_t> integer(llvm::StringRef name,
                                   std::optional<int64_t> fallback = {}) const;
  mlir::FailureOr<double> number(llvm::StringRef name,
                                 std::optional<double> fallback = {}) const;
  mlir::FailureOr<bool> boolean(llvm::StringRef name, bool fallback) const;
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  integerList(llvm::StringRef name) const;
  /// A bare word such as `bf16`.
  mlir::FailureOr<llvm::StringRef> word(llvm::StringRef name) const;
  /// The tensors of a variadic first parameter.
  mlir::FailureOr<llvm::SmallVector<EvalValue>>
  tensorList(llvm::StringRef name) const;

private:
  ModelEmitter *emitter = nullptr;
  const ast::CallExpr *call = nullptr;
  llvm::StringMap<EvalValue> values;
  llvm::StringMap<llvm::SMLoc> locs;
};

} // namespace kiln::frontend

#endif // KILN_LIB_FRONTEND_CALLARGUMENTS_H
