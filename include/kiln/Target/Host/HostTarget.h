//===- HostTarget.h - The cpu backend: kernels to kernels.so ----*- C++ -*-===//
//
// Part of Kiln. Turns the kernel.func ops of a kernel-dialect module into a
// shared object of exported functions
//
//   void kiln_kN(void **buffers, int64_t begin, int64_t end);
//
// (DESIGN.md, "Kernel code generation"): the LLVM dialect
// (--convert-kernel-to-host-llvm), LLVM IR optimized at -O2 with loop and
// SLP vectorization, an x86-64 object with floating-point contraction off,
// and `ld.lld-22 -shared`. Math functions are libm calls, so the object needs
// nothing beyond libc and libm.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_HOST_HOSTTARGET_H
#define KILN_TARGET_HOST_HOSTTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace mlir {
class DialectRegistry;
class TimingScope;
} // namespace mlir

namespace kiln {

/// How host code is generated.
struct HostTargetOptions {
  /// The CPU to generate code for. The default, x86-64-v2 (SSE4.2, POPCNT,
  /// no AVX), runs on every x86-64 machine of the last decade, so an
  /// artifact compiled here runs anywhere; "native" selects this machine's
  /// CPU and features.
  std::string cpu = "x86-64-v2";
};

/// `cpu` resolved to what code is generated for: the name itself, or for
/// "native" this machine's CPU name and its enabled features
/// ("native:znver4+avx2+..."), so that the text identifies the code.
std::string describeHostCpu(llvm::StringRef cpu);

/// Registers the translations from the dialects the backend produces to
/// LLVM IR.
void registerHostTranslations(mlir::DialectRegistry &registry);

/// Lowers a copy of `kernelModule`'s kernels to the LLVM dialect and
/// translates it to LLVM IR optimized at -O3 for `options`. Errors are
/// emitted as diagnostics on the module.
mlir::FailureOr<std::unique_ptr<llvm::Module>>
buildHostLLVMModule(mlir::ModuleOp kernelModule, llvm::LLVMContext &context,
                    const HostTargetOptions &options);

/// `kernelModule`'s kernels into the shared object `outputPath`: optimized
/// and compiled in parts on every core (the parts do not depend on the core
/// count), then linked. Its phases are timed under `timing` when given; the
/// bytes written go to `written` when given.
mlir::LogicalResult buildKernelsSharedObject(
    mlir::ModuleOp kernelModule, llvm::StringRef outputPath,
    const HostTargetOptions &options, mlir::TimingScope *timing = nullptr,
    std::string *written = nullptr);

} // namespace kiln

#endif // KILN_TARGET_HOST_HOSTTARGET_H
