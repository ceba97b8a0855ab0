//===- GraphFolds.cpp - Folds of the graph ops ----------------------------===//
//
// Part of Kiln. Folds and canonicalizations, kept apart from the verifiers.
// Only folds that are correct by construction live here: an op that leaves
// its input unchanged folds to that input.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace kiln::graph;

OpFoldResult ConstantOp::fold(FoldAdaptor adaptor) { return getValue(); }

/// A broadcast to its own shape copies nothing.
OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// A reshape to the same type is the identity (the layout is row-major).
OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// Only the identity permutation is the identity: a 4x4 transposed with
/// [1, 0] keeps its type but not its values.
OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  for (auto [index, dim] : llvm::enumerate(getPerm()))
    if (dim != static_cast<int64_t>(index))
      return {};
  return getInput();
}

/// A slice of the input's own shape can only start at 0: the whole input.
OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// A cast to the input's own element type converts nothing.
OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}
