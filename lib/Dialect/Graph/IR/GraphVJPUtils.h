//===- GraphVJPUtils.h - Helpers shared by the VJPs of the ops --*- C++ -*-===//
//
// Part of Kiln. Internal to the graph dialect's IR library: small builders
// that the DifferentiableOpInterface implementations (GraphVJP*.cpp) share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECT_GRAPH_IR_GRAPHVJPUTILS_H
#define KILN_LIB_DIALECT_GRAPH_IR_GRAPHVJPUTILS_H

#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace kiln::graph::vjp {

/// The ranked tensor type of a graph value.
inline mlir::RankedTensorType tensorTypeOf(mlir::Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType());
}

/// Whether `value` has a floating-point element type: only those carry
/// gradients.
inline bool isDifferentiable(mlir::Value value) {
  return mlir::isa<mlir::FloatType>(tensorTypeOf(value).getElementType());
}

/// A `graph.constant` of `type` with every element equal to `value`.
mlir::Value buildSplat(mlir::OpBuilder &builder, mlir::Location loc,
                       mlir::RankedTensorType type, double value);

/// Sums `value` down to `target`, which broadcasts to `value`'s shape (the
/// VJP of that broadcast): a `graph.reduce sum` over the leading dims and
/// over the dims where `target` is 1, then a `graph.reshape` to `target`.
/// Returns `value` itself when the shapes are equal.
mlir::Value buildSumToShape(mlir::OpBuilder &builder, mlir::Location loc,
                            mlir::Value value, mlir::RankedTensorType target);

/// Reshapes `value` to `type` unless it already has that type.
mlir::Value buildReshapeIfNeeded(mlir::OpBuilder &builder, mlir::Location loc,
                                 mlir::Value value,
                                 mlir::RankedTensorType type);

} // namespace kiln::graph::vjp

#endif // KILN_LIB_DIALECT_GRAPH_IR_GRAPHVJPUTILS_H
