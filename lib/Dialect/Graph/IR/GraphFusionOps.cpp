//===- GraphFusionOps.cpp - graph.fusion and graph.yield -------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace kiln::graph;

bool kiln::graph::isFusible(Operation *op) {
  if (!isa<FusibleOpInterface>(op))
    return false;
  if (auto constant = dyn_cast<ConstantOp>(op))
    return isa<SplatElementsAttr>(constant.getValue());
  return true;
}

YieldOp FusionOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult FusionOp::verify() {
  YieldOp yield = getYield();
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but returns "
           << getResultTypes();
  if (getNumResults() == 0)
    return emitOpError("must yield at least one value");
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(getResult(0).getType()).getShape();
  for (Type type : getResultTypes())
    if (cast<RankedTensorType>(type).getShape() != shape)
      return emitOpError("results must share one shape (the iteration "
                         "space); got ")
             << getResultTypes();
  for (Operation &op : getBody().front().without_terminator())
    if (!isFusible(&op))
      return op.emitOpError("cannot be fused: not elementwise, data "
                            "movement or a splat constant");
  return success();
}
