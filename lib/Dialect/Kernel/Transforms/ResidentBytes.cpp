//===- ResidentBytes.cpp - The bytes a compiled step holds ----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Transforms/ResidentBytes.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln::kernel;

ResidentBytes kiln::kernel::measureResidentBytes(ModuleOp module) {
  ResidentBytes bytes;
  auto intAttr = [](Operation *op, StringRef key) -> int64_t {
    auto value = op->getAttrOfType<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  };
  bytes.arena = intAttr(module, kArenaBytesAttr);

  // Persistent buffers: one per name across entries, as in the plan.
  llvm::StringSet<> seen;
  int64_t largestArena = -1;
  for (auto entry : module.getOps<EntryOp>()) {
    for (unsigned i = 0, e = entry.getNumArguments(); i < e; ++i) {
      if (!seen.insert(entry.getBufferName(i)).second)
        continue;
      int64_t size =
          getBufferSizeInBytes(cast<MemRefType>(entry.getArgument(i).getType()));
      switch (entry.getBufferKind(i)) {
      case BufferKind::Param:
        bytes.params += size;
        break;
      case BufferKind::OptimizerState:
        bytes.optimizerState += size;
        break;
      case BufferKind::Gradient:
        bytes.gradients += size;
        break;
      case BufferKind::Input:
        bytes.inputs += size;
        break;
      case BufferKind::Output:
        bytes.outputs += size;
        break;
      case BufferKind::RngState:
      case BufferKind::Status:
        bytes.runtime += size;
        break;
      }
    }
    entry.walk([&](ConstantOp constant) {
      bytes.constants += getBufferSizeInBytes(constant.getType());
    });
    int64_t arena = intAttr(entry, kArenaBytesAttr);
    if (arena > largestArena) {
      largestArena = arena;
      bytes.arenaEntry = entry.getSymName().str();
      bytes.arenaEntryLowerBound = intAttr(entry, kLiveLowerBoundAttr);
    }
  }
  return bytes;
}
