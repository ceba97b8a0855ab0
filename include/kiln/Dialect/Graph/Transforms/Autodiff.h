//===- Autodiff.h - Reverse-mode autodiff of graph functions ----*- C++ -*-===//
//
// Part of Kiln. The reusable core of `--graph-autodiff`: building the forward
// and the backward of a model's `@forward` into any function, so that the
// pass that forms `@train_step` (forward, backward, optimizer update) calls
// the same code as the one that forms `@grad_step`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_TRANSFORMS_AUTODIFF_H
#define KILN_DIALECT_GRAPH_TRANSFORMS_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace kiln::graph {

/// The gradient of one parameter of the forward function.
struct ParameterGradient {
  /// The index of the parameter's argument in the forward function.
  unsigned argumentIndex;
  /// Its `graph.param` name.
  std::string name;
  /// d(loss)/d(parameter), of the parameter's type.
  mlir::Value gradient;
};

/// The values that buildGradients built, in the function being built.
struct ForwardAndGradients {
  /// The forward's results (the loss among them), in the forward's order.
  llvm::SmallVector<mlir::Value> forwardResults;
  /// The index of the loss (the result marked `graph.loss`) among them.
  unsigned lossIndex;
  /// One gradient per `graph.param` argument, in argument order.
  llvm::SmallVector<ParameterGradient> parameterGradients;
};

/// Builds the forward and the backward of `forward` at `builder`'s insertion
/// point: clones the forward's body with `arguments` (one per argument of
/// `forward`, of its type) in place of its arguments, then walks the cloned
/// ops in reverse from d(loss) = 1 (or `lossSeed`, a value of the loss's
/// type: fp16's loss scale), asking each op for its VJP through
/// DifferentiableOpInterface and adding up the cotangents of values used more
/// than once. Only values that depend on a parameter are differentiated;
/// integer values never are. A parameter with no path to the loss gets a zero
/// gradient (a `graph.constant`) and a warning at its argument. Backward ops
/// whose values reach no gradient are erased before returning.
///
/// Errors (no loss, an op on the path without a VJP, a VJP of the wrong
/// type) are emitted at the offending location and return failure; the ops
/// built so far are then left in place for the caller to discard.
mlir::FailureOr<ForwardAndGradients>
buildGradients(mlir::OpBuilder &builder, mlir::func::FuncOp forward,
               mlir::ValueRange arguments, mlir::Value lossSeed = {});

/// Builds `func.func @<name>` next to `forward`, with its arguments and
/// argument attributes, returning the loss, the forward's other results (with
/// their result attributes), then each parameter's gradient marked
/// `graph.grad = "<name>"`. This is what `--graph-autodiff` does with
/// name = "grad_step". Fails (after emitting an error) if a symbol of that
/// name exists or buildGradients fails; nothing is left behind then.
mlir::FailureOr<mlir::func::FuncOp>
buildGradientFunction(mlir::func::FuncOp forward, llvm::StringRef name);

/// buildGradientFunction of the forward's training phase: where `forward`
/// holds `graph.if_training` (batch_norm), of a copy of it with the training
/// values chosen (batch statistics), placed beside it while the gradients
/// are built; otherwise of `forward` itself.
mlir::FailureOr<mlir::func::FuncOp>
buildTrainingGradientFunction(mlir::func::FuncOp forward, llvm::StringRef name);

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_TRANSFORMS_AUTODIFF_H
