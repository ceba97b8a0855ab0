//===- HostObjectEmitter.cpp - LLVM IR to an x86-64 kernels.so -------------===//
//
// Part of Kiln. Translates the lowered kernels to LLVM IR, optimizes them
// at -O3 with loop and SLP vectorization (LLVM's PassBuilder), emits an
// object with the X86 target machine (floating-point contraction off: no
// FMA forms that the reference interpreter does not compute), and links it
// with ld.lld-22 into a shared object that needs only libc and libm.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Host/HostTarget.h"
#include "kiln/Conversion/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <mutex>

using namespace mlir;

#ifndef KILN_LD_LLD
#define KILN_LD_LLD ""
#endif
#ifndef KILN_LIBM_DIR
#define KILN_LIBM_DIR ""
#endif

static constexpr llvm::StringLiteral kHostTriple = "x86_64-unknown-linux-gnu";

void kiln::registerHostTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

/// This machine's CPU features, as the target machine takes them.
static llvm::SubtargetFeatures getHostFeatures() {
  llvm::SubtargetFeatures hostFeatures;
  for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    hostFeatures.AddFeature(feature, enabled);
  return hostFeatures;
}

std::string kiln::describeHostCpu(StringRef cpu) {
  if (cpu != "native")
    return cpu.str();
  return "native:" + llvm::sys::getHostCPUName().str() + ":" +
         getHostFeatures().getString();
}

/// The X86 target machine for `options`, or null with `error` set.
static std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const kiln::HostTargetOptions &options,
                    std::string &error) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
  llvm::Triple triple(kHostTriple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu = options.cpu, features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    features = getHostFeatures().getString();
  }
  llvm::TargetOptions targetOptions;
  // Determinism: a * b + c stays two roundings, as in the interpreter.
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

/// -O3 with loop and SLP vectorization.
static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, modules);
}

FailureOr<std::unique_ptr<llvm::Module>>
kiln::buildHostLLVMModule(ModuleOp kernelModule, llvm::LLVMContext &context,
                          const HostTargetOptions &options) {
  OwningOpRef<ModuleOp> lowered = cast<ModuleOp>(kernelModule->clone());
  // Module attributes of the model (graph.*, kernel.*) have no meaning in
  // LLVM IR.
  for (NamedAttribute attr : llvm::to_vector(lowered->getOperation()->getAttrs()))
    if (attr.getName().getValue().contains('.'))
      lowered->getOperation()->removeAttr(attr.getName());

  PassManager pm(kernelModule.getContext());
  pm.addPass(createConvertKernelToHostLLVM());
  if (failed(pm.run(*lowered)))
    return failure();

  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(*lowered, context, "kernels");
  if (!module)
    return kernelModule.emitError("cannot translate the kernels to LLVM IR");

  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine)
    return kernelModule.emitError("no x86-64 target machine: ") << error;
  module->setTargetTriple(machine->getTargetTriple());
  module->setDataLayout(machine->createDataLayout());
  for (llvm::Function &function : *module)
    if (!function.isDeclaration()) {
      function.addFnAttr("target-cpu", machine->getTargetCPU());
      if (!machine->getTargetFeatureString().empty())
        function.addFnAttr("target-features",
                           machine->getTargetFeatureString());
    }
  optimize(*module, *machine);
  return module;
}

LogicalResult kiln::linkSharedObject(llvm::Module &module,
                                     llvm::StringRef outputPath,
                                     const HostTargetOptions &options,
                                     Location loc) {
  llvm::StringRef linker = KILN_LD_LLD;
  if (linker.empty() || !llvm::sys::fs::can_execute(linker))
    return emitError(loc) << "cannot link kernels.so: ld.lld-22 was not found "
                             "when Kiln was configured (install lld-22 and "
                             "re-run cmake)";
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine)
    return emitError(loc) << "no x86-64 target machine: " << error;

  llvm::SmallString<128> objectPath;
  int objectFd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-kernels", "o", objectFd, objectPath))
    return emitError(loc) << "cannot create a temporary object file: "
                          << ec.message();
  llvm::FileRemover removeObject(objectPath);
  {
    llvm::raw_fd_ostream object(objectFd, /*shouldClose=*/true);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, object, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return emitError(loc) << "the x86-64 target cannot emit objects";
    codegen.run(module);
    object.flush();
    if (object.has_error())
      return emitError(loc) << "cannot write " << objectPath;
  }

  // libm as a DT_NEEDED entry: the kernels call expf, logf, tanhf, ...
  std::string output = outputPath.str();
  std::string libmDir = std::string("-L") + KILN_LIBM_DIR;
  llvm::SmallVector<llvm::StringRef> args = {
      linker,      "-shared", "--hash-style=gnu", "-z", "noexecstack",
      "-z",        "now",     "-o",               output, objectPath,
      libmDir,     "--as-needed", "-l:libm.so.6"};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0)
    return emitError(loc) << "linking " << outputPath << " with " << linker
                          << " failed"
                          << (message.empty() ? "" : ": " + message);
  return success();
}

LogicalResult kiln::buildKernelsSharedObject(ModuleOp kernelModule,
                                             llvm::StringRef outputPath,
                                             const HostTargetOptions &options) {
  llvm::LLVMContext context;
  FailureOr<std::unique_ptr<llvm::Module>> module =
      buildHostLLVMModule(kernelModule, context, options);
  if (failed(module))
    return failure();
  return linkSharedObject(**module, outputPath, options, kernelModule.getLoc());
}
