//===- ArenaCheck.cpp - Proof that an arena placement is sound ------------===//
//
// Part of Kiln. A sweep over program points: transients enter the active
// set at their first use and leave it after their last; each one entering
// is compared with every active one.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/ArenaCheck.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace kiln::kernel;

/// The bytes [begin, end) a transient occupies, for messages.
static std::string describeBytes(int64_t offset, int64_t size) {
  return ("[" + llvm::Twine(offset) + ", " + llvm::Twine(offset + size) + ")")
      .str();
}

LogicalResult
kiln::kernel::verifyArenaPlacement(const BufferLiveness &liveness,
                                   std::optional<int64_t> arenaBytes) {
  ArrayRef<Transient> transients = liveness.getTransients();
  SmallVector<int64_t> offsets, sizes;
  for (const Transient &transient : transients) {
    AllocOp alloc = transient.alloc;
    sizes.push_back(alloc.getSizeInBytes());
    std::optional<int64_t> offset = alloc.getArenaOffset();
    if (!offset)
      return alloc.emitError("transient buffer has no arena offset");
    if (*offset < 0 || *offset % kArenaAlignment != 0)
      return alloc.emitError() << "arena offset " << *offset
                               << " is not a non-negative multiple of "
                               << kArenaAlignment;
    if (arenaBytes && *offset + alloc.getSizeInBytes() > *arenaBytes)
      return alloc.emitError()
             << "transient buffer at bytes "
             << describeBytes(*offset, alloc.getSizeInBytes())
             << " ends past the arena (" << *arenaBytes << " bytes)";
    offsets.push_back(*offset);
  }

  // Used transients by first use; the active ones are those not yet dead.
  SmallVector<unsigned> order;
  for (auto [index, transient] : llvm::enumerate(transients))
    if (transient.isUsed())
      order.push_back(index);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return transients[a].firstUse < transients[b].firstUse;
  });
  SmallVector<unsigned> active;
  for (unsigned index : order) {
    const Transient &current = transients[index];
    llvm::erase_if(active, [&](unsigned other) {
      return transients[other].lastUse < current.firstUse;
    });
    int64_t begin = offsets[index];
    int64_t end = begin + sizes[index];
    for (unsigned otherIndex : active) {
      const Transient &other = transients[otherIndex];
      int64_t otherBegin = offsets[otherIndex];
      int64_t otherEnd = otherBegin + sizes[otherIndex];
      if (end <= otherBegin || otherEnd <= begin)
        continue;
      // An in-place pair hands its bytes on at the op where both live.
      if (current.slot == other.slot && begin == otherBegin)
        continue;
      int64_t point = std::max(current.firstUse, other.firstUse);
      AllocOp alloc = current.alloc, otherAlloc = other.alloc;
      InFlightDiagnostic diag =
          alloc.emitError()
          << "transient buffer at bytes " << describeBytes(begin, end - begin)
          << " overlaps a buffer at bytes "
          << describeBytes(otherBegin, otherEnd - otherBegin)
          << " while both are live (program point " << point << ")";
      diag.attachNote(otherAlloc.getLoc()) << "the other buffer";
      diag.attachNote(liveness.getSchedule()[point]->getLoc())
          << "both are live at this op";
      return diag;
    }
    active.push_back(index);
  }
  return success();
}
