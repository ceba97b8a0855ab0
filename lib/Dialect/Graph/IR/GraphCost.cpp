//===- GraphCost.cpp - CostOpInterface of the graph ops --------------------===//
// TEMPORARY STUBS
//===----------------------------------------------------------------------===//
#include "kiln/Dialect/Graph/IR/GraphOps.h"
using namespace mlir;
using namespace kiln::graph;
int64_t kiln::graph::defaultBytesAccessed(Operation *op) { return 0; }
#define STUB(Op) int64_t Op::getFlops() { return 0; }
STUB(ConstantOp) STUB(NegOp) STUB(ExpOp) STUB(LogOp) STUB(TanhOp) STUB(SqrtOp)
STUB(RsqrtOp) STUB(ReluOp) STUB(GeluOp) STUB(AddOp) STUB(SubOp) STUB(MulOp)
STUB(DivOp) STUB(PowOp) STUB(MatmulOp) STUB(BroadcastOp) STUB(ReduceOp)
STUB(ReshapeOp) STUB(TransposeOp) STUB(SliceOp) STUB(ConcatOp) STUB(SplitOp)
STUB(EmbeddingOp) STUB(LayerNormOp) STUB(SoftmaxOp) STUB(AttentionOp)
STUB(CrossEntropyOp) STUB(DropoutOp) STUB(CastOp)
