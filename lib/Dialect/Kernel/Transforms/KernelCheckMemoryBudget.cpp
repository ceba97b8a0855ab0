//===- KernelCheckMemoryBudget.cpp - The planner's last word ---------------===//
//
// Part of Kiln. --kernel-check-memory-budget: after placement, a module whose
// peak_bytes (ResidentBytes) exceeds the budget is an error that names the
// entry whose arena sets the peak, the peak, the budget and what the peak is
// made of. Recomputation (--graph-recompute) tries to meet the budget
// earlier; this check is what holds whatever it achieved to it.
//
//===----------------------------------------------------------------------===//

#include "kiln/ByteSize.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Kernel/Transforms/ResidentBytes.h"

#include "llvm/Support/FormatVariadic.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELCHECKMEMORYBUDGET
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

/// "76283904 (72.75 MiB)".
static std::string describeBytes(int64_t bytes) {
  return llvm::formatv("{0} ({1})", bytes, kiln::formatByteSize(bytes)).str();
}

LogicalResult kiln::kernel::checkMemoryBudget(ModuleOp module, int64_t budget) {
  ResidentBytes bytes = measureResidentBytes(module);
  if (budget <= 0 || bytes.peak() <= budget)
    return success();
  Operation *anchor = module;
  if (!bytes.arenaEntry.empty())
    if (Operation *entry = module.lookupSymbol(bytes.arenaEntry))
      anchor = entry;
  std::string entryName =
      bytes.arenaEntry.empty() ? std::string("the module")
                               : "@" + bytes.arenaEntry;
  // Only the kinds that hold bytes, so that the breakdown stays readable.
  std::string persistentParts;
  auto part = [&](StringRef name, int64_t size) {
    if (!size)
      return;
    if (!persistentParts.empty())
      persistentParts += ", ";
    persistentParts += llvm::formatv("{0} {1}", name, size).str();
  };
  part("params", bytes.params);
  part("gradients", bytes.gradients);
  part("optimizer state", bytes.optimizerState);
  part("inputs", bytes.inputs);
  part("outputs", bytes.outputs);
  part("constants", bytes.constants);
  part("runtime", bytes.runtime);
  return anchor->emitError(llvm::formatv(
      "{0} does not fit the memory budget: peak_bytes {1} > budget {2}; "
      "arena {3}, live lower bound {4}, + persistent {5}: {6}",
      entryName, describeBytes(bytes.peak()), describeBytes(budget),
      describeBytes(bytes.arena), bytes.arenaEntryLowerBound,
      describeBytes(bytes.persistent()), persistentParts));
}

namespace {
struct KernelCheckMemoryBudgetPass
    : kiln::kernel::impl::KernelCheckMemoryBudgetBase<
          KernelCheckMemoryBudgetPass> {
  using KernelCheckMemoryBudgetBase::KernelCheckMemoryBudgetBase;

  void runOnOperation() override {
    if (failed(checkMemoryBudget(getOperation(), budget)))
      signalPassFailure();
  }
};
} // namespace
