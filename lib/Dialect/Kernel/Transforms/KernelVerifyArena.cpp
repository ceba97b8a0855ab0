//===- KernelVerifyArena.cpp - Check an arena placement -------------------===//
//
// Part of Kiln. --kernel-verify-arena: runs ArenaCheck on every entry, after
// either placement pass.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/ArenaCheck.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELVERIFYARENA
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {
struct KernelVerifyArenaPass
    : kiln::kernel::impl::KernelVerifyArenaBase<KernelVerifyArenaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> arenaBytes;
    if (auto attr = module->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
      arenaBytes = attr.getInt();
    SymbolTable symbols(module);
    BufferAccessAnalysis access(&symbols);
    bool failed = false;
    for (auto entry : module.getOps<EntryOp>()) {
      BufferLiveness liveness(entry, access);
      failed |= mlir::failed(verifyArenaPlacement(liveness, arenaBytes));
    }
    if (failed)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
