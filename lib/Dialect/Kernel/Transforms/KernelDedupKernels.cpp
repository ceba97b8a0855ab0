//===- KernelDedupKernels.cpp - One kernel.func per distinct body
//----------===//
//
// Part of Kiln. --kernel-dedup-kernels: identical kernel.funcs (the same
// kernel of each repeated layer, over other buffers) become one, so that
// code generation, the longest part of a compile, compiles each once.
// Kernels are compared structurally (OperationEquivalence), by a hash
// first: printing each to text cost GPT-2 small's compile 0.05 s.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringMap.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELDEDUPKERNELS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {

/// The kernel's attributes but its name: equal kernels share them.
SmallVector<NamedAttribute> getAttributesButName(FuncOp func) {
  SmallVector<NamedAttribute> attributes;
  for (NamedAttribute attribute : func->getAttrs())
    if (attribute.getName() != SymbolTable::getSymbolAttrName())
      attributes.push_back(attribute);
  return attributes;
}

/// A hash that equal kernels share: their attributes but the name, and
/// each op of the body by its name, attributes and types (not by which
/// values it uses).
llvm::hash_code hashKernel(FuncOp func) {
  llvm::hash_code hash = llvm::hash_combine_range(getAttributesButName(func));
  func.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

/// Whether two kernels are the same but for their names and locations:
/// the same attributes, and bodies equal op for op (signature, attributes,
/// types and which value each op uses).
bool areEqualKernels(FuncOp a, FuncOp b) {
  return getAttributesButName(a) == getAttributesButName(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

struct KernelDedupKernelsPass
    : kiln::kernel::impl::KernelDedupKernelsBase<KernelDedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The first kernel of each kind, by hash.
    llvm::DenseMap<unsigned, SmallVector<FuncOp, 1>> firstOfHash;
    // Each duplicate's name, and the kernel its launches run instead.
    llvm::StringMap<FlatSymbolRefAttr> replacement;
    SmallVector<FuncOp> duplicates;
    for (FuncOp func : module.getOps<FuncOp>()) {
      SmallVector<FuncOp, 1> &firsts =
          firstOfHash[static_cast<unsigned>(hashKernel(func))];
      auto equal = llvm::find_if(
          firsts, [&](FuncOp first) { return areEqualKernels(first, func); });
      if (equal == firsts.end()) {
        firsts.push_back(func);
        continue;
      }
      replacement[func.getSymName()] =
          FlatSymbolRefAttr::get(equal->getSymNameAttr());
      duplicates.push_back(func);
    }
    if (duplicates.empty())
      return;
    // Launches sit in kernel.entry ops, never inside kernels: one walk of
    // the entries redirects them all.
    for (EntryOp entry : module.getOps<EntryOp>())
      entry.walk([&](LaunchOp launch) {
        auto found = replacement.find(launch.getKernel());
        if (found != replacement.end())
          launch.setKernelAttr(found->second);
      });
    // kernel.launch is the one op that names a kernel (the module's
    // verifier would catch a launch of an erased one).
    for (FuncOp duplicate : duplicates)
      duplicate.erase();
  }
};

} // namespace
