//===- GraphEntries.h - The persistent names of graph functions -*- C++ -*-===//
//
// Part of Kiln. A graph function's parameters and state are arguments named
// by `graph.param` / `graph.state`; a result marked `graph.update` is the
// next value of one of them. The passes that build or rewrite entries and
// the conversion to kernels read them through these.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_IR_GRAPHENTRIES_H
#define KILN_DIALECT_GRAPH_IR_GRAPHENTRIES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace kiln::graph {

/// The name of the parameter or state that result `index` of `function`
/// updates (its `graph.update`), or null.
mlir::StringAttr getUpdateTarget(mlir::func::FuncOp function, unsigned index);
/// The argument of `function` that is the parameter or state `name`.
std::optional<unsigned> findPersistentArgument(mlir::func::FuncOp function,
                                               mlir::StringAttr name);

/// Whether `function` holds a `graph.if_training` (batch_norm).
bool hasTrainingPhase(mlir::func::FuncOp function);

/// Resolves each `graph.if_training` of `function` to its training or its
/// inference value. In inference the results that update state
/// (`graph.update`: batch_norm's running statistics) are dropped too, and
/// what only they used is erased: eval_step and predict change no state.
void resolveTrainingPhase(mlir::func::FuncOp function, bool training);

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_IR_GRAPHENTRIES_H
