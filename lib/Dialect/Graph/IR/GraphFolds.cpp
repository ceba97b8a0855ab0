//===- GraphFolds.cpp - Folds of the graph ops -----------------------------===//
//
// Part of Kiln. Folds and canonicalizations, kept apart from the verifiers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace kiln::graph;

OpFoldResult ConstantOp::fold(FoldAdaptor adaptor) { return getValue(); }
