//===- GraphOps.cpp - Verifiers of the graph ops ---------------------------===//
// TEMPORARY STUBS: replaced by the real verifiers before this is committed.
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace kiln::graph;

LogicalResult ConstantOp::verify() { return success(); }
LogicalResult MatmulOp::verify() { return success(); }
LogicalResult BroadcastOp::verify() { return success(); }
LogicalResult ReduceOp::verify() { return success(); }
LogicalResult ReshapeOp::verify() { return success(); }
LogicalResult TransposeOp::verify() { return success(); }
LogicalResult SliceOp::verify() { return success(); }
LogicalResult ConcatOp::verify() { return success(); }
LogicalResult SplitOp::verify() { return success(); }
LogicalResult EmbeddingOp::verify() { return success(); }
LogicalResult LayerNormOp::verify() { return success(); }
LogicalResult SoftmaxOp::verify() { return success(); }
LogicalResult AttentionOp::verify() { return success(); }
LogicalResult CrossEntropyOp::verify() { return success(); }
LogicalResult DropoutOp::verify() { return success(); }
LogicalResult CastOp::verify() { return success(); }
double AttentionOp::getEffectiveScale() { return 1.0; }

#define GET_OP_CLASSES
#include "kiln/Dialect/Graph/IR/GraphOps.cpp.inc"
#include "kiln/Dialect/Graph/IR/GraphInterfaces.cpp.inc"
