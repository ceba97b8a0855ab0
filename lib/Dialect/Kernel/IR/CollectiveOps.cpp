//===- CollectiveOps.cpp - Collectives over the ranks ---------------------===//
//
// Part of Kiln. The verifiers of kernel.collective_start and
// kernel.collective_wait: what a bucket may hold, and how a start pairs with
// its wait.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace kiln::kernel;

LogicalResult CollectiveStartOp::verify() {
  if (getBuffers().empty())
    return emitOpError() << "starts a collective over no buffers";
  auto entry = (*this)->getParentOfType<EntryOp>();
  llvm::SmallPtrSet<Value, 8> seen;
  for (auto [index, buffer] : llvm::enumerate(getBuffers())) {
    auto argument = dyn_cast<BlockArgument>(buffer);
    if (!argument || argument.getOwner() != &entry.getBody().front() ||
        !entry.isGradientAccumulator(argument.getArgNumber()))
      return emitOpError() << "buffer " << index
                           << " is not a gradient accumulator (an entry "
                              "argument of kind 'optimizer_state' named "
                              "'<param>.grad_acc')";
    if (!cast<MemRefType>(buffer.getType()).getElementType().isF32())
      return emitOpError() << "buffer " << index << " ('"
                           << entry.getBufferName(argument.getArgNumber())
                           << "') is not f32: the sums run in f32";
    if (!seen.insert(buffer).second)
      return emitOpError() << "buffer " << index << " ('"
                           << entry.getBufferName(argument.getArgNumber())
                           << "') is in the bucket twice";
  }
  // Buckets are numbered in program order.
  int64_t expected = 0;
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
    if (auto previous = dyn_cast<CollectiveStartOp>(op)) {
      expected = static_cast<int64_t>(previous.getBucket()) + 1;
      break;
    }
  if (static_cast<int64_t>(getBucket()) != expected)
    return emitOpError() << "is bucket " << getBucket()
                         << ", but the entry's starts number their buckets "
                            "0, 1, ... in program order: expected "
                         << expected;
  if (!getToken().hasOneUse() ||
      !isa<CollectiveWaitOp>(*getToken().getUsers().begin()))
    return emitOpError() << "must be waited for by exactly one "
                            "kernel.collective_wait";
  return success();
}

CollectiveStartOp CollectiveWaitOp::getStart() {
  return getToken().getDefiningOp<CollectiveStartOp>();
}

LogicalResult CollectiveWaitOp::verify() {
  CollectiveStartOp start = getStart();
  if (!start)
    return emitOpError() << "waits for a token that no "
                            "kernel.collective_start made";
  if (start->getBlock() != (*this)->getBlock() ||
      !start->isBeforeInBlock(*this))
    return emitOpError() << "must come after its kernel.collective_start";
  if (getBuffers() != start.getBuffers())
    return emitOpError() << "must take the buffers of its "
                            "kernel.collective_start, in its order";
  return success();
}
