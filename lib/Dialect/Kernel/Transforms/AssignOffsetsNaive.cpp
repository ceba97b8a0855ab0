//===- AssignOffsetsNaive.cpp - One arena slice per transient ---------------===//
//
// Part of Kiln. The stand-in for the memory planner: each kernel.alloc of an
// entry gets the next 64-byte aligned offset; nothing is shared. The real
// planner (`--kernel-plan-memory`) replaces exactly this pass.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELASSIGNOFFSETSNAIVE
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {
struct KernelAssignOffsetsNaivePass
    : kiln::kernel::impl::KernelAssignOffsetsNaiveBase<
          KernelAssignOffsetsNaivePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(&getContext());
    int64_t arenaBytes = 0;
    for (auto entry : module.getOps<EntryOp>()) {
      int64_t next = 0;
      entry.walk([&](AllocOp alloc) {
        alloc.setArenaOffsetAttr(builder.getI64IntegerAttr(next));
        next = llvm::alignTo(next + alloc.getSizeInBytes(), kArenaAlignment);
      });
      arenaBytes = std::max(arenaBytes, next);
    }
    module->setAttr(kArenaBytesAttr, builder.getI64IntegerAttr(arenaBytes));
  }
};
} // namespace
