//===- HostObjectEmitter.cpp - LLVM IR to an x86-64 kernels.so ------------===//
//
// Part of Kiln. Translates the lowered kernels to LLVM IR, optimizes them
// at -O2 with loop and SLP vectorization and without unrolling (LLVM's
// PassBuilder), emits
// objects with the X86 target machine (floating-point contraction off: no
// FMA forms that the reference interpreter does not compute), and links
// them with ld.lld-22 into a shared object that needs only libc and libm.
//
// Kernels do not call each other, so the module is split into a fixed
// number of parts (llvm::SplitModule, round robin), each optimized and
// compiled in its own LLVMContext on its own thread: every core works, and
// since the parts do not depend on the core count, neither does kernels.so.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Files.h"
#include "kiln/Support/PassVerification.h"
#include "kiln/Target/Host/HostTarget.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace mlir;

#ifndef KILN_LD_LLD
#define KILN_LD_LLD ""
#endif
#ifndef KILN_LIBM_DIR
#define KILN_LIBM_DIR ""
#endif

static constexpr llvm::StringLiteral kHostTriple = "x86_64-unknown-linux-gnu";
/// The parts code generation splits the kernels into: fixed, so that the
/// objects, and kernels.so, are the same on every machine; enough to keep
/// 8 cores busy.
static constexpr unsigned kCodegenParts = 8;

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

/// -O2 with loop and SLP vectorization, without unrolling. The kernels'
/// elementwise loops arrive vectorized (VectorizeElementwiseLoops.h), and
/// -O3's unrolling and unswitching made them no faster: the GPT example's
/// kernels took 0.997x the time at -O2 (medians of 5 interleaved
/// `kiln train --profile` runs), while GPT-2 small's code generation took
/// 30% less. The GPU emulator's kernels, whose loops over a warp's 32
/// lanes -O3 would copy 32 times, need it too.
static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = false;
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
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  passes.run(module, modules);
}

/// The kernels of `kernelModule` as LLVM IR for `machine`, not optimized;
/// the lowering's passes and the translation timed under `timing`.
static FailureOr<std::unique_ptr<llvm::Module>>
translateKernels(ModuleOp kernelModule, llvm::LLVMContext &context,
                 llvm::TargetMachine &machine, TimingScope &timing) {
  // The kernels alone: entries are the plan, not code (and in a large
  // model, most of the module), and the model's module attributes
  // (graph.*, kernel.*) have no meaning in LLVM IR.
  OwningOpRef<ModuleOp> lowered = ModuleOp::create(kernelModule.getLoc());
  OpBuilder builder = OpBuilder::atBlockEnd(lowered->getBody());
  for (Operation &op : *kernelModule.getBody())
    if (!isa<kiln::kernel::EntryOp>(op))
      builder.clone(op);
  for (NamedAttribute attr : kernelModule->getAttrs())
    if (!attr.getName().getValue().contains('.'))
      lowered->getOperation()->setAttr(attr.getName(), attr.getValue());

  {
    TimingScope lowering = timing.nest("lower to the LLVM dialect");
    PassManager pm(kernelModule.getContext());
    pm.enableTiming(lowering);
    pm.addPass(kiln::createConvertKernelToHostLLVM());
    if (failed(kiln::runVerifyingOnce(pm, *lowered)))
      return failure();
  }

  TimingScope translating = timing.nest("translate to LLVM IR");
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(*lowered, context, "kernels");
  if (!module)
    return kernelModule.emitError("cannot translate the kernels to LLVM IR");
  module->setTargetTriple(machine.getTargetTriple());
  module->setDataLayout(machine.createDataLayout());
  for (llvm::Function &function : *module)
    if (!function.isDeclaration()) {
      function.addFnAttr("target-cpu", machine.getTargetCPU());
      if (!machine.getTargetFeatureString().empty())
        function.addFnAttr("target-features", machine.getTargetFeatureString());
    }
  return module;
}

FailureOr<std::unique_ptr<llvm::Module>>
kiln::buildHostLLVMModule(ModuleOp kernelModule, llvm::LLVMContext &context,
                          const HostTargetOptions &options) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine)
    return kernelModule.emitError("no x86-64 target machine: ") << error;
  TimingScope none;
  FailureOr<std::unique_ptr<llvm::Module>> module =
      translateKernels(kernelModule, context, *machine, none);
  if (failed(module))
    return failure();
  optimize(**module, *machine);
  return module;
}

/// Emits `module` as an object into `object`; false if the target cannot.
static bool emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                       llvm::raw_pwrite_stream &object) {
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, object, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return false;
  codegen.run(module);
  return true;
}

/// A temporary object file, removed when this is destroyed.
struct TemporaryObject {
  llvm::SmallString<128> path;
  int fd = -1;
  std::unique_ptr<llvm::FileRemover> remover;
};

static LogicalResult createTemporaryObject(TemporaryObject &object,
                                           Location loc) {
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-kernels", "o", object.fd, object.path))
    return emitError(loc) << "cannot create a temporary object file: "
                          << ec.message();
  object.remover = std::make_unique<llvm::FileRemover>(object.path);
  return success();
}

/// Links `objects` into the shared object `outputPath`. The linker writes
/// into the system temporary directory, beside the objects, and the result
/// is then written to `outputPath` with checked writes: lld maps its output,
/// and a mapped file on a full disk kills it with SIGBUS (even with
/// --no-mmap-output-file), where a write reports ENOSPC.
static LogicalResult linkObjects(llvm::ArrayRef<TemporaryObject> objects,
                                 llvm::StringRef outputPath, Location loc,
                                 std::string &bytes) {
  llvm::StringRef linker = KILN_LD_LLD;
  if (linker.empty() || !llvm::sys::fs::can_execute(linker))
    return emitError(loc) << "cannot link kernels.so: ld.lld-22 was not found "
                             "when Kiln was configured (install lld-22 and "
                             "re-run cmake)";
  TemporaryObject linked, diagnostics;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-kernels", "so", linked.fd, linked.path))
    return emitError(loc) << "cannot create a temporary file: " << ec.message();
  linked.remover = std::make_unique<llvm::FileRemover>(linked.path);
  ::close(linked.fd);
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-lld", "txt", diagnostics.fd, diagnostics.path))
    return emitError(loc) << "cannot create a temporary file: " << ec.message();
  diagnostics.remover = std::make_unique<llvm::FileRemover>(diagnostics.path);
  ::close(diagnostics.fd);

  // libm as a DT_NEEDED entry: the kernels call expf, logf, tanhf, ...
  std::string output = linked.path.str().str();
  std::string libmDir = std::string("-L") + KILN_LIBM_DIR;
  llvm::SmallVector<llvm::StringRef> args = {
      linker, "-shared", "--hash-style=gnu", "-z", "noexecstack", "-z", "now",
      "-o",   output};
  for (const TemporaryObject &object : objects)
    args.push_back(object.path);
  args.append({libmDir, "--as-needed", "-l:libm.so.6"});
  // The linker's messages are ours to report: a crash's stack dump and
  // bug-report banner are no help to a user whose disk is full.
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(diagnostics.path),
      llvm::StringRef(diagnostics.path)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, redirects,
                                         0, 0, &message);
  if (status != 0) {
    std::string said;
    (void)kiln::readWholeFile(diagnostics.path.str().str(), said);
    llvm::StringRef firstLine = llvm::StringRef(said).split('\n').first;
    InFlightDiagnostic error = emitError(loc) << "linking kernels.so with "
                                              << linker << " failed";
    if (status < 0) {
      // Killed by a signal: most often SIGBUS, writing on a full disk.
      llvm::SmallString<128> directory(linked.path);
      llvm::sys::path::remove_filename(directory);
      llvm::ErrorOr<llvm::sys::fs::space_info> space =
          llvm::sys::fs::disk_space(directory);
      error << " (" << message << ")";
      if (space)
        error << "; " << directory << " has " << space->available
              << " bytes free: is the disk full?";
    } else if (!firstLine.empty()) {
      error << ": " << firstLine;
    }
    return error;
  }
  if (kiln::Status read = kiln::readWholeFile(output, bytes); !read.isOk())
    return emitError(loc) << read.message();
  if (kiln::Status written = kiln::writeFileAtomically(
          outputPath.str(), bytes.data(), bytes.size());
      !written.isOk())
    return emitError(loc) << "cannot write kernels.so: " << written.message();
  return success();
}

/// A module defining the compiler-rt builtin that x86 code generation calls
/// to round f32 to bf16 where it legalizes bf16 vector code by promotion
/// (seen on shuffles of bf16 vectors): __truncsfbf2, round to nearest even,
/// a NaN kept quiet with its sign -- what the kernels' own inline
/// conversions (arith-expand-ops) compute. Debian's libgcc (GCC 12) has no
/// such function, and kernels.so links only libc and libm, so it is defined
/// here, hidden, and linked into every kernels.so.
static std::unique_ptr<llvm::Module>
buildBFloat16Support(llvm::LLVMContext &context,
                     const llvm::TargetMachine &machine) {
  auto module = std::make_unique<llvm::Module>("kiln-bf16-support", context);
  module->setTargetTriple(machine.getTargetTriple());
  module->setDataLayout(machine.createDataLayout());
  llvm::Type *f32 = llvm::Type::getFloatTy(context);
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getBFloatTy(context), {f32}, false);
  llvm::Function *function = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, "__truncsfbf2", *module);
  function->setVisibility(llvm::GlobalValue::HiddenVisibility);
  function->addFnAttr("target-cpu", machine.getTargetCPU());
  if (!machine.getTargetFeatureString().empty())
    function->addFnAttr("target-features", machine.getTargetFeatureString());
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  llvm::Value *x = function->getArg(0);
  llvm::Value *bits = b.CreateBitCast(x, i32);
  llvm::Value *high = b.CreateLShr(bits, 16);
  // Nearest, ties to even: add 0x7fff plus the kept part's lowest bit.
  llvm::Value *bias = b.CreateAdd(b.getInt32(0x7fff), b.CreateAnd(high, 1));
  llvm::Value *rounded = b.CreateLShr(b.CreateAdd(bits, bias), 16);
  llvm::Value *quietNaN = b.CreateOr(high, 0x40);
  llvm::Value *isNaN = b.CreateFCmpUNO(x, x);
  llvm::Value *result =
      b.CreateTrunc(b.CreateSelect(isNaN, quietNaN, rounded), b.getInt16Ty());
  b.CreateRet(b.CreateBitCast(result, llvm::Type::getBFloatTy(context)));
  return module;
}

LogicalResult kiln::buildKernelsSharedObject(ModuleOp kernelModule,
                                             llvm::StringRef outputPath,
                                             const HostTargetOptions &options,
                                             TimingScope *timing,
                                             std::string *written) {
  TimingScope none;
  TimingScope &parent = timing ? *timing : none;
  Location loc = kernelModule.getLoc();
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(options, error);
  if (!machine)
    return emitError(loc) << "no x86-64 target machine: " << error;

  // Lowered and translated once, then split: each part is written as
  // bitcode, so that its thread reads it into an LLVMContext of its own.
  std::vector<llvm::SmallString<0>> parts;
  {
    TimingScope translating = parent.nest("lower to LLVM IR and split");
    llvm::LLVMContext context;
    FailureOr<std::unique_ptr<llvm::Module>> module =
        translateKernels(kernelModule, context, *machine, translating);
    if (failed(module))
      return failure();
    unsigned kernels = 0;
    for (llvm::Function &function : **module)
      kernels += !function.isDeclaration();
    llvm::SplitModule(
        **module, std::clamp(kernels, 1u, kCodegenParts),
        [&](std::unique_ptr<llvm::Module> part) {
          llvm::SmallString<0> &bitcode = parts.emplace_back();
          llvm::raw_svector_ostream os(bitcode);
          llvm::WriteBitcodeToFile(*part, os);
        },
        /*PreserveLocals=*/false, /*RoundRobin=*/true);
    llvm::SmallString<0> &support = parts.emplace_back();
    llvm::raw_svector_ostream os(support);
    llvm::WriteBitcodeToFile(*buildBFloat16Support(context, *machine), os);
  }

  std::vector<TemporaryObject> objects(parts.size());
  for (TemporaryObject &object : objects)
    if (failed(createTemporaryObject(object, loc)))
      return failure();
  std::vector<std::string> errors(parts.size());
  {
    TimingScope compiling = parent.nest("optimize (-O2) and emit objects");
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < parts.size(); i = next++) {
        llvm::LLVMContext context;
        llvm::Expected<std::unique_ptr<llvm::Module>> part =
            llvm::parseBitcodeFile(
                llvm::MemoryBufferRef(parts[i].str(), "kernels"), context);
        if (!part) {
          errors[i] = llvm::toString(part.takeError());
          continue;
        }
        std::string machineError;
        std::unique_ptr<llvm::TargetMachine> partMachine =
            createTargetMachine(options, machineError);
        if (!partMachine) {
          errors[i] = "no x86-64 target machine: " + machineError;
          continue;
        }
        optimize(**part, *partMachine);
        llvm::raw_fd_ostream stream(objects[i].fd, /*shouldClose=*/true);
        if (!emitObject(**part, *partMachine, stream))
          errors[i] = "the x86-64 target cannot emit objects";
        stream.flush();
        if (stream.has_error()) {
          errors[i] = "cannot write " + objects[i].path.str().str();
          stream.clear_error();
        }
      }
    };
    unsigned threads = std::clamp<unsigned>(std::thread::hardware_concurrency(),
                                            1, parts.size());
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t)
      workers.emplace_back(work);
    work();
    for (std::thread &worker : workers)
      worker.join();
  }
  for (const std::string &message : errors)
    if (!message.empty())
      return emitError(loc) << "compiling the kernels: " << message;
  TimingScope linking = parent.nest("link kernels.so");
  std::string bytes;
  if (failed(linkObjects(objects, outputPath, loc, bytes)))
    return failure();
  if (written)
    *written = std::move(bytes);
  return success();
}
