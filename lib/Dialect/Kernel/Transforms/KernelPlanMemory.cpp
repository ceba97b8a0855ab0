//===- KernelPlanMemory.cpp - The memory planner --------------------------===//
//
// Part of Kiln. --kernel-plan-memory: per entry, live ranges and in-place
// slots from BufferLiveness, offsets from ArenaPacking, and a check of the
// result (ArenaCheck).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/ArenaCheck.h"
#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"
#include "kiln/Dialect/Kernel/Transforms/ArenaPacking.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELPLANMEMORY
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

/// Fails with an error at a transient that its defining op only reads.
static LogicalResult checkWrittenBeforeRead(const BufferLiveness &liveness) {
  for (const Transient &transient : liveness.getTransients()) {
    if (!transient.isUsed() || writes(transient.firstAccess))
      continue;
    Operation *reader = liveness.getSchedule()[transient.firstUse];
    AllocOp alloc = transient.alloc;
    InFlightDiagnostic diag =
        alloc.emitError() << "transient buffer is read before any op writes it";
    diag.attachNote(reader->getLoc()) << "first read here";
    return diag;
  }
  return success();
}

namespace {
struct KernelPlanMemoryPass
    : kiln::kernel::impl::KernelPlanMemoryBase<KernelPlanMemoryPass> {
  using KernelPlanMemoryBase::KernelPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(&getContext());
    SymbolTable symbols(module);
    BufferAccessAnalysis access(&symbols);
    int64_t arenaBytes = 0, lowerBound = 0;
    for (auto entry : module.getOps<EntryOp>()) {
      BufferLiveness liveness(entry, access);
      if (failed(checkWrittenBeforeRead(liveness)))
        return signalPassFailure();

      SmallVector<PackingBlock> blocks;
      for (const TransientSlot &slot : liveness.getSlots())
        blocks.push_back({slot.sizeInBytes, slot.firstUse, slot.lastUse});
      ArenaPacking packing = packArena(blocks);
      for (const Transient &transient : liveness.getTransients())
        AllocOp(transient.alloc)
            .setArenaOffsetAttr(
                builder.getI64IntegerAttr(packing.offsets[transient.slot]));

      entry->setAttr(kArenaBytesAttr,
                     builder.getI64IntegerAttr(packing.arenaBytes));
      entry->setAttr(kLiveLowerBoundAttr,
                     builder.getI64IntegerAttr(liveness.getLiveLowerBound()));
      if (verify && failed(verifyArenaPlacement(liveness, packing.arenaBytes)))
        return signalPassFailure();
      arenaBytes = std::max(arenaBytes, packing.arenaBytes);
      lowerBound = std::max(lowerBound, liveness.getLiveLowerBound());
    }
    module->setAttr(kArenaBytesAttr, builder.getI64IntegerAttr(arenaBytes));
    module->setAttr(kLiveLowerBoundAttr, builder.getI64IntegerAttr(lowerBound));
  }
};
} // namespace
