//===- KernelDedupKernels.cpp - One kernel.func per distinct body ----------===//
//
// Part of Kiln. --kernel-dedup-kernels: identical kernel.funcs (the same
// kernel of each repeated layer, over other buffers) become one, so that
// code generation, the longest part of a compile, compiles each once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELDEDUPKERNELS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {

/// The kernel as printed, without its name and locations: equal texts are
/// equal kernels (signature, attributes and body, value names local).
std::string kernelText(FuncOp func) {
  std::string text;
  llvm::raw_string_ostream os(text);
  func->print(os, OpPrintingFlags().useLocalScope().enableDebugInfo(false));
  // "kernel.func @k12(" -> "kernel.func @(": the name is the one difference
  // allowed. (A symbol name that needs quoting prints as @"...".)
  size_t at = text.find('@');
  size_t open = text.find('(', at);
  if (at != std::string::npos && open != std::string::npos)
    text.erase(at + 1, open - at - 1);
  return text;
}

struct KernelDedupKernelsPass
    : kiln::kernel::impl::KernelDedupKernelsBase<KernelDedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<FuncOp> firstOfText;
    // Each duplicate's name, and the kernel its launches run instead.
    llvm::StringMap<FlatSymbolRefAttr> replacement;
    SmallVector<FuncOp> duplicates;
    for (FuncOp func : module.getOps<FuncOp>()) {
      auto [it, inserted] = firstOfText.try_emplace(kernelText(func), func);
      if (inserted)
        continue;
      replacement[func.getSymName()] =
          FlatSymbolRefAttr::get(it->second.getSymNameAttr());
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
