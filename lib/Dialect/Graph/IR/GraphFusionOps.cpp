//===- GraphFusionOps.cpp - graph.fusion and graph.yield -------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

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

FusionAnchorOpInterface FusionOp::getAnchor() {
  Block &body = getBody().front();
  if (&body.front() == body.getTerminator())
    return {};
  return dyn_cast<FusionAnchorOpInterface>(body.getTerminator()->getPrevNode());
}

LogicalResult FusionOp::verify() {
  YieldOp yield = getYield();
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but returns "
           << getResultTypes();
  if (getNumResults() == 0)
    return emitOpError("must yield at least one value");
  FusionAnchorOpInterface anchor = getAnchor();
  // The producers' iteration space: the anchor's fused operand, or the
  // shape every result shares.
  unsigned firstProduced = 0;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(getResult(0).getType()).getShape();
  if (anchor) {
    firstProduced = anchor->getNumResults();
    if (yield.getValues().take_front(firstProduced) != anchor->getResults())
      return emitOpError("must yield the results of its anchor ")
             << anchor->getName() << " first";
    Value fused = anchor->getOperand(anchor.getFusedOperandIndex());
    Operation *producer = fused.getDefiningOp();
    if (!producer || producer->getParentOp() != getOperation())
      return emitOpError("anchor ")
             << anchor->getName()
             << " must read its fused operand from the region";
    for (auto [index, operand] : llvm::enumerate(anchor->getOperands())) {
      Operation *definition = operand.getDefiningOp();
      if (index != anchor.getFusedOperandIndex() && definition &&
          definition->getParentOp() == getOperation())
        return emitOpError("anchor ")
               << anchor->getName() << " may read only operand #"
               << anchor.getFusedOperandIndex() << " from the region";
    }
    shape = cast<RankedTensorType>(fused.getType()).getShape();
    // The anchor's kernel computes only what its fused operand needs: the
    // other yielded values must be among that.
    llvm::SmallPtrSet<Operation *, 16> needed;
    SmallVector<Operation *> worklist = {producer};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (op->getParentOp() != getOperation() || !needed.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *definition = operand.getDefiningOp())
          worklist.push_back(definition);
    }
    for (Value value : yield.getValues().drop_front(firstProduced)) {
      Operation *definition = value.getDefiningOp();
      if (!definition || !needed.contains(definition))
        return emitOpError("yields a value its anchor ")
               << anchor->getName() << " does not read";
    }
  }
  for (Type type : llvm::drop_begin(getResultTypes(), firstProduced))
    if (cast<RankedTensorType>(type).getShape() != shape)
      return emitOpError("results must share one shape (the iteration "
                         "space); got ")
             << getResultTypes();
  for (Operation &op : getBody().front().without_terminator())
    if (&op != anchor.getOperation() && !isFusible(&op))
      return op.emitOpError("cannot be fused: not elementwise, data "
                            "movement or a splat constant, nor an anchor "
                            "ending the region");
  return success();
}

FusionOp FusionOp::dropUnusedResults() {
  SmallVector<Value> used, kept;
  SmallVector<Type> types;
  for (auto [result, yielded] :
       llvm::zip_equal(getResults(), getYield()->getOperands())) {
    if (result.use_empty())
      continue;
    used.push_back(result);
    types.push_back(result.getType());
    kept.push_back(yielded);
  }
  if (used.size() == getNumResults() || used.empty())
    return *this;
  OpBuilder builder(*this);
  auto pruned = FusionOp::create(builder, getLoc(), types);
  pruned.getBody().takeBody(getBody());
  pruned.getYield()->setOperands(kept);
  for (auto [old, fresh] : llvm::zip_equal(used, pruned.getResults()))
    old.replaceAllUsesWith(fresh);
  erase();
  Block &body = pruned.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!op.hasTrait<OpTrait::IsTerminator>() && isOpTriviallyDead(&op))
      op.erase();
  return pruned;
}
