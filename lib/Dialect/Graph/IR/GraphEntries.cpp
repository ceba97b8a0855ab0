//===- GraphEntries.cpp - The persistent names of graph functions ---------===//
//
// Part of Kiln. See GraphEntries.h.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace kiln;

StringAttr graph::getUpdateTarget(func::FuncOp function, unsigned index) {
  return function.getResultAttrOfType<StringAttr>(index,
                                                  GraphDialect::kUpdateAttr);
}

std::optional<unsigned> graph::findPersistentArgument(func::FuncOp function,
                                                      StringAttr name) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    for (StringRef attr : {GraphDialect::kParamAttr, GraphDialect::kStateAttr})
      if (function.getArgAttrOfType<StringAttr>(i, attr) == name)
        return i;
  return std::nullopt;
}

bool graph::hasTrainingPhase(func::FuncOp function) {
  return function.walk([](IfTrainingOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

void graph::resolveTrainingPhase(func::FuncOp function, bool training) {
  SmallVector<IfTrainingOp> switches;
  function.walk([&](IfTrainingOp op) { switches.push_back(op); });
  for (IfTrainingOp op : switches) {
    op.getResult().replaceAllUsesWith(training ? op.getTraining()
                                               : op.getInference());
    op.erase();
  }
  if (training || function.isExternal())
    return;
  auto returnOp =
      cast<func::ReturnOp>(function.getBody().front().getTerminator());
  BitVector updates(function.getNumResults());
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
    if (getUpdateTarget(function, i))
      updates.set(i);
  if (updates.none())
    return;
  returnOp->eraseOperands(updates);
  (void)function.eraseResults(updates);
  // What only the updates used (the running statistics' arithmetic).
  Block &body = function.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!op.hasTrait<OpTrait::IsTerminator>() && isOpTriviallyDead(&op))
      op.erase();
}
