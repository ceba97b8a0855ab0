//===- Interpreter.h - Reference interpreter of the graph dialect -*- C++ -*-=//
//
// Part of Kiln. Evaluates a `func.func` of graph ops on host tensors, op by op
// in program order. It is the oracle that passes and backends are checked
// against, so it favours plain, obviously correct loops over speed.
//
// Numerics (the contract the tests rely on):
// - An op computes in its element type: f32 ops in float, f64 ops in double.
//   f16 and bf16 are computed in float and each result element is rounded to
//   the type once (round to nearest even).
// - Reductions (reduce, the sums inside matmul, softmax, layer_norm,
//   attention and cross_entropy) accumulate in the element type, sequentially,
//   in increasing row-major order of the reduced elements, starting from 0
//   (sum) or -inf (max). mean = sum / count.
// - Random numbers come from Philox 4x32-10 with the keying scheme of
//   kiln/Philox.h.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_INTERPRETER_INTERPRETER_H
#define KILN_INTERPRETER_INTERPRETER_H

#include "kiln/Interpreter/Tensor.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
class Operation;
class DictionaryAttr;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace kiln::interp {

/// An error found while interpreting, located at the op (or argument) that
/// caused it. log() prints "file:line:col: message"; a caller with a
/// SourceMgr can instead report getLocation() as a diagnostic to show the
/// model's source line.
class InterpreterError : public llvm::ErrorInfo<InterpreterError> {
public:
  static char ID;
  InterpreterError(mlir::Location location, std::string message)
      : location(location), message(std::move(message)) {}

  mlir::Location getLocation() const { return location; }
  llvm::StringRef getMessage() const { return message; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  mlir::Location location;
  std::string message;
};

/// Makes an InterpreterError at `op`'s location, the op's name prefixed to
/// the message ("'graph.embedding' id 300 is outside [0, 256)").
llvm::Error makeOpError(mlir::Operation *op, const llvm::Twine &message);

/// How a function is run.
struct RunOptions {
  /// The run seed: the Philox key of dropout.
  uint64_t seed = 0;
  /// The training step: the Philox counter's step word for dropout.
  uint32_t step = 0;
  /// Whether dropout is active (train_step) or the identity (eval, predict).
  bool training = false;
  /// The micro-batch of an accumulated step (accumulate_step's m-th call
  /// since the last update): dropout's element e is element m * size + e
  /// of the whole batch's mask, as the compiled kernels key it.
  uint32_t microBatch = 0;
};

/// Evaluates `function` on `arguments` (one per function argument, each of
/// the argument's exact type) and returns its results in order. Errors
/// (unsupported ops or types, out-of-range ids or targets, mismatched
/// arguments) come back as InterpreterError; nothing aborts.
llvm::Expected<llvm::SmallVector<Tensor>>
runFunction(mlir::func::FuncOp function, llvm::ArrayRef<Tensor> arguments,
            const RunOptions &options = {});

/// The value of a parameter from its `graph.init` dictionary
/// (kind = zeros | ones | constant{value} | normal{std} | uniform{low,high}).
/// Random kinds draw from Philox with key = `seed`, stream =
/// philox::hashName(name), step = philox::kInitializerStep, element = the
/// row-major index: so a parameter's values depend only on the seed and its
/// name, never on its position or on the other parameters.
///   normal:  std * philox::normalFor(...)   (mean 0), computed in double
///   uniform: low + (high - low) * uniform(word), computed in double
/// then rounded once to the element type. `location` is used for errors.
llvm::Expected<Tensor> initializeParameter(llvm::StringRef name,
                                           mlir::RankedTensorType type,
                                           mlir::DictionaryAttr init,
                                           uint64_t seed,
                                           mlir::Location location);

/// A parameter of a function, materialized from its initializer.
struct InitializedParameter {
  /// The index of the function argument.
  unsigned argumentIndex;
  /// The `graph.param` name.
  std::string name;
  Tensor value;
};

/// Materializes every argument of `function` that carries `graph.param`, in
/// argument order. A parameter without `graph.init` is an error.
llvm::Expected<llvm::SmallVector<InitializedParameter>>
initializeParameters(mlir::func::FuncOp function, uint64_t seed);
/// The same for the `graph.state` arguments of `function` -- @forward's are
/// the model's buffers (batch_norm's running statistics); a train entry's
/// optimizer state starts at its `zeros`. Weight copies (`rounded`) are
/// left out: they derive from their weights.
llvm::Expected<llvm::SmallVector<InitializedParameter>>
initializeBuffers(mlir::func::FuncOp function, uint64_t seed);

} // namespace kiln::interp

#endif // KILN_INTERPRETER_INTERPRETER_H
